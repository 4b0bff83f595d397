//! The Worker controller: kube-rs's `Controller` over Workers in every
//! namespace, fed by [`crate::watches`] and [`crate::membership`], running
//! [`crate::reconcile`] with its error policy.
//!
//! [`run`] starts the host-owner watch first (no decision without the
//! recorded owners, `owners.rs`), then the runtime-node watch (reconciles
//! should see the node set from the start), then the other watches and the
//! controller; readiness turns true once every watch has listed, and then
//! the host-owner recorder starts.

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use isolane_crds::Worker;
use isolane_placement::NodeSet;
use isolane_telemetry::ReadyHandle;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::PartialObjectMeta;
use kube::runtime::Controller;
use kube::runtime::controller;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};
use tokio::sync::{Notify, watch};
use tracing::{debug, info, warn};

use crate::artifact::ArtifactChecker;
use crate::bundle::bundle_owner;
use crate::config::Config;
use crate::executor::Executor;
use crate::index::{ReferenceKind, WorkerIndex};
use crate::membership;
use crate::metrics::Metrics;
use crate::owners;
use crate::plan::Settings;
use crate::reconcile::{Context, error_policy, reconcile};
use crate::watches::{Watches, readers_of};

/// Runs the controller until `shutdown` resolves (in-flight reconciles finish)
/// or the returned future is dropped (they are aborted: leadership was lost).
/// `ready` turns true once every watch has listed its objects.
pub async fn run(
    client: Client,
    config: &Config,
    metrics: Arc<Metrics>,
    ready: ReadyHandle,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    ready.set(false);
    let index = Arc::new(Mutex::new(WorkerIndex::with_reservations(
        config.reserved_hosts.clone(),
    )));

    // Recorded host owners before any Worker: a decision without them could
    // hand a redeploying namespace's host to another (`owners.rs`).
    let mut owners = owners::for_controller(
        &client,
        &config.namespace,
        config.host_release_grace,
        &index,
    );
    let owners_watch = owners.watch;
    tokio::pin!(owners_watch);
    tokio::select! {
        () = &mut owners_watch => return,
        _ = owners.synced.wait_for(|synced| *synced) => {}
    }

    // Runtime nodes first: reconciles should see the node set from the start.
    let mut nodes = nodes(&client, config);
    let membership = nodes.watch;
    tokio::pin!(membership);
    tokio::select! {
        () = &mut membership => return,
        () = &mut owners_watch => return,
        _ = nodes.synced.wait_for(|synced| *synced) => {}
    }

    let claims_changed = Arc::new(Notify::new());
    let watches = Watches::new(
        &client,
        &config.namespace,
        Arc::clone(&index),
        Arc::clone(&claims_changed),
    );
    let synced = watches.synced();
    let (caches_synced_tx, caches_synced) = watch::channel(false);
    let artifacts = match ArtifactChecker::new(
        config.plain_http_registries.clone(),
        config.bundle_registries.clone(),
        config.registry_ca.clone(),
    ) {
        Ok(artifacts) => Arc::new(artifacts),
        Err(error) => {
            warn!(%error, "cannot make the registry client for bundles");
            return;
        }
    };
    let context = context(
        client,
        config,
        Arc::clone(&index),
        &watches,
        nodes.set,
        metrics,
        caches_synced,
        artifacts,
    );
    let triggers = Triggers {
        owner_changes: owners.changes,
        nodes_changed: nodes.changed,
    };
    let controller = controller(
        watches,
        index,
        triggers,
        config.concurrency,
        shutdown,
        context,
    );
    // Host owners are recorded only from a complete view of the claims.
    let (recorder, wake) = (owners.recorder, owners.wake);
    let synced = async {
        if synced.await {
            caches_synced_tx.send_replace(true);
            ready.set(true);
            recorder
                .run(claims_changed, move |keys| wake.workers(keys))
                .await;
        }
        futures::future::pending::<()>().await;
    };

    info!(namespace = %config.namespace, "controller started");
    tokio::select! {
        () = controller => info!("controller stopped"),
        () = membership => warn!("membership watch ended"),
        () = owners_watch => warn!("host-owner watch ended"),
        () = synced => {}
    }
}

