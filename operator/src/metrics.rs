//! The operator's Prometheus metrics, registered into the registry `main` makes.
//!
//! Labels are bounded: `result` is one of [`Outcome`]'s names, `kind` an
//! [`Error::kind`](crate::Error::kind), `condition` and `status` the three
//! condition types and their three values.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use isolane_crds::{ConditionStatus, ConditionType};
use isolane_telemetry::Metric;
use prometheus::{Histogram, IntCounterVec, IntGauge, IntGaugeVec, Registry};

use crate::routes::WorkerKey;

/// Reconcile durations: 10 ms to 60 s.
pub const RECONCILE_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How a reconcile ended, the `result` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The bundle is written and the Worker is Ready.
    Ready,
    /// The Worker is not Ready (missing reference, syntax error, every route lost).
    NotReady,
    /// The Worker was being deleted and its bundle is gone.
    Deleted,
    /// Nothing to do yet (the finalizer was just added; the next event applies).
    Pending,
    /// The reconcile failed and will be retried.
    Error,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::NotReady => "not_ready",
            Self::Deleted => "deleted",
            Self::Pending => "pending",
            Self::Error => "error",
        }
    }
}

const RECONCILES: Metric = Metric::new(
    "isolane_operator_reconciles_total",
    "Worker reconciles, by result.",
    &["result"],
);
const RECONCILE_ERRORS: Metric = Metric::new(
    "isolane_operator_reconcile_errors_total",
    "Failed Worker reconciles, by error kind.",
    &["kind"],
);
const RECONCILE_DURATION: Metric = Metric::new(
    "isolane_operator_reconcile_duration_seconds",
    "Time taken by one Worker reconcile.",
    &[],
);
const WORKERS: Metric = Metric::new(
    "isolane_operator_workers",
    "Workers reconciled by this operator, by condition and status.",
    &["condition", "status"],
);
const LEADER: Metric = Metric::new(
    "isolane_operator_leader",
    "1 while this replica holds the leader Lease and runs the controller.",
    &[],
);

const WATCH_LISTS: Metric = Metric::new(
    "isolane_operator_watch_lists_total",
    "Complete lists of each of the controller's watches: one at start, then one per relist after a watch failed or expired (not per leadership change).",
    &["watch"],
);

/// The watches `isolane_operator_watch_lists_total` counts, its `watch` label.
pub const WATCHES: [&str; 5] = ["workers", "configmaps", "secrets", "bundles", "host_owners"];

/// Every metric of the operator (docs/metrics.md lists each).
pub const ALL: &[Metric] = &[
    RECONCILES,
    RECONCILE_ERRORS,
    RECONCILE_DURATION,
    WORKERS,
    LEADER,
    WATCH_LISTS,
];

/// The operator's metrics.
#[derive(Debug)]
pub struct Metrics {
    reconciles: IntCounterVec,
    reconcile_errors: IntCounterVec,
    reconcile_duration: Histogram,
    workers: IntGaugeVec,
    leader: IntGauge,
    watch_lists: IntCounterVec,
    conditions: Mutex<HashMap<WorkerKey, [ConditionStatus; ConditionType::COUNT]>>,
}

