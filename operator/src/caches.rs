//! The controller's caches, kept by every replica from its start, leading or
//! standing by.
//!
//! [`Caches::start`] runs every watch a reconcile reads from: the recorded
//! host owners first (no decision without them, `owners.rs`), then the
//! runtime-node Leases (reconciles see the node set from the start), then
//! Workers, the ConfigMaps and Secrets they read, bundles and Namespaces
//! (`watches.rs`). Their events update the stores and the [`WorkerIndex`]
//! whether or not this replica leads, and send the Workers they touch to
//! [`Triggers`]: the running controller's queue, or nowhere. So a controller
//! starts over caches that are listed and current: a standby takes over,
//! and a leader that stepped down leads again, without listing anything.
//!
//! Before, each controller start listed every cache, seconds each on a slow
//! apiserver, and a leader that kept stepping down under such an apiserver
//! spent its terms listing: a restarted operator in CI synced only ~59 s
//! after its start (docs/operator.md, "Leader election").

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use futures::future::ready;
use isolane_crds::Worker;
use isolane_placement::NodeSet;
use isolane_telemetry::ReadyHandle;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::Store;
use kube::{Api, Client};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::bundle::OwnWrites;
use crate::config::Config;
use crate::index::WorkerIndex;
use crate::metrics::Metrics;
use crate::triggers::Triggers;
use crate::watches::{Sinks, Watches};
use crate::{membership, owners};

/// The caches, filled by watches that run until this value is dropped.
#[derive(Debug)]
pub struct Caches {
    /// The index, the claims signal, the triggers and the own writes the
    /// watches share.
    pub sinks: Sinks,
    /// Workers of the installation's class in every namespace.
    pub workers: Store<Worker>,
    /// Bundle Secrets (metadata) in the operator's namespace.
    pub bundles: Store<PartialObjectMeta<Secret>>,
    /// Namespaces (metadata): their dispatch consent labels.
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// The schedulable runtime nodes.
    pub nodes: watch::Receiver<Arc<NodeSet>>,
    /// True once every watch has listed.
    pub synced: watch::Receiver<bool>,
    /// Cancelled when a watch ended: the caches no longer follow the API.
    pub ended: CancellationToken,
    task: JoinHandle<()>,
}

impl Drop for Caches {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Caches {
    /// Starts every watch through `client` (module docs).
    pub fn start(client: &Client, config: &Config, metrics: &Arc<Metrics>) -> Self {
        let sinks = Sinks {
            index: Arc::new(Mutex::new(
                WorkerIndex::with_reservations(config.reserved_hosts.clone())
                    .serving(config.worker_class.clone()),
            )),
            claims_changed: Arc::new(Notify::new()),
            triggers: Triggers::default(),
            own_writes: OwnWrites::default(),
            metrics: Arc::clone(metrics),
        };
        let (nodes_tx, nodes) = watch::channel(Arc::new(NodeSet::new(Vec::new())));
        let (synced_tx, synced) = watch::channel(false);
        let watches = Watches::new(client, &config.namespace, &sinks);
        let (workers, bundles) = (watches.workers.clone(), watches.bundles.clone());
        let namespaces = watches.namespaces.clone();
        let ended = CancellationToken::new();
        let running = Running {
            client: client.clone(),
            namespace: config.namespace.clone(),
            membership_interval: config.membership_interval,
            nodes: nodes_tx,
            synced: synced_tx,
        };
        let task = tokio::spawn(running.run(watches, sinks.clone(), ended.clone()));
        Self {
            sinks,
            workers,
            bundles,
            namespaces,
            nodes,
            synced,
            ended,
            task,
        }
    }

    /// Sets `ready` once every watch has listed.
    pub fn report_ready(&self, ready: ReadyHandle) {
        let mut synced = self.synced.clone();
        tokio::spawn(async move {
            if synced.wait_for(|synced| *synced).await.is_ok() {
                ready.set(true);
            }
        });
    }
}

/// What the watches' task needs besides the watches.
struct Running {
    client: Client,
    namespace: String,
    membership_interval: std::time::Duration,
    nodes: watch::Sender<Arc<NodeSet>>,
    synced: watch::Sender<bool>,
}

impl Running {
    /// Runs the watches in order (module docs) until one ends; then
    /// cancels `ended`.
    async fn run(self, watches: Watches, sinks: Sinks, ended: CancellationToken) {
        let _ended = ended.drop_guard();
        let (owners, mut owners_synced) = host_owners(&self.client, &self.namespace, &sinks);
        tokio::pin!(owners);
        tokio::select! {
            () = &mut owners => {
                warn!("host-owner watch ended");
                return;
            }
            _ = owners_synced.wait_for(|synced| *synced) => {}
        }

        let (changed_tx, changed) = mpsc::unbounded::<()>();
        let (nodes_synced_tx, mut nodes_synced) = watch::channel(false);
        let membership = membership::watch(
            Api::namespaced(self.client.clone(), &self.namespace),
            self.membership_interval,
            self.nodes,
            changed_tx,
            nodes_synced_tx,
        );
        tokio::pin!(membership);
        tokio::select! {
            () = &mut membership => {
                warn!("membership watch ended");
                return;
            }
            () = &mut owners => {
                warn!("host-owner watch ended");
                return;
            }
            _ = nodes_synced.wait_for(|synced| *synced) => {}
        }

        // Every Worker is placed again when the node set changes.
        let (triggers, workers) = (sinks.triggers.clone(), watches.workers.clone());
        let placements = changed.for_each(move |()| {
            triggers.every(&workers);
            ready(())
        });
        let mark_synced = mark_synced(watches.synced(), self.synced);
        info!(namespace = %self.namespace, "caches started");
        tokio::select! {
            () = watches.run => warn!("watches ended"),
            () = membership => warn!("membership watch ended"),
            () = owners => warn!("host-owner watch ended"),
            () = placements => warn!("membership changes ended"),
            () = mark_synced => {}
        }
    }
}

/// The host-owner records' watch into the index (`owners.rs`), and whether
/// it has listed.
fn host_owners(
    client: &Client,
    namespace: &str,
    sinks: &Sinks,
) -> (impl Future<Output = ()> + use<>, watch::Receiver<bool>) {
    let (synced_tx, synced) = watch::channel(false);
    let (triggers, metrics) = (sinks.triggers.clone(), Arc::clone(&sinks.metrics));
    let watch = owners::watch(
        Api::namespaced(client.clone(), namespace),
        Arc::clone(&sinks.index),
        move |keys| triggers.workers(keys),
        move || metrics.listed("host_owners"),
        synced_tx,
    );
    (watch, synced)
}

/// Sets `synced` once `listed` says every watch has listed; then pends.
async fn mark_synced(listed: impl Future<Output = bool>, synced: watch::Sender<bool>) {
    if listed.await {
        synced.send_replace(true);
    }
    futures::future::pending::<()>().await;
}
