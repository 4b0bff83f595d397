//! The controller's watches, and what each event triggers.
//!
//! - Workers in every namespace (the main stream). Each event first updates the
//!   reflector store, then the [`WorkerIndex`] (references and route claims),
//!   then — only when generation, finalizers or deletion changed, so status
//!   writes do not loop — reconciles the Worker. Workers whose route ownership
//!   the event may have changed are reconciled too ([`Watches::route_changes`]),
//!   and the host-owner recorder (`owners.rs`) is told the claims changed.
//! - ConfigMaps and Secrets in every namespace, metadata only: an event
//!   reconciles exactly the Workers the index says read that object
//!   ([`readers_of`]).
//! - Bundle Secrets in the operator namespace (metadata, kept in a store): a
//!   bundle changed or deleted by someone else is rewritten (its owner is
//!   reconciled); the controller's own writes ([`OwnWrites`]) are dropped. The
//!   store also lets a reconcile skip re-applying a bundle that is current.
//! - Runtime-node Leases are watched by [`crate::membership`]; the controller
//!   reconciles every Worker when the schedulable node set changes.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt, channel::mpsc};
use isolane_crds::Worker;
use isolane_worker::BUNDLE_LABEL;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ObjectMeta, PartialObjectMeta};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::bundle::OwnWrites;
use crate::index::{ReferenceKey, ReferenceKind, WorkerIndex};
use crate::lock;
use crate::routes::WorkerKey;

/// A stream of objects whose event triggers a reconcile.
pub type Triggers<K> = BoxStream<'static, Result<K, watcher::Error>>;

/// The watches of one controller run, not yet polled.
pub struct Watches {
    /// Workers, as the reconcile reads them.
    pub workers: Store<Worker>,
    /// Workers whose spec, finalizers or deletion changed.
    pub worker_triggers: Triggers<Worker>,
    /// Workers whose route ownership another Worker's event may have changed.
    pub route_changes: mpsc::UnboundedReceiver<ObjectRef<Worker>>,
    /// ConfigMaps (metadata) that changed.
    pub config_maps: Triggers<PartialObjectMeta<ConfigMap>>,
    /// Secrets (metadata) that changed.
    pub secrets: Triggers<PartialObjectMeta<Secret>>,
    /// Bundle Secrets (metadata), as the reconcile reads them.
    pub bundles: Store<PartialObjectMeta<Secret>>,
    /// Bundle Secrets changed or deleted by someone else.
    pub bundle_triggers: Triggers<PartialObjectMeta<Secret>>,
    /// The bundles this controller wrote.
    pub own_writes: OwnWrites,
    config_maps_synced: watch::Receiver<bool>,
    secrets_synced: watch::Receiver<bool>,
}

/// Workers: store, then index, then (filtered) reconcile triggers; and the
/// Workers whose route ownership another Worker's event may have changed.
fn worker_watch(
    client: &Client,
    index: Arc<Mutex<WorkerIndex>>,
    claims_changed: Arc<Notify>,
) -> (
    Store<Worker>,
    Triggers<Worker>,
    mpsc::UnboundedReceiver<ObjectRef<Worker>>,
) {
    let (workers, workers_writer) = reflector::store::<Worker>();
    let (wake, route_changes) = mpsc::unbounded::<ObjectRef<Worker>>();
    let triggers = watcher(
        Api::<Worker>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer("workers"))
    .reflect(workers_writer)
    .inspect_ok(move |event| {
        let others = lock(&index).apply_event(event);
        // The host-owner recorder decides again (`owners.rs`).
        claims_changed.notify_one();
        for other in others {
            // The receiver lives as long as the controller; a send error only
            // happens while shutting down.
            let _ = wake.unbounded_send(object_ref(&other));
        }
    })
    .touched_objects()
    .predicate_filter(reconcile_trigger, Default::default())
    .boxed();
    (workers, triggers, route_changes)
}

/// Bundle Secrets in the operator namespace, metadata kept in a store.
/// Our own writes (`own`) come back as events; those are dropped (the Worker
/// was just reconciled), while changes by others and deletions re-reconcile
/// it.
fn bundle_watch(
    client: &Client,
    namespace: &str,
    own: OwnWrites,
) -> (
    Store<PartialObjectMeta<Secret>>,
    Triggers<PartialObjectMeta<Secret>>,
) {
    let (bundles, bundles_writer) = reflector::store::<PartialObjectMeta<Secret>>();
    let triggers = watcher(
        Api::<PartialObjectMeta<Secret>>::namespaced(client.clone(), namespace),
        watcher::Config::default().labels(&format!("{BUNDLE_LABEL}=true")),
    )
    .default_backoff()
    .inspect(observer("bundles"))
    .reflect(bundles_writer)
    .filter_map(move |event| {
        let trigger = match event {
            Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret)) => {
                (!own.is_own(&secret.metadata)).then_some(Ok(secret))
            }
            Ok(watcher::Event::Delete(secret)) => Some(Ok(secret)),
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(error) => Some(Err(error)),
        };
        futures::future::ready(trigger)
    })
    .boxed();
    (bundles, triggers)
}

