//! The controller's watches, and what each event triggers. They run for as
//! long as the operator does, leading or not ([`crate::caches`]); what they
//! touch goes to [`Triggers`], the running controller's queue.
//!
//! - Workers in every namespace (the main stream), of this installation's
//!   class only ([`in_class`]: another class's Workers are another
//!   installation's, and never reach the store, the index or a reconcile).
//!   Each event first updates the reflector store, then the [`WorkerIndex`]
//!   (references and route claims), then — only when generation, finalizers
//!   or deletion changed, so status writes do not loop — reconciles the
//!   Worker. Workers whose route ownership the event may have changed are
//!   reconciled too, and the host-owner recorder (`owners.rs`) is told the
//!   claims changed.
//! - ConfigMaps and Secrets in every namespace, metadata only: an event
//!   reconciles exactly the Workers the index says read that object
//!   ([`readers_of`]).
//! - Bundle Secrets in the operator namespace (metadata, kept in a store): a
//!   bundle changed or deleted by someone else is rewritten (its owner is
//!   reconciled); the controller's own writes ([`OwnWrites`]) are dropped. The
//!   store also lets a reconcile skip re-applying a bundle that is current.
//! - Namespaces (metadata, kept in a store): their labels say which
//!   platform namespaces may dispatch into them (docs/dispatch.md); an
//!   event reconciles the Workers whose dispatch namespace bindings name
//!   that namespace ([`WorkerIndex::dispatching_into`]), so a label set or
//!   removed reaches their bundles (and the nodes) as a new revision.
//!   The same event records its labels in the index's tenant policies
//!   (`policy.rs`): when they changed and any policy exists, the
//!   namespace's Workers are reconciled too.
//! - TenantPolicies (kept in a store, copied into the index): an event
//!   reconciles every Worker (ceilings, defaults and quotas may change).
//!   [`Watches::synced`] waits for their first list, at most
//!   [`POLICY_LIST_WAIT`]: a cluster whose TenantPolicy CRD is missing
//!   (Helm installs CRDs but does not upgrade them) still gets a ready
//!   operator, whose watch retries and logs; past that wait, Workers are
//!   reconciled as if no policy existed until the list comes, which
//!   reconciles them all again (docs/policy.md).
//! - Runtime-node Leases are watched by [`crate::membership`]; every Worker
//!   is reconciled when the schedulable node set changes (`caches.rs`).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, ready};
use futures::{FutureExt, StreamExt, TryStreamExt};
use isolane_crds::{TenantPolicy, Worker, WorkerClass};
use isolane_worker::BUNDLE_LABEL;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ObjectMeta, PartialObjectMeta};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::bundle::{OwnWrites, bundle_owner};
use crate::index::{ReferenceKey, ReferenceKind, WorkerIndex};
use crate::lock;
use crate::metrics::Metrics;
use crate::triggers::{Triggers, object_ref};

/// The watches, not yet polled, and the stores they fill.
pub struct Watches {
    /// Workers, as the reconcile reads them.
    pub workers: Store<Worker>,
    /// Bundle Secrets (metadata), as the reconcile reads them.
    pub bundles: Store<PartialObjectMeta<Secret>>,
    /// Namespaces (metadata): their dispatch consent labels.
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// TenantPolicies (also copied into the index).
    pub policies: Store<TenantPolicy>,
    /// Every watch: poll it for as long as the stores are read.
    pub run: BoxFuture<'static, ()>,
    config_maps_synced: watch::Receiver<bool>,
    secrets_synced: watch::Receiver<bool>,
}

/// What the watches share: the client, what they update, where they send
/// the Workers to reconcile.
#[derive(Clone, Debug)]
pub struct Sinks {
    /// References and route claims, updated by each Worker event.
    pub index: Arc<Mutex<WorkerIndex>>,
    /// Notified when a Worker event may have changed the claims.
    pub claims_changed: Arc<Notify>,
    /// The running controller's queue.
    pub triggers: Triggers,
    /// The bundles the controller wrote (their events are dropped).
    pub own_writes: OwnWrites,
    /// Counts each complete list.
    pub metrics: Arc<Metrics>,
}

