//! Cloudflare Queues' delivery in `isolane dev` (and, later, on a node):
//! the [`QueueRunner`] (`queues/runner.rs`) over the engine's store, for the queues the
//! Workers this process holds consume (`spec.queueConsumers`), each batch
//! run on the thread its consumer's requests run on.
//!
//! On a cluster a queue must be delivered by one owner on the ring, fenced
//! like a Durable Object's; that is not built yet, so a node does not start
//! this loop (docs/queues.md).

use std::sync::Arc;

mod outcome;
mod runner;

use isolane_engine::{Engine, WorkerBundle};
use tokio::task::JoinHandle;

use crate::BundleIndex;
pub use outcome::{QueueOutcome, Verdict};
pub use runner::{QueueConsumerOf, QueueHost, QueueRunner};

/// The Workers this process holds, each with the thread its requests run on.
struct HeldConsumers {
    bundles: Arc<BundleIndex>,
    threads: u32,
}

impl QueueHost for HeldConsumers {
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
            .collect()
    }

    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        let bundle = self.bundles.get(worker_id, "")?;
        let thread = isolane_placement::thread_for(worker_id, self.threads);
        Some((bundle, thread as usize))
    }
}

/// Starts delivering the queues every Worker in `bundles` consumes
/// (`isolane dev`), when the engine has a store; abort the handle to stop.
pub fn spawn_queues(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
    let host = Arc::new(HeldConsumers { bundles, threads });
    let runner = QueueRunner::new(engine.clone(), store, host);
    Some(tokio::spawn(runner.run()))
}
