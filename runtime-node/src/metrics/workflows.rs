//! Workflows' instances by status, for the workflows this node owns on the
//! ring (`workflows.rs` sets them; a workflow's series move with it from
//! node to node, so a sum over the nodes counts each instance once).
//!
//! A workflow has series only for the first [`WORKFLOWS`] workflows this
//! node owned; later ones have none, so the labels stay
//! bounded whatever tenants make.

use isolane_storage::{WorkflowCounts, WorkflowScope};
use isolane_telemetry::Metric;
use prometheus::{IntGaugeVec, Registry};

use super::named::Named;

/// Workflows with series, at most.
pub const WORKFLOWS: usize = 100;

pub const INSTANCES: Metric = Metric::new(
    "isolane_node_workflow_instances",
    "Instances of the workflows this node owns, by Kubernetes namespace, workflow (the first 100 this node owned) and status (queued, running, waiting, paused, errored, complete, terminated).",
    &["namespace", "workflow", "status"],
);

/// The node's workflow gauges.
#[derive(Debug)]
pub struct WorkflowMetrics {
    instances: IntGaugeVec,
    /// The workflows with series.
    named: Named<WorkflowScope>,
}

impl WorkflowMetrics {
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        Ok(Self {
            instances: INSTANCES.gauge_vec(registry)?,
            named: Named::new(WORKFLOWS),
        })
    }

    /// Sets `counts`' series (when its workflow has series).
    pub fn set(&self, counts: &WorkflowCounts) {
        let scope = &counts.scope;
        if !self.named.admit(scope) {
            return;
        }
        for (status, n) in counts.by_status() {
            let labels = [scope.namespace.as_str(), scope.workflow.as_str(), status];
            self.instances
                .with_label_values(&labels)
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Drops `scope`'s series (this node no longer owns it).
    pub fn forget(&self, scope: &WorkflowScope) {
        if self.named.forget(scope) {
            for (status, _) in WorkflowCounts::default().by_status() {
                let labels = [scope.namespace.as_str(), scope.workflow.as_str(), status];
                // Absent when never set: nothing to drop.
                let _ = self.instances.remove_label_values(&labels);
            }
        }
    }

    /// The workflows with series now.
    pub fn named(&self) -> Vec<WorkflowScope> {
        self.named.all()
    }
}