/// Workers: store, then index, then (filtered) reconciles; and the Workers
/// whose route ownership another Worker's event may have changed.
fn worker_watch(client: &Client, sinks: &Sinks) -> (Store<Worker>, BoxFuture<'static, ()>) {
    let (workers, workers_writer) = reflector::store::<Worker>();
    let (index, claims_changed) = (Arc::clone(&sinks.index), Arc::clone(&sinks.claims_changed));
    let (others, triggers) = (sinks.triggers.clone(), sinks.triggers.clone());
    let (class, known) = (lock(&sinks.index).class().clone(), workers.clone());
    let run = watcher(
        Api::<Worker>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer("workers", &sinks.metrics))
    .filter_map(move |event| {
        ready(
            event
                .map(|event| in_class(event, &class, &known))
                .transpose(),
        )
    })
    .modify(forget_managed_fields)
    .reflect(workers_writer)
    .inspect_ok(move |event| {
        let affected = lock(&index).apply_event(event);
        // The host-owner recorder decides again (`owners.rs`).
        claims_changed.notify_one();
        others.workers(affected);
    })
    .touched_objects()
    .predicate_filter(reconcile_trigger, Default::default())
    .for_each(move |worker| {
        if let Ok(worker) = worker {
            triggers.wake(ObjectRef::from_obj(&worker));
        }
        ready(())
    })
    .boxed();
    (workers, run)
}

/// Drops `metadata.managedFields` before an object is stored: nothing
/// reads them, and they were the largest part of a stored Worker (three
/// field managers: the user's, the finalizer's and the status's).
fn forget_managed_fields<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// `event` as the installation serving `class` sees it, given the Workers
/// it has (`known`, the store before the event): another class's Workers
/// are left out, and one of this class that came to name another (which
/// the CRD refuses) leaves as if deleted, so it is forgotten here while its
/// new class's installation takes it over.
pub fn in_class(
    event: watcher::Event<Worker>,
    class: &WorkerClass,
    known: &Store<Worker>,
) -> Option<watcher::Event<Worker>> {
    let ours = |worker: &Worker| class.serves(worker);
    let known = |worker: &Worker| known.get(&ObjectRef::from_obj(worker)).is_some();
    match event {
        watcher::Event::Apply(worker) if !ours(&worker) => {
            known(&worker).then_some(watcher::Event::Delete(worker))
        }
        watcher::Event::Delete(worker) if !ours(&worker) && !known(&worker) => None,
        watcher::Event::InitApply(worker) if !ours(&worker) => None,
        event => Some(event),
    }
}

/// Bundle Secrets in the operator namespace, metadata kept in a store.
/// Our own writes come back as events; those are dropped (the Worker was
/// just reconciled), while changes by others and deletions re-reconcile it.
fn bundle_watch(
    client: &Client,
    namespace: &str,
    sinks: &Sinks,
) -> (Store<PartialObjectMeta<Secret>>, BoxFuture<'static, ()>) {
    let (bundles, bundles_writer) = reflector::store::<PartialObjectMeta<Secret>>();
    let (own, triggers) = (sinks.own_writes.clone(), sinks.triggers.clone());
    let run = watcher(
        Api::<PartialObjectMeta<Secret>>::namespaced(client.clone(), namespace),
        watcher::Config::default().labels(&format!("{BUNDLE_LABEL}=true")),
    )
    .default_backoff()
    .inspect(observer("bundles", &sinks.metrics))
    .modify(forget_managed_fields)
    .reflect(bundles_writer)
    .for_each(move |event| {
        let changed = match event {
            Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret)) => {
                (!own.is_own(&secret.metadata)).then_some(secret)
            }
            Ok(watcher::Event::Delete(secret)) => Some(secret),
            Ok(watcher::Event::Init | watcher::Event::InitDone) | Err(_) => None,
        };
        if let Some(owner) = changed.and_then(|secret| bundle_owner(&secret.metadata)) {
            triggers.wake(owner);
        }
        ready(())
    })
    .boxed();
    (bundles, run)
}

/// Namespaces, metadata kept in a store: an event reconciles the Workers
/// whose dispatch namespace bindings name the namespace (its consent
/// labels may have changed).
fn namespace_watch(
    client: &Client,
    sinks: &Sinks,
) -> (Store<PartialObjectMeta<Namespace>>, BoxFuture<'static, ()>) {
    let (namespaces, writer) = reflector::store::<PartialObjectMeta<Namespace>>();
    let (index, triggers) = (Arc::clone(&sinks.index), sinks.triggers.clone());
    let run = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer("namespaces", &sinks.metrics))
    .modify(forget_managed_fields)
    .reflect(writer)
    .touched_objects()
    .for_each(move |namespace| {
        if let Ok(namespace) = namespace
            && let Some(name) = &namespace.metadata.name
        {
            let mut index = lock(&index);
            let labels = namespace.metadata.labels.clone().unwrap_or_default();
            let relabelled = index.policies_mut().set_labels(name, labels);
            let mut affected = index.dispatching_into(name);
            if relabelled && !index.policies().is_empty() {
                // Which policies select it may have changed.
                affected.extend(index.workers_in(name));
            }
            drop(index);
            triggers.workers(affected);
        }
        ready(())
    })
    .boxed();
    (namespaces, run)
}