impl Watches {
    /// The watches through `client`: bundles in `namespace`, the rest in
    /// every namespace; Worker events update `index`.
    pub fn new(
        client: &Client,
        namespace: &str,
        index: Arc<Mutex<WorkerIndex>>,
        claims_changed: Arc<Notify>,
    ) -> Self {
        let (workers, worker_triggers, route_changes) = worker_watch(client, index, claims_changed);
        // Referenced ConfigMaps and Secrets, metadata only.
        let (config_maps, config_maps_synced) = metadata_triggers::<ConfigMap>(client);
        let (secrets, secrets_synced) = metadata_triggers::<Secret>(client);
        let own_writes = OwnWrites::default();
        let (bundles, bundle_triggers) = bundle_watch(client, namespace, own_writes.clone());

        Self {
            workers,
            worker_triggers,
            route_changes,
            config_maps,
            secrets,
            bundles,
            bundle_triggers,
            own_writes,
            config_maps_synced,
            secrets_synced,
        }
    }

    /// A future that resolves once every watch has listed its objects, with
    /// `true` (or `false` when a store's writer went away first). The
    /// streams must be polled meanwhile.
    pub fn synced(&self) -> impl Future<Output = bool> + Send + 'static {
        let workers = self.workers.clone();
        let bundles = self.bundles.clone();
        let mut config_maps = self.config_maps_synced.clone();
        let mut secrets = self.secrets_synced.clone();
        async move {
            let (workers_ready, bundles_ready, _, _) = futures::join!(
                workers.wait_until_ready(),
                bundles.wait_until_ready(),
                async { config_maps.wait_for(|synced| *synced).await.is_ok() },
                async { secrets.wait_for(|synced| *synced).await.is_ok() },
            );
            let synced = workers_ready.is_ok() && bundles_ready.is_ok();
            if synced {
                info!(workers = workers.len(), "controller caches synced");
            }
            synced
        }
    }
}

/// Metadata-only triggers for every `K` in the cluster, and whether they
/// have listed once.
fn metadata_triggers<K>(client: &Client) -> (Triggers<PartialObjectMeta<K>>, watch::Receiver<bool>)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    K: serde::de::DeserializeOwned,
    PartialObjectMeta<K>: kube::Resource<DynamicType = ()>,
{
    let (synced_tx, synced) = watch::channel(false);
    let triggers = watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer(K::plural(&()).into_owned()))
    .inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) {
            synced_tx.send_replace(true);
        }
    })
    .touched_objects()
    .boxed();
    (triggers, synced)
}

/// What a watch's events say about the watch itself, logged under `watch`:
/// each failure (the controller only ever saw them at debug level) and how
/// long its first list took. The watcher lists or watches again after kube's
/// backoff (0.8 s doubling to 30 s, jittered); a failed list does not double
/// it (the `Init` event before each list resets it: measured, a list failing
/// every time is retried every 0.9–1.6 s), failed watch starts do. A list
/// the apiserver refuses for now is retried by the client first
/// ([`crate::client`]).
fn observer<K>(
    watch: impl Into<String>,
) -> impl FnMut(&Result<watcher::Event<K>, watcher::Error>) + Send + 'static {
    let watch = watch.into();
    let started = std::time::Instant::now();
    let mut failures = 0_u32;
    let mut listed = false;
    move |event| match event {
        Err(error) => {
            failures += 1;
            warn!(%watch, %error, failures, "watch failed; retrying after a backoff");
        }
        Ok(watcher::Event::InitDone) if !listed => {
            listed = true;
            info!(%watch, failures, took_ms = started.elapsed().as_millis(), "watch listed");
        }
        Ok(_) => {}
    }
}

/// The part of a Worker whose change needs a reconcile: generation (spec),
/// finalizers and deletion. Status and label updates pass without one.
pub fn reconcile_trigger(worker: &Worker) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    worker.metadata.generation.hash(&mut hasher);
    worker.metadata.finalizers.hash(&mut hasher);
    worker
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// The Workers `index` says read the ConfigMap or Secret `metadata` names.
pub fn readers_of(
    index: &Mutex<WorkerIndex>,
    kind: ReferenceKind,
    metadata: &ObjectMeta,
) -> Vec<ObjectRef<Worker>> {
    let (Some(namespace), Some(name)) = (&metadata.namespace, &metadata.name) else {
        return Vec::new();
    };
    let reference = ReferenceKey {
        kind,
        namespace: namespace.clone(),
        name: name.clone(),
    };
    lock(index)
        .readers(&reference)
        .iter()
        .map(object_ref)
        .collect()
}

pub(crate) fn object_ref(key: &WorkerKey) -> ObjectRef<Worker> {
    ObjectRef::new(&key.name).within(&key.namespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FINALIZER, fixtures};

    #[test]
    fn status_updates_do_not_trigger_a_reconcile() {
        let mut worker = fixtures::worker("ns", "w", 1, fixtures::spec(Some("x"), &[]));
        let before = reconcile_trigger(&worker);
        worker.status = Some(isolane_crds::WorkerStatus::default());
        assert_eq!(reconcile_trigger(&worker), before);
        worker.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
        assert_ne!(reconcile_trigger(&worker), before);
    }
}