impl Metrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let reconciles = RECONCILES.counter_vec(registry)?;
        let reconcile_errors = RECONCILE_ERRORS.counter_vec(registry)?;
        let reconcile_duration = RECONCILE_DURATION.histogram(registry, &RECONCILE_BUCKETS)?;
        let workers = WORKERS.gauge_vec(registry)?;
        let leader = LEADER.gauge(registry)?;
        let watch_lists = WATCH_LISTS.counter_vec(registry)?;
        for watch in WATCHES {
            watch_lists.with_label_values(&[watch]);
        }
        for outcome in [
            Outcome::Ready,
            Outcome::NotReady,
            Outcome::Deleted,
            Outcome::Pending,
            Outcome::Error,
        ] {
            reconciles.with_label_values(&[outcome.as_str()]);
        }
        for condition in ConditionType::ALL {
            for status in [
                ConditionStatus::True,
                ConditionStatus::False,
                ConditionStatus::Unknown,
            ] {
                workers.with_label_values(&[condition.as_str(), status.as_str()]);
            }
        }
        Ok(Self {
            reconciles,
            reconcile_errors,
            reconcile_duration,
            workers,
            leader,
            watch_lists,
            conditions: Mutex::new(HashMap::new()),
        })
    }

    /// Records one reconcile.
    pub fn reconciled(&self, outcome: Outcome, error_kind: Option<&'static str>, took: Duration) {
        self.reconciles.with_label_values(&[outcome.as_str()]).inc();
        if let Some(kind) = error_kind {
            self.reconcile_errors.with_label_values(&[kind]).inc();
        }
        self.reconcile_duration.observe(took.as_secs_f64());
    }

    /// Records the condition statuses of a Worker (in [`ConditionType::ALL`] order).
    pub fn set_conditions(
        &self,
        worker: &WorkerKey,
        statuses: [ConditionStatus; ConditionType::COUNT],
    ) {
        let mut conditions = self
            .conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = conditions.insert(worker.clone(), statuses);
        self.shift(previous, Some(statuses));
    }

    /// Forgets a deleted Worker.
    pub fn forget(&self, worker: &WorkerKey) {
        let mut conditions = self
            .conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = conditions.remove(worker);
        self.shift(previous, None);
    }

    /// Forgets every Worker (on losing leadership: another replica reports them).
    pub fn forget_all(&self) {
        let mut conditions = self
            .conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (_, previous) in conditions.drain() {
            self.shift(Some(previous), None);
        }
    }

    /// Counts a complete list of `watch` (one of [`WATCHES`]).
    pub fn listed(&self, watch: &str) {
        self.watch_lists.with_label_values(&[watch]).inc();
    }

    /// Sets the leader gauge.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    fn shift(
        &self,
        from: Option<[ConditionStatus; ConditionType::COUNT]>,
        to: Option<[ConditionStatus; ConditionType::COUNT]>,
    ) {
        if from == to {
            return;
        }
        for (i, condition) in ConditionType::ALL.iter().enumerate() {
            if let Some(from) = from {
                self.workers
                    .with_label_values(&[condition.as_str(), from[i].as_str()])
                    .dec();
            }
            if let Some(to) = to {
                self.workers
                    .with_label_values(&[condition.as_str(), to[i].as_str()])
                    .inc();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{Encoder, TextEncoder};

    use super::*;

    /// The table is what registers, and docs/metrics.md lists all of it.
    #[test]
    fn the_table_registers_and_is_documented() {
        let registry = Registry::new();
        let _metrics = Metrics::register(&registry).unwrap();
        assert_eq!(isolane_telemetry::unregistered(ALL, &registry), [""; 0]);
        let docs = include_str!("../../docs/metrics.md");
        assert_eq!(isolane_telemetry::undocumented(ALL, docs), [""; 0]);
    }

    fn gauge(metrics: &Metrics, condition: &str, status: &str) -> i64 {
        metrics
            .workers
            .with_label_values(&[condition, status])
            .get()
    }

    #[test]
    fn worker_gauges_follow_condition_changes() {
        let registry = Registry::new();
        let metrics = Metrics::register(&registry).unwrap();
        let a = WorkerKey::new("ns", "a");
        use ConditionStatus::{False, True, Unknown};
        metrics.set_conditions(&a, [False, Unknown, True, False]);
        metrics.set_conditions(&WorkerKey::new("ns", "b"), [True; 4]);
        assert_eq!(gauge(&metrics, "Ready", "False"), 1);
        assert_eq!(gauge(&metrics, "Ready", "True"), 1);
        assert_eq!(gauge(&metrics, "ServicesBound", "False"), 1);
        metrics.set_conditions(&a, [True; 4]);
        assert_eq!(gauge(&metrics, "ServicesBound", "False"), 0);
        assert_eq!(gauge(&metrics, "ServicesBound", "True"), 2);
        assert_eq!(gauge(&metrics, "Ready", "False"), 0);
        assert_eq!(gauge(&metrics, "Ready", "True"), 2);
        metrics.forget(&a);
        assert_eq!(gauge(&metrics, "Ready", "True"), 1);
        metrics.forget_all();
        assert_eq!(gauge(&metrics, "RoutesAdmitted", "True"), 0);
        metrics.reconciled(
            Outcome::Error,
            Some("apply_bundle"),
            Duration::from_millis(20),
        );
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("isolane_operator_reconciles_total{result=\"error\"} 1"));
        assert!(
            text.contains("isolane_operator_reconcile_duration_seconds_bucket{le=\"0.025\"} 1")
        );
        assert!(text.contains("isolane_operator_leader 0"));
    }
}