/// TenantPolicies, kept in a store and copied into the index after each
/// event; every Worker is reconciled when one changes (its ceilings,
/// defaults and quota may have).
fn policy_watch(
    client: &Client,
    sinks: &Sinks,
    workers: &Store<Worker>,
) -> (Store<TenantPolicy>, BoxFuture<'static, ()>) {
    let (policies, writer) = reflector::store::<TenantPolicy>();
    let (index, triggers) = (Arc::clone(&sinks.index), sinks.triggers.clone());
    let (known, workers) = (policies.clone(), workers.clone());
    let run = watcher(
        Api::<TenantPolicy>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer("tenantpolicies", &sinks.metrics))
    .modify(forget_managed_fields)
    .reflect(writer)
    .for_each(move |event| {
        let changed = matches!(
            event,
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone)
        );
        if changed {
            let state = known
                .state()
                .iter()
                .map(|p| (**p).clone())
                .collect::<Vec<_>>();
            lock(&index).policies_mut().set_policies(state);
            triggers.every(&workers);
        }
        ready(())
    })
    .boxed();
    (policies, run)
}

impl Watches {
    /// The watches through `client`: bundles in `namespace`, the rest in
    /// every namespace, into `sinks`.
    pub fn new(client: &Client, namespace: &str, sinks: &Sinks) -> Self {
        let (workers, workers_run) = worker_watch(client, sinks);
        // Referenced ConfigMaps and Secrets, metadata only.
        let (config_maps, config_maps_synced) =
            metadata_triggers::<ConfigMap>(client, ReferenceKind::ConfigMap, sinks);
        let (secrets, secrets_synced) =
            metadata_triggers::<Secret>(client, ReferenceKind::Secret, sinks);
        let (bundles, bundles_run) = bundle_watch(client, namespace, sinks);
        let (namespaces, namespaces_run) = namespace_watch(client, sinks);
        let (policies, policies_run) = policy_watch(client, sinks, &workers);
        let run = async move {
            futures::join!(
                workers_run,
                config_maps,
                secrets,
                bundles_run,
                namespaces_run,
                policies_run
            );
        }
        .boxed();
        Self {
            workers,
            bundles,
            namespaces,
            policies,
            run,
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
        let namespaces = self.namespaces.clone();
        let policies = self.policies.clone();
        let mut config_maps = self.config_maps_synced.clone();
        let mut secrets = self.secrets_synced.clone();
        async move {
            let (workers_ready, bundles_ready, namespaces_ready, _, _, _) = futures::join!(
                workers.wait_until_ready(),
                bundles.wait_until_ready(),
                namespaces.wait_until_ready(),
                async { config_maps.wait_for(|synced| *synced).await.is_ok() },
                async { secrets.wait_for(|synced| *synced).await.is_ok() },
                policies_listed(&policies),
            );
            let synced = workers_ready.is_ok() && bundles_ready.is_ok() && namespaces_ready.is_ok();
            if synced {
                info!(workers = workers.len(), "controller caches synced");
            }
            synced
        }
    }
}

/// How long the caches wait for the TenantPolicies' first list before they
/// count as synced without it (a cluster whose TenantPolicy CRD is
/// missing still gets a ready operator).
const POLICY_LIST_WAIT: Duration = Duration::from_secs(10);

/// Waits for the TenantPolicies' first list, at most [`POLICY_LIST_WAIT`]:
/// no reconcile writes a bundle before the policies it must obey are known,
/// unless they cannot be listed at all.
async fn policies_listed(policies: &Store<TenantPolicy>) {
    if tokio::time::timeout(POLICY_LIST_WAIT, policies.wait_until_ready())
        .await
        .is_err()
    {
        warn!(
            waited_s = POLICY_LIST_WAIT.as_secs(),
            "TenantPolicies not listed yet: reconciling without them until they are"
        );
    }
}

/// Metadata-only watch of every `K` in the cluster, reconciling the Workers
/// the index says read what an event touched (`kind`); and whether it has
/// listed once.
fn metadata_triggers<K>(
    client: &Client,
    kind: ReferenceKind,
    sinks: &Sinks,
) -> (BoxFuture<'static, ()>, watch::Receiver<bool>)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    K: serde::de::DeserializeOwned,
    PartialObjectMeta<K>: kube::Resource<DynamicType = ()>,
{
    let (synced_tx, synced) = watch::channel(false);
    let (index, triggers) = (Arc::clone(&sinks.index), sinks.triggers.clone());
    let run = watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect(observer(K::plural(&()).into_owned(), &sinks.metrics))
    .inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) {
            synced_tx.send_replace(true);
        }
    })
    .touched_objects()
    .for_each(move |object| {
        if let Ok(object) = object {
            for worker in readers_of(&index, kind, &object.metadata) {
                triggers.wake(worker);
            }
        }
        ready(())
    })
    .boxed();
    (run, synced)
}

