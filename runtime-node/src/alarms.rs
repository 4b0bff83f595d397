//! Durable Object alarms on a node (and in `isolane dev`): the engine's
//! `AlarmRunner` over the engine's store, for the Workers the node holds.
//! Each alarm runs on the thread the router sends its Worker's requests to
//! (`isolane_placement::thread_for`, as the router's fleet computes it), so
//! it reaches the isolate, and the object instance, its requests reach.
//!
//! Several nodes on one database each run this loop; the store's claims
//! give each due alarm to one of them at a time (see
//! `isolane_storage::alarm`). A node holding a claim that dies delays the
//! alarm by the claim's length; another node then delivers it.

use std::sync::Arc;

use isolane_engine::{AlarmHost, AlarmRunner, Engine, WorkerBundle};
use tokio::task::JoinHandle;

use crate::BundleIndex;

/// The Workers a node holds, each with the thread its requests run on.
struct HeldWorkers {
    bundles: Arc<BundleIndex>,
    threads: u32,
}

impl AlarmHost for HeldWorkers {
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        let bundle = self.bundles.get(worker_id, "")?;
        let thread = isolane_placement::thread_for(worker_id, self.threads);
        Some((bundle, thread as usize))
    }
}

/// Starts delivering alarms for the Workers in `bundles`, when the engine
/// has a store; abort the handle to stop.
pub fn spawn_alarms(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
    let host = Arc::new(HeldWorkers { bundles, threads });
    let runner = AlarmRunner::new(engine.clone(), store, host);
    Some(tokio::spawn(runner.run()))
}
