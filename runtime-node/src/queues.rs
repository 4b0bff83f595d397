//! Cloudflare Queues' delivery on a node and in `isolane dev`: the
//! [`QueueRunner`] (`queues/runner.rs`) over the engine's store, for the
//! queues the Workers this process holds consume (`spec.queueConsumers`),
//! each batch run on the thread its consumer's requests run on.
//!
//! On a node, a queue (one shard: the whole queue) is delivered only by its
//! owner node: the first node of its key ([`queue_key`]) on the ring of the
//! live, non-draining nodes, the ring Durable Objects and their alarms are
//! owned on (`peers.rs`, `alarms.rs`). Before delivering, the owner takes
//! the queue's owner epoch in the store (`Store::queue_take`) and fences
//! each lease with it, so a node that lost the queue starts no batch of it
//! once the new owner took it. Every node holds every Worker's bundle (it
//! watches all bundle Secrets), so the owner runs the consumer itself.

use std::sync::Arc;

mod outcome;
mod runner;

use isolane_engine::{Engine, WorkerBundle};
use isolane_storage::QueueScope;
use tokio::task::JoinHandle;

use crate::BundleIndex;
use crate::alarms::{HeldWorkers, Owner};
use crate::metrics::QueueMetrics;
use crate::peers::Peers;
pub use outcome::{QueueOutcome, Verdict};
pub(crate) use runner::now_ms;
pub use runner::{QueueConsumerOf, QueueHost, QueueRunner};

/// The placement key queue `scope` is owned by on the ring.
pub fn queue_key(scope: &QueueScope) -> String {
    format!("queue/{}/{}", scope.namespace, scope.queue)
}

impl QueueHost for HeldWorkers {
    fn consumers(&self) -> Vec<QueueConsumerOf> {
        self.bundles
            .worker_ids()
            .into_iter()
            .filter_map(|id| self.bundles.get(&id, ""))
            .flat_map(|bundle| {
                bundle
                    .queue_consumers
                    .iter()
                    .map(|consumer| QueueConsumerOf {
                        worker_id: bundle.id.clone(),
                        consumer: consumer.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|of| self.owns_key(&queue_key(&of.scope())))
            .collect()
    }

    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        self.held(worker_id)
    }

    fn taker(&self) -> Option<String> {
        match &self.owner {
            Owner::Alone => None,
            Owner::Ring(peers) => Some(peers.me().to_owned()),
        }
    }
}

/// Starts delivering the queues every Worker in `bundles` consumes
/// (`isolane dev`), when the engine has a store, their backlog in
/// `metrics`; abort the handle to stop.
pub fn spawn_queues(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    metrics: Arc<QueueMetrics>,
) -> Option<JoinHandle<()>> {
    spawn(engine, bundles, Owner::Alone, metrics)
}

/// Starts delivering the queues `peers` names this node the owner of
/// (the ring `alarms::spawn_node_alarms` feeds), when the engine has a
/// store, their backlog in `metrics`.
pub(crate) fn spawn_node_queues(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    peers: &Peers,
    metrics: Arc<QueueMetrics>,
) -> Option<JoinHandle<()>> {
    spawn(engine, bundles, Owner::Ring(peers.clone()), metrics)
}

fn spawn(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    owner: Owner,
    metrics: Arc<QueueMetrics>,
) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let host = Arc::new(HeldWorkers::new(engine, bundles, owner));
    let runner = QueueRunner::new(engine.clone(), store, host).with_metrics(metrics);
    Some(tokio::spawn(runner.run()))
}