/// What a watch's events say about the watch itself, logged under `watch`:
/// each failure and how long its first list took; each complete list is
/// counted (`isolane_operator_watch_lists_total`). The watcher lists or
/// watches again after kube's backoff (0.8 s doubling to 30 s, jittered); a
/// failed list does not double it (the `Init` event before each list resets
/// it: measured, a list failing every time is retried every 0.9–1.6 s),
/// failed watch starts do. A list the apiserver refuses for now is retried
/// by the client first (`isolane-apiclient`).
fn observer<K>(
    watch: impl Into<String>,
    metrics: &Arc<Metrics>,
) -> impl FnMut(&Result<watcher::Event<K>, watcher::Error>) + Send + 'static {
    let watch = watch.into();
    let metrics = Arc::clone(metrics);
    let started = std::time::Instant::now();
    let mut failures = 0_u32;
    let mut listed = false;
    move |event| match event {
        Err(error) => {
            failures += 1;
            warn!(%watch, %error, failures, "watch failed; retrying after a backoff");
        }
        Ok(watcher::Event::InitDone) => {
            metrics.listed(&watch);
            if !listed {
                listed = true;
                info!(%watch, failures, took_ms = started.elapsed().as_millis(), "watch listed");
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FINALIZER, fixtures};

    #[test]
    fn only_the_workers_of_the_class_pass() {
        let class: WorkerClass = "staging".parse().unwrap();
        let mut writer = reflector::store::Writer::<Worker>::default();
        let known = writer.as_reader();
        let prod = fixtures::worker("ns", "prod", 1, fixtures::spec(Some("x"), &[]));
        let mut staging = fixtures::worker("ns", "staging", 1, fixtures::spec(Some("x"), &[]));
        staging.spec.worker_class = Some("staging".into());
        let pass = |event: watcher::Event<Worker>| in_class(event, &class, &known);
        assert!(pass(watcher::Event::InitApply(prod.clone())).is_none());
        assert!(pass(watcher::Event::Apply(prod.clone())).is_none());
        assert!(pass(watcher::Event::Delete(prod.clone())).is_none());
        assert!(matches!(
            pass(watcher::Event::InitApply(staging.clone())),
            Some(watcher::Event::InitApply(_))
        ));
        let applied = pass(watcher::Event::Apply(staging.clone())).unwrap();
        assert!(matches!(applied, watcher::Event::Apply(_)));
        writer.apply_watcher_event(&applied);
        // Known here and now naming another class: it leaves.
        let mut moved = staging.clone();
        moved.spec.worker_class = None;
        assert!(matches!(
            pass(watcher::Event::Apply(moved)),
            Some(watcher::Event::Delete(_))
        ));
        assert!(matches!(
            pass(watcher::Event::Delete(staging)),
            Some(watcher::Event::Delete(_))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_caches_wait_for_the_policies_list_but_not_forever() {
        // Never listed (a missing CRD): the wait ends at its bound.
        let writer = reflector::store::Writer::<TenantPolicy>::default();
        let never = writer.as_reader();
        let started = tokio::time::Instant::now();
        policies_listed(&never).await;
        assert_eq!(started.elapsed(), POLICY_LIST_WAIT);

        // Listed after 2 s: the wait ends then, not at its bound.
        let mut writer = reflector::store::Writer::<TenantPolicy>::default();
        let listed = writer.as_reader();
        let started = tokio::time::Instant::now();
        let list = async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            writer.apply_watcher_event(&watcher::Event::Init);
            writer.apply_watcher_event(&watcher::Event::InitDone);
            writer
        };
        let ((), _writer) = futures::join!(policies_listed(&listed), list);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

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
