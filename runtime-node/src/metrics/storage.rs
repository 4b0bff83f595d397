//! Storage per Kubernetes namespace: the store's operations and the bytes
//! they carried (`isolane_storage::StoreObserver`), counted by namespace.
//!
//! A namespace is a label value only for the first [`NAMESPACES`]
//! namespaces this node has seen use storage; later ones count under
//! `other`, so the label stays bounded whatever tenants make.

use std::collections::HashSet;
use std::sync::Mutex;

use isolane_storage::{StoreData, StoreObserver, StoreOp, StoreRefusal};
use isolane_telemetry::Metric;
use prometheus::{IntCounterVec, Registry};

/// Namespaces with series of their own, at most.
pub const NAMESPACES: usize = 100;

/// The label value of the namespaces past [`NAMESPACES`].
const OTHER: &str = "other";

pub const OPERATIONS: Metric = Metric::new(
    "isolane_node_storage_operations_total",
    "Store operations that went through, by Kubernetes namespace (the first 100 this node saw; later ones as other), data (kv, object) and op (read, write, list).",
    &["namespace", "data", "op"],
);

pub const BYTES: Metric = Metric::new(
    "isolane_node_storage_bytes_total",
    "Bytes of keys, values and metadata those operations read or wrote, by Kubernetes namespace (as the operations), data and op.",
    &["namespace", "data", "op"],
);

pub const REFUSALS: Metric = Metric::new(
    "isolane_node_storage_refusals_total",
    "Store operations a limit refused, by Kubernetes namespace (as the operations), data (kv, object) and reason (quota, object_limit, operations).",
    &["namespace", "data", "reason"],
);

/// The node's storage counters, told by the store.
#[derive(Debug)]
pub struct StorageMetrics {
    operations: IntCounterVec,
    bytes: IntCounterVec,
    refusals: IntCounterVec,
    /// The namespaces with series of their own.
    named: Mutex<HashSet<String>>,
}

impl StorageMetrics {
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        Ok(Self {
            operations: OPERATIONS.counter_vec(registry)?,
            bytes: BYTES.counter_vec(registry)?,
            refusals: REFUSALS.counter_vec(registry)?,
            named: Mutex::new(HashSet::new()),
        })
    }

    /// `namespace`'s label value.
    fn label<'a>(&self, namespace: &'a str) -> &'a str {
        let Ok(mut named) = self.named.lock() else {
            return OTHER;
        };
        if named.contains(namespace) {
            return namespace;
        }
        if named.len() < NAMESPACES {
            named.insert(namespace.to_owned());
            return namespace;
        }
        OTHER
    }
}

impl StoreObserver for StorageMetrics {
    fn operation(&self, namespace: &str, data: StoreData, op: StoreOp, bytes: u64) {
        let labels = [self.label(namespace), data.as_str(), op.as_str()];
        self.operations.with_label_values(&labels).inc();
        self.bytes.with_label_values(&labels).inc_by(bytes);
    }

    fn refused(&self, namespace: &str, data: StoreData, reason: StoreRefusal) {
        let labels = [self.label(namespace), data.as_str(), reason.as_str()];
        self.refusals.with_label_values(&labels).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_past_the_bound_count_as_other() {
        let registry = Registry::new();
        let metrics = StorageMetrics::register(&registry).unwrap();
        for i in 0..NAMESPACES {
            metrics.operation(&format!("ns-{i}"), StoreData::Kv, StoreOp::Read, 1);
        }
        metrics.operation("late", StoreData::Object, StoreOp::Write, 10);
        metrics.operation("late", StoreData::Object, StoreOp::Write, 5);
        metrics.operation("ns-0", StoreData::Kv, StoreOp::Read, 2);
        let ops = |ns: &str, data: &str, op: &str| {
            metrics.operations.with_label_values(&[ns, data, op]).get()
        };
        let bytes =
            |ns: &str, data: &str, op: &str| metrics.bytes.with_label_values(&[ns, data, op]).get();
        assert_eq!(
            (ops("ns-0", "kv", "read"), bytes("ns-0", "kv", "read")),
            (2, 3)
        );
        assert_eq!(
            (
                ops("other", "object", "write"),
                bytes("other", "object", "write")
            ),
            (2, 15)
        );
        assert_eq!(ops("late", "object", "write"), 0, "no series of its own");
        metrics.refused("ns-1", StoreData::Object, StoreRefusal::Operations);
        metrics.refused("late", StoreData::Kv, StoreRefusal::Quota);
        let refused = |ns: &str, data: &str, reason: &str| {
            metrics
                .refusals
                .with_label_values(&[ns, data, reason])
                .get()
        };
        assert_eq!(refused("ns-1", "object", "operations"), 1);
        assert_eq!(refused("other", "kv", "quota"), 1);
    }
}