/// The runtime-node watch and what it publishes.
struct Nodes<W> {
    watch: W,
    /// The current node set.
    set: watch::Receiver<Arc<NodeSet>>,
    /// True once the first list is in.
    synced: watch::Receiver<bool>,
    /// A message on each change of the set.
    changed: mpsc::UnboundedReceiver<()>,
}

fn nodes(client: &Client, config: &Config) -> Nodes<impl Future<Output = ()> + use<>> {
    let (nodes_tx, set) = watch::channel(Arc::new(NodeSet::new(Vec::new())));
    let (synced_tx, synced) = watch::channel(false);
    let (changed_tx, changed) = mpsc::unbounded::<()>();
    let watch = membership::watch(
        Api::namespaced(client.clone(), &config.namespace),
        config.membership_interval,
        nodes_tx,
        changed_tx,
        synced_tx,
    );
    Nodes {
        watch,
        set,
        synced,
        changed,
    }
}

/// What every reconcile shares: the API, the operator's settings, the
/// index, the bundle cache, the node set, the executor of its writes and
/// the bundle checker.
#[allow(clippy::too_many_arguments)]
fn context(
    client: Client,
    config: &Config,
    index: Arc<Mutex<WorkerIndex>>,
    watches: &Watches,
    nodes: watch::Receiver<Arc<NodeSet>>,
    metrics: Arc<Metrics>,
    caches_synced: watch::Receiver<bool>,
    artifacts: Arc<ArtifactChecker>,
) -> Arc<Context> {
    let executor = Executor::new(
        client.clone(),
        config.namespace.clone(),
        watches.own_writes.clone(),
        metrics,
    );
    let settings = Settings {
        namespace: config.namespace.clone(),
        missing_reference_retry: config.missing_reference_retry,
        resync: config.resync,
    };
    let store = config.storage.as_ref().and_then(|settings| {
        isolane_storage::Store::postgres(settings)
            .inspect_err(|error| {
                warn!(%error, "cannot use the durable store: deleted Workers' alarms stay in it");
            })
            .ok()
    });
    Arc::new(
        Context::new(
            client,
            settings,
            index,
            watches.bundles.clone(),
            nodes,
            executor,
            caches_synced,
            artifacts,
        )
        .with_store(store),
    )
}

/// What else wakes reconciles, besides the watches.
struct Triggers {
    /// Workers whose hosts' recorded owners changed.
    owner_changes: mpsc::UnboundedReceiver<ObjectRef<Worker>>,
    /// The node set changed: every Worker.
    nodes_changed: mpsc::UnboundedReceiver<()>,
}

/// kube's controller over the watches' streams: Workers, the ConfigMaps and
/// Secrets they read, their bundles, route and owner changes, node changes.
fn controller(
    watches: Watches,
    index: Arc<Mutex<WorkerIndex>>,
    triggers: Triggers,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    context: Arc<Context>,
) -> impl Future<Output = ()> {
    let config_map_index = Arc::clone(&index);
    let secret_index = index;
    Controller::for_stream(watches.worker_triggers, watches.workers)
        .with_config(controller::Config::default().concurrency(concurrency))
        .watches_stream(
            watches.config_maps,
            move |object: PartialObjectMeta<ConfigMap>| {
                readers_of(
                    &config_map_index,
                    ReferenceKind::ConfigMap,
                    &object.metadata,
                )
            },
        )
        .watches_stream(watches.secrets, move |object: PartialObjectMeta<Secret>| {
            readers_of(&secret_index, ReferenceKind::Secret, &object.metadata)
        })
        .watches_stream(
            watches.bundle_triggers,
            |object: PartialObjectMeta<Secret>| bundle_owner(&object.metadata),
        )
        .reconcile_on(watches.route_changes)
        .reconcile_on(triggers.owner_changes)
        .reconcile_all_on(triggers.nodes_changed)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                debug!(%error, "controller event");
            }
        })
}
