//! What the store tells its owner of each operation that went through
//! ([`StoreObserver`], set with [`crate::Store::with_observer`]): the
//! runtime node counts them per Kubernetes namespace on its /metrics.

use std::fmt;
use std::sync::Arc;

/// Which data an operation touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreData {
    Kv,
    Object,
    /// A queue's messages (`queue.rs`).
    Queue,
}

impl StoreData {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kv => "kv",
            Self::Object => "object",
            Self::Queue => "queue",
        }
    }
}

/// What an operation did: a read (`get`), a write (`put`, `delete`, a
/// Durable Object's batch), a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    Read,
    Write,
    List,
}

impl StoreOp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::List => "list",
        }
    }
}

/// Why the store refused an operation of a namespace: one of its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreRefusal {
    /// The namespace's storage quota (`Store::with_namespace_quota`).
    Quota,
    /// One object's storage limit (`Store::with_object_quota`).
    ObjectLimit,
    /// The namespace's operations per second (`Store::with_namespace_ops`).
    Operations,
}

impl StoreRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quota => "quota",
            Self::ObjectLimit => "object_limit",
            Self::Operations => "operations",
        }
    }
}

/// Told of every store operation that went through (not of failed ones),
/// and of each one a limit refused, on the task that ran it: keep it cheap.
pub trait StoreObserver: Send + Sync + 'static {
    /// An operation of Kubernetes namespace `namespace` went through,
    /// carrying `bytes` of keys, values and metadata (read or written;
    /// a KV list counts its keys' names).
    fn operation(&self, namespace: &str, data: StoreData, op: StoreOp, bytes: u64);

    /// An operation of `namespace` was refused by one of its limits.
    fn refused(&self, namespace: &str, data: StoreData, reason: StoreRefusal) {
        let _ = (namespace, data, reason);
    }
}

/// The store's observer, when it has one.
#[derive(Clone, Default)]
pub(crate) struct Observer(Option<Arc<dyn StoreObserver>>);

impl Observer {
    pub(crate) fn new(observer: Arc<dyn StoreObserver>) -> Self {
        Self(Some(observer))
    }

    pub(crate) fn tell(&self, namespace: &str, data: StoreData, op: StoreOp, bytes: usize) {
        if let Some(observer) = &self.0 {
            observer.operation(namespace, data, op, bytes as u64);
        }
    }

    pub(crate) fn refused(&self, namespace: &str, data: StoreData, reason: StoreRefusal) {
        if let Some(observer) = &self.0 {
            observer.refused(namespace, data, reason);
        }
    }

    /// Tells of `error` when it is a limit's refusal.
    pub(crate) fn refused_by(&self, namespace: &str, data: StoreData, error: &crate::StoreError) {
        use crate::durable::ObjectError;
        use crate::{KvError, StoreError};
        let reason = match error {
            StoreError::Throttled { .. } => StoreRefusal::Operations,
            StoreError::Object(ObjectError::QuotaExceeded { .. })
            | StoreError::Kv(KvError::QuotaExceeded { .. })
            | StoreError::Queue(crate::queue_limits::QueueError::QuotaExceeded { .. }) => {
                StoreRefusal::Quota
            }
            StoreError::Object(ObjectError::ObjectFull { .. }) => StoreRefusal::ObjectLimit,
            _ => return,
        };
        self.refused(namespace, data, reason);
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Observer(set)"
        } else {
            "Observer(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{KvListOptions, KvScope, KvWrite, ObjectList, ObjectScope, ObjectWrite, Store};

    #[derive(Default)]
    struct Seen(Mutex<Vec<(String, StoreData, StoreOp, u64)>>);

    impl StoreObserver for Seen {
        fn operation(&self, namespace: &str, data: StoreData, op: StoreOp, bytes: u64) {
            self.0
                .lock()
                .unwrap()
                .push((namespace.to_owned(), data, op, bytes));
        }
    }

    #[tokio::test]
    async fn each_operation_that_goes_through_is_told_with_its_namespace_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Seen::default());
        let store = Store::sqlite(dir.path()).with_observer(seen.clone());
        let kv = KvScope::new("team-a", "cache");
        let write = KvWrite {
            key: "k".into(),
            value: b"12345".to_vec(),
            metadata: Some("{}".into()),
            expiration: None,
            expiration_ttl: None,
        };
        store.kv_put(kv.clone(), write).await.unwrap();
        store
            .kv_get(kv.clone(), "k".into(), None, |_| true)
            .await
            .unwrap();
        store
            .kv_list(kv.clone(), KvListOptions::default())
            .await
            .unwrap();
        store.kv_delete(kv.clone(), "k".into()).await.unwrap();
        // Refused (too long a key): not told.
        assert!(store.kv_delete(kv, "k".repeat(600)).await.is_err());
        let object = ObjectScope::new("team-b", "w/C", "1");
        let batch = ObjectWrite {
            delete_all: false,
            entries: vec![("n".into(), Some(b"42".to_vec()))],
            fence: None,
        };
        store.object_write(object.clone(), batch).await.unwrap();
        store
            .object_get(object.clone(), vec!["n".into()])
            .await
            .unwrap();
        store
            .object_list(object, ObjectList::default())
            .await
            .unwrap();
        let seen = seen.0.lock().unwrap().clone();
        let expected = [
            ("team-a", StoreData::Kv, StoreOp::Write, 8),
            ("team-a", StoreData::Kv, StoreOp::Read, 5),
            ("team-a", StoreData::Kv, StoreOp::List, 1),
            ("team-a", StoreData::Kv, StoreOp::Write, 1),
            ("team-b", StoreData::Object, StoreOp::Write, 3),
            ("team-b", StoreData::Object, StoreOp::Read, 2),
            ("team-b", StoreData::Object, StoreOp::List, 3),
        ]
        .map(|(ns, data, op, bytes)| (ns.to_owned(), data, op, bytes));
        assert_eq!(seen, expected);
    }
}
