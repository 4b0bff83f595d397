//! The node's Lease: written with `isolane_membership::node_lease` by
//! server-side apply (create or update in one call), renewed every third of
//! its duration, rewritten at once with `draining=true` when the node starts
//! to drain, and deleted as the node leaves. After a crash of the node's
//! previous process, every write carries its crash record (`crash.rs`).

use std::sync::Arc;
use std::time::Duration;

use isolane_membership::{CrashRecord, node_lease, with_crash};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use tokio_util::sync::CancellationToken;

use crate::metrics::NodeMetrics;

/// The field manager of the node's Lease writes.
pub const FIELD_MANAGER: &str = "isolane-node";

/// Writes one node's Lease.
#[derive(Clone)]
pub struct Heartbeat {
    api: Api<Lease>,
    name: String,
    namespace: String,
    endpoints: Vec<String>,
    threads: u32,
    duration: Duration,
    metrics: Arc<NodeMetrics>,
    /// The previous process's crash record, on every write of this one.
    crash: Option<CrashRecord>,
}

impl std::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("endpoints", &self.endpoints)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

// === impl Heartbeat ===

impl Heartbeat {
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        endpoints: Vec<String>,
        threads: u32,
        duration: Duration,
        metrics: Arc<NodeMetrics>,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            endpoints,
            threads,
            duration,
            metrics,
            crash: None,
        }
    }

    /// Publishes `crash` (the previous process's) with every write.
    pub fn with_crash(mut self, crash: Option<CrashRecord>) -> Self {
        self.crash = crash;
        self
    }

    /// Creates or renews the Lease, stamped now.
    pub async fn write(&self, draining: bool) -> Result<(), kube::Error> {
        let lease = node_lease(
            &self.name,
            &self.namespace,
            &self.endpoints,
            self.threads,
            draining,
            self.duration,
            Timestamp::now(),
        );
        let lease = match &self.crash {
            Some(crash) => with_crash(lease, crash),
            None => lease,
        };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let result = self
            .api
            .patch(&self.name, &params, &Patch::Apply(&lease))
            .await
            .map(drop);
        self.metrics.lease_renewal(result.is_ok());
        if let Err(error) = &result {
            tracing::warn!(node = %self.name, draining, %error, "lease write failed");
        }
        result
    }

    /// Renews the Lease every third of its duration until `stop`; a failed
    /// renewal is retried at the next tick (a few failures in a row are
    /// survivable: the Lease lives for three ticks).
    pub async fn renew(&self, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.duration / 3);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate: the caller has just written the Lease.
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {
                    let _ = self.write(false).await;
                }
            }
        }
    }

    /// Deletes the Lease (already gone is fine).
    pub async fn delete(&self) -> Result<(), kube::Error> {
        match self.api.delete(&self.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => {
                tracing::warn!(node = %self.name, %error, "lease delete failed");
                Err(error)
            }
        }
    }
}
