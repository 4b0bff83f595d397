//! Durable Object alarms on a node (and in `isolane dev`): the engine's
//! `AlarmRunner` over the engine's store, for the Workers the node holds.
//! The engine runs each alarm on its object's home thread (whatever thread
//! is named here), where the object's one instance in the process lives
//! and its calls from every thread go (`isolane_engine::home_thread`).
//!
//! Every node holds every bundle of its namespace, so on a node an alarm
//! is delivered only by the Worker's first node on the ring over the live,
//! non-draining nodes (the node Leases, watched as the router watches
//! them): the node a single-replica Worker's requests go to. Several
//! nodes on one database each run the loop; the store's claims give each
//! due alarm to one process at a time (`isolane_storage::alarm`), and an
//! alarm a node claimed but does not own is given back at once for its
//! owner.
//! When a node dies, the ring moves its Workers and their alarms together.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use isolane_engine::{AlarmHost, AlarmRunner, Engine, WorkerBundle};
use isolane_membership::{Members, MembershipObserver};
use isolane_placement::{Node, NodeSet};
use k8s_openapi::api::coordination::v1::Lease;
use tokio::task::JoinHandle;

use crate::BundleIndex;

/// Which process delivers a Worker's alarms.
enum Owner {
    /// This one, for every Worker (`isolane dev`: the only process).
    Alone,
    /// The node called `me`, for the Workers whose first node on the ring
    /// of `nodes` it is (none before the first list of Leases).
    Ring {
        me: String,
        nodes: Arc<ArcSwapOption<NodeSet>>,
    },
}

/// The Workers a node holds, each with the thread its requests run on.
struct HeldWorkers {
    bundles: Arc<BundleIndex>,
    threads: u32,
    owner: Owner,
}

impl AlarmHost for HeldWorkers {
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        if let Owner::Ring { me, nodes } = &self.owner {
            let nodes = nodes.load();
            let first = nodes.as_ref()?.place(worker_id, 1).into_iter().next()?;
            if first.node != *me {
                return None;
            }
        }
        let bundle = self.bundles.get(worker_id, "")?;
        let thread = isolane_placement::thread_for(worker_id, self.threads);
        Some((bundle, thread as usize))
    }
}

/// Keeps the ring of the live nodes.
struct Ring(Arc<ArcSwapOption<NodeSet>>);

impl MembershipObserver for Ring {
    fn members(&mut self, members: Members) {
        let nodes = members
            .live
            .into_iter()
            .filter(|m| m.threads > 0)
            .map(|m| Node::new(m.name, m.threads))
            .collect();
        self.0.store(Some(Arc::new(NodeSet::new(nodes))));
    }
}

/// Starts delivering alarms for every Worker in `bundles` (`isolane dev`),
/// when the engine has a store; abort the handle to stop.
pub fn spawn_alarms(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    spawn(engine, bundles, Owner::Alone)
}

/// Starts delivering alarms for the Workers whose first node is `me`, by
/// the node Leases in `leases`, when the engine has a store.
pub(crate) fn spawn_node_alarms(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    leases: kube::Api<Lease>,
    me: &str,
) -> Option<(JoinHandle<()>, JoinHandle<()>)> {
    engine.config().store.as_ref()?;
    let nodes = Arc::new(ArcSwapOption::empty());
    let watch = tokio::spawn(isolane_membership::watch::watch(
        leases,
        Duration::from_secs(5),
        Ring(Arc::clone(&nodes)),
    ));
    let owner = Owner::Ring {
        me: me.to_owned(),
        nodes,
    };
    let runner = spawn(engine, bundles, owner)?;
    Some((runner, watch))
}

fn spawn(engine: &Engine, bundles: Arc<BundleIndex>, owner: Owner) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
    let host = Arc::new(HeldWorkers {
        bundles,
        threads,
        owner,
    });
    let runner = AlarmRunner::new(engine.clone(), store, host);
    Some(tokio::spawn(runner.run()))
}
