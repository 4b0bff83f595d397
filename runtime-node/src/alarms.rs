//! Durable Object alarms on a node (and in `isolane dev`): the engine's
//! `AlarmRunner` over the engine's store, for the Workers the node holds.
//! The engine runs each alarm on its object's home thread (whatever thread
//! is named here), where the object's one instance in the process lives
//! and its calls from every thread go (`isolane_engine::home_thread`).
//!
//! On a node, an object's alarm is delivered only by the object's owner
//! node (`peers.rs`: the first node of the object's key on the ring of the
//! live, non-draining nodes, from the node Leases), the node its calls go
//! to. Several nodes on one database each run the loop; the store's claims
//! give each due alarm to one process at a time (`isolane_storage::alarm`),
//! and an alarm a node claimed but does not own is given back at once for
//! its owner. When a node dies, the ring moves its objects and their
//! alarms together; a stale owner's delivery is fenced like its writes
//! (its instance's epoch).

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{AlarmHost, AlarmRunner, Engine, WorkerBundle};
use k8s_openapi::api::coordination::v1::Lease;
use tokio::task::JoinHandle;

use crate::BundleIndex;
use crate::peers::{Peers, RingWatch};

/// Which process delivers an object's alarms (and a queue's batches,
/// `queues.rs`).
#[derive(Clone)]
pub(crate) enum Owner {
    /// This one, for every object (`isolane dev`: the only process).
    Alone,
    /// The object's owner node (none before the first list of Leases).
    Ring(Peers),
}

/// The Workers a node holds, each with the thread its requests run on.
pub(crate) struct HeldWorkers {
    pub(crate) bundles: Arc<BundleIndex>,
    threads: u32,
    pub(crate) owner: Owner,
}

impl HeldWorkers {
    pub(crate) fn new(engine: &Engine, bundles: Arc<BundleIndex>, owner: Owner) -> Self {
        let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
        Self {
            bundles,
            threads,
            owner,
        }
    }

    /// Worker `worker_id`'s bundle and the thread its requests run on.
    pub(crate) fn held(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        let bundle = self.bundles.get(worker_id, "")?;
        let thread = isolane_placement::thread_for(worker_id, self.threads);
        Some((bundle, thread as usize))
    }

    /// Whether this process delivers for placement key `key` now.
    pub(crate) fn owns_key(&self, key: &str) -> bool {
        match &self.owner {
            Owner::Alone => true,
            Owner::Ring(peers) => peers.knows_ring() && peers.owner_of(key).is_none(),
        }
    }
}

impl AlarmHost for HeldWorkers {
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        self.held(worker_id)
    }

    fn owns(&self, key: &str) -> bool {
        self.owns_key(key)
    }
}

/// Starts delivering alarms for every Worker in `bundles` (`isolane dev`),
/// when the engine has a store; abort the handle to stop.
pub fn spawn_alarms(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    spawn(engine, bundles, Owner::Alone)
}

/// Starts delivering alarms for the objects `peers` names this node the
/// owner of, feeding `peers` the node Leases in `leases`, when the engine
/// has a store.
pub(crate) fn spawn_node_alarms(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    leases: kube::Api<Lease>,
    peers: &Peers,
) -> Option<(JoinHandle<()>, JoinHandle<()>)> {
    engine.config().store.as_ref()?;
    let watch = tokio::spawn(isolane_membership::watch::watch(
        leases,
        Duration::from_secs(5),
        RingWatch::new(peers.clone(), engine.config().store.clone()),
    ));
    let runner = spawn(engine, bundles, Owner::Ring(peers.clone()))?;
    Some((runner, watch))
}

fn spawn(engine: &Engine, bundles: Arc<BundleIndex>, owner: Owner) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let host = Arc::new(HeldWorkers::new(engine, bundles, owner));
    let runner = AlarmRunner::new(engine.clone(), store, host);
    Some(tokio::spawn(runner.run()))
}
