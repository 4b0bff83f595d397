//! Queues' backlog, for the queues this process delivers (on a node, the
//! queues it owns on the ring: `queues/runner.rs` sets them; a queue's
//! series move with it from node to node, so a sum over the nodes counts
//! each message once).
//!
//! A queue has series only for the first [`QUEUES`] queues this process
//! delivered; later ones have none, so the labels stay bounded whatever
//! tenants make.

use isolane_storage::{QueueDepth, QueueScope};
use isolane_telemetry::Metric;
use prometheus::{IntCounterVec, IntGaugeVec, Registry};

use super::named::Named;

/// Queues with series, at most.
pub const QUEUES: usize = 100;

pub const BACKLOG: Metric = Metric::new(
    "isolane_node_queue_backlog_messages",
    "Messages held in each queue this node delivers (ready, delayed or in a batch under way), by Kubernetes namespace and queue (the first 100 this node delivered).",
    &["namespace", "queue"],
);

pub const OLDEST_AGE: Metric = Metric::new(
    "isolane_node_queue_oldest_message_age_seconds",
    "Age of the oldest message held in each queue this node delivers (0 when it holds none), by Kubernetes namespace and queue (the first 100 this node delivered).",
    &["namespace", "queue"],
);

pub const WAKEUPS: Metric = Metric::new(
    "isolane_node_queue_wakeups_total",
    "Times a queue delivery loop of this node was woken before its next look, by source: notify (another node's send, told by PostgreSQL), local (this process's send or retry).",
    &["source"],
);

/// Where a wake-up of a queue's delivery loop came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeSource {
    /// Another process's send (PostgreSQL's `NOTIFY`).
    Notify,
    /// This process's send or retry.
    Local,
}

/// The node's queue gauges.
#[derive(Debug)]
pub struct QueueMetrics {
    backlog: IntGaugeVec,
    oldest_age: IntGaugeVec,
    wakeups: IntCounterVec,
    named: Named<QueueScope>,
}

impl QueueMetrics {
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        Ok(Self {
            backlog: BACKLOG.gauge_vec(registry)?,
            oldest_age: OLDEST_AGE.gauge_vec(registry)?,
            wakeups: WAKEUPS.counter_vec(registry)?,
            named: Named::new(QUEUES),
        })
    }

    /// Counts a wake-up of a delivery loop from `source`.
    pub fn woken(&self, source: WakeSource) {
        let source = match source {
            WakeSource::Notify => "notify",
            WakeSource::Local => "local",
        };
        self.wakeups.with_label_values(&[source]).inc();
    }

    /// Whether `scope` has series (it is given them when there is room).
    pub fn admit(&self, scope: &QueueScope) -> bool {
        self.named.admit(scope)
    }

    /// Sets `scope`'s series from what it holds at `now_ms`, when it has
    /// series.
    pub fn set(&self, scope: &QueueScope, depth: QueueDepth, now_ms: i64) {
        if !self.named.admit(scope) {
            return;
        }
        let labels = [scope.namespace.as_str(), scope.queue.as_str()];
        self.backlog
            .with_label_values(&labels)
            .set(i64::try_from(depth.messages).unwrap_or(i64::MAX));
        let age = depth
            .oldest_ms
            .map_or(0, |sent| now_ms.saturating_sub(sent).max(0) / 1000);
        self.oldest_age.with_label_values(&labels).set(age);
    }

    /// Drops `scope`'s series (this process no longer delivers it).
    pub fn forget(&self, scope: &QueueScope) {
        if self.named.forget(scope) {
            let labels = [scope.namespace.as_str(), scope.queue.as_str()];
            // Absent when never set: nothing to drop.
            let _ = self.backlog.remove_label_values(&labels);
            let _ = self.oldest_age.remove_label_values(&labels);
        }
    }

    /// The queues with series now.
    pub fn named(&self) -> Vec<QueueScope> {
        self.named.all()
    }
}
