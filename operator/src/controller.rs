//! The Worker controller: watches, the reconcile, and its error policy.
//!
//! # Watches
//! - Workers in every namespace (the main stream). Each event first updates the
//!   reflector store, then the [`WorkerIndex`] (references and route claims),
//!   then — only when generation, finalizers or deletion changed, so status
//!   writes do not loop — reconciles the Worker. Workers whose route ownership
//!   the event may have changed are reconciled too.
//! - ConfigMaps and Secrets in every namespace, metadata only: an event
//!   reconciles exactly the Workers the index says read that object.
//! - Bundle Secrets in the operator namespace (metadata, kept in a store): a
//!   bundle changed or deleted by someone else is rewritten; the store also lets
//!   a reconcile skip re-applying a bundle that is already current.
//! - Runtime-node Leases ([`crate::membership`]): when the schedulable node set
//!   changes, every Worker is reconciled to update `status.placement`.
//!
//! # Reconcile
//! Wrapped in kube's [`finalizer`] with [`FINALIZER`]: *apply* resolves, checks,
//! writes the bundle (server-side apply) and the status (server-side apply on
//! the status subresource, skipped when unchanged); *cleanup* deletes the bundle.
//! Problems the user fixes are conditions, not errors (see [`crate::status`]).

use std::collections::HashMap;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, channel::mpsc};
use isolane_crds::traffic::{self, TrafficError};
use isolane_crds::{
    BUNDLE_LABEL, Bundle, BundleSecret, ConditionStatus, ConditionType, ReplicaPlacement, Route,
    WORKER_ID_ANNOTATION, Worker,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ObjectMeta, PartialObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{self, Action};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use tokio::sync::watch;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::config::Config;
use crate::index::{ReferenceKey, ReferenceKind, WorkerIndex, key_of};
use crate::membership;
use crate::metrics::{Metrics, Outcome};
use crate::resolve::{self, MissingReference};
use crate::revisions;
use crate::routes::{Holder, RouteKey, WorkerKey, route_keys};
use crate::script::{self, ScriptKind, SyntaxError};
use crate::status::{ConditionUpdate, DesiredStatus, Revisions, Shown, reason};
use crate::{Error, FIELD_MANAGER, FINALIZER};
use isolane_telemetry::ReadyHandle;

/// Annotation on a bundle Secret: a digest of its whole content (routes
/// included), so an unchanged bundle is not re-applied.
pub use isolane_crds::DIGEST_ANNOTATION;

/// What the reconcile needs.
pub struct Context {
    client: Client,
    namespace: String,
    missing_reference_retry: Duration,
    resync: Duration,
    index: Arc<Mutex<WorkerIndex>>,
    bundles: Store<PartialObjectMeta<Secret>>,
    /// Digest of the last bundle this controller wrote, by Secret name.
    written: Arc<Mutex<HashMap<String, String>>>,
    nodes: watch::Receiver<Arc<isolane_placement::NodeSet>>,
    metrics: Arc<Metrics>,
    recorder: Recorder,
    failures: Mutex<HashMap<WorkerKey, u32>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

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

    // Runtime nodes first: reconciles should see the node set from the start.
    let (nodes_tx, nodes) = watch::channel(Arc::new(isolane_placement::NodeSet::new(Vec::new())));
    let (membership_synced_tx, mut membership_synced) = watch::channel(false);
    let (nodes_changed_tx, nodes_changed) = mpsc::unbounded::<()>();
    let membership = membership::watch(
        Api::namespaced(client.clone(), &config.namespace),
        config.membership_interval,
        nodes_tx,
        nodes_changed_tx,
        membership_synced_tx,
    );
    tokio::pin!(membership);
    tokio::select! {
        () = &mut membership => return,
        _ = membership_synced.wait_for(|synced| *synced) => {}
    }

    // Workers: store, then index, then (filtered) reconcile triggers.
    let (workers, workers_writer) = reflector::store::<Worker>();
    let (wake_tx, wake_rx) = mpsc::unbounded::<ObjectRef<Worker>>();
    let worker_index = Arc::clone(&index);
    let worker_stream = watcher(
        Api::<Worker>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(workers_writer)
    .inspect_ok(move |event| {
        let others = lock(&worker_index).apply_event(event);
        for other in others {
            // The receiver lives as long as the controller; a send error only
            // happens while shutting down.
            let _ = wake_tx.unbounded_send(object_ref(&other));
        }
    })
    .touched_objects()
    .predicate_filter(reconcile_trigger, Default::default());

    // Referenced ConfigMaps and Secrets, metadata only.
    let (config_maps_synced_tx, config_maps_synced) = watch::channel(false);
    let config_maps = watcher(
        Api::<PartialObjectMeta<ConfigMap>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect_ok(move |event| mark_synced(event, &config_maps_synced_tx))
    .touched_objects();
    let (secrets_synced_tx, secrets_synced) = watch::channel(false);
    let secrets = watcher(
        Api::<PartialObjectMeta<Secret>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect_ok(move |event| mark_synced(event, &secrets_synced_tx))
    .touched_objects();

    // Bundle Secrets in the operator namespace, metadata kept in a store.
    // Our own writes come back as events; those are dropped (the Worker was just
    // reconciled), while changes by others and deletions re-reconcile it.
    let (bundles, bundles_writer) = reflector::store::<PartialObjectMeta<Secret>>();
    let written = Arc::new(Mutex::new(HashMap::<String, String>::new()));
    let own_writes = Arc::clone(&written);
    let bundle_stream = watcher(
        Api::<PartialObjectMeta<Secret>>::namespaced(client.clone(), &config.namespace),
        watcher::Config::default().labels(&format!("{BUNDLE_LABEL}=true")),
    )
    .default_backoff()
    .reflect(bundles_writer)
    .filter_map(move |event| {
        let trigger = match event {
            Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret)) => {
                (!is_own_write(&lock(&own_writes), &secret.metadata)).then_some(Ok(secret))
            }
            Ok(watcher::Event::Delete(secret)) => Some(Ok(secret)),
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(error) => Some(Err(error)),
        };
        futures::future::ready(trigger)
    });

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: FIELD_MANAGER.to_owned(),
            instance: std::env::var("HOSTNAME").ok(),
        },
    );
    let context = Arc::new(Context {
        client: client.clone(),
        namespace: config.namespace.clone(),
        missing_reference_retry: config.missing_reference_retry,
        resync: config.resync,
        index: Arc::clone(&index),
        bundles: bundles.clone(),
        written,
        nodes,
        metrics,
        recorder,
        failures: Mutex::new(HashMap::new()),
    });

    let config_map_index = Arc::clone(&index);
    let secret_index = Arc::clone(&index);
    let controller = Controller::for_stream(worker_stream, workers.clone())
        .with_config(controller::Config::default().concurrency(config.concurrency))
        .watches_stream(config_maps, move |object: PartialObjectMeta<ConfigMap>| {
            readers_of(
                &config_map_index,
                ReferenceKind::ConfigMap,
                &object.metadata,
            )
        })
        .watches_stream(secrets, move |object: PartialObjectMeta<Secret>| {
            readers_of(&secret_index, ReferenceKind::Secret, &object.metadata)
        })
        .watches_stream(bundle_stream, |object: PartialObjectMeta<Secret>| {
            bundle_owner(&object.metadata)
        })
        .reconcile_on(wake_rx)
        .reconcile_all_on(nodes_changed)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                debug!(%error, "controller event");
            }
        });

    let synced = async {
        let workers_ready = workers.wait_until_ready();
        let bundles_ready = bundles.wait_until_ready();
        let mut config_maps_synced = config_maps_synced;
        let mut secrets_synced = secrets_synced;
        let (workers_ready, bundles_ready, _, _) = futures::join!(
            workers_ready,
            bundles_ready,
            config_maps_synced.wait_for(|synced| *synced),
            secrets_synced.wait_for(|synced| *synced),
        );
        if workers_ready.is_ok() && bundles_ready.is_ok() {
            info!(workers = workers.len(), "controller caches synced");
            ready.set(true);
        }
        futures::future::pending::<()>().await;
    };

    info!(namespace = %config.namespace, "controller started");
    tokio::select! {
        () = controller => info!("controller stopped"),
        () = membership => warn!("membership watch ended"),
        () = synced => {}
    }
}

/// The part of a Worker whose change needs a reconcile: generation (spec),
/// finalizers and deletion. Status and label updates pass without one.
fn reconcile_trigger(worker: &Worker) -> Option<u64> {
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

fn mark_synced<K>(event: &watcher::Event<K>, synced: &watch::Sender<bool>) {
    if matches!(event, watcher::Event::InitDone) {
        synced.send_replace(true);
    }
}

fn readers_of(
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

fn bundle_owner(metadata: &ObjectMeta) -> Option<ObjectRef<Worker>> {
    let id = metadata.annotations.as_ref()?.get(WORKER_ID_ANNOTATION)?;
    let (namespace, name) = id.split_once('/')?;
    Some(ObjectRef::new(name).within(namespace))
}

/// True when `metadata` is of a bundle Secret exactly as this controller last wrote it.
fn is_own_write(written: &HashMap<String, String>, metadata: &ObjectMeta) -> bool {
    let digest = metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(DIGEST_ANNOTATION));
    match (&metadata.name, digest) {
        (Some(name), Some(digest)) => written.get(name) == Some(digest),
        _ => false,
    }
}

fn object_ref(key: &WorkerKey) -> ObjectRef<Worker> {
    ObjectRef::new(&key.name).within(&key.namespace)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// === reconcile ===

async fn reconcile(worker: Arc<Worker>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let key = key_of(&worker).ok_or(Error::UnnamedWorker)?;
    let span = info_span!("reconcile", worker.id = %key);
    let api: Api<Worker> = Api::namespaced(context.client.clone(), &key.namespace);
    let reference = worker.object_ref(&());
    let outcome = Mutex::new(Outcome::Pending);
    let result = finalizer(&api, FINALIZER, worker, |event| async {
        let (action, result) = match event {
            Finalizer::Apply(worker) => apply(&worker, &key, &context).await?,
            Finalizer::Cleanup(worker) => {
                (cleanup(&worker, &key, &context).await?, Outcome::Deleted)
            }
        };
        *lock(&outcome) = result;
        Ok(action)
    })
    .instrument(span.clone())
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)));
    let took = started.elapsed();
    match &result {
        Ok(_) => {
            lock(&context.failures).remove(&key);
            let outcome = *lock(&outcome);
            context.metrics.reconciled(outcome, None, took);
            span.in_scope(|| {
                debug!(
                    result = outcome.as_str(),
                    took_ms = took.as_millis(),
                    "reconciled"
                )
            });
        }
        Err(error) => {
            context
                .metrics
                .reconciled(Outcome::Error, Some(error.kind()), took);
            // One event per run of failures (the error policy counts them), not one per retry.
            let first_failure = !lock(&context.failures).contains_key(&key);
            if first_failure {
                let event = KubeEvent {
                    type_: EventType::Warning,
                    reason: "ReconcileFailed".to_owned(),
                    note: Some(format!("{error} ({}); retrying", error.kind())),
                    action: "Reconcile".to_owned(),
                    secondary: None,
                };
                if let Err(publish) = context.recorder.publish(&event, &reference).await {
                    debug!(error = %publish, "failed to publish an event");
                }
            }
        }
    }
    result
}

/// What the apply step decided about a Worker's routes.
struct RouteDecision {
    admitted: Vec<Route>,
    lost: Vec<(RouteKey, Holder)>,
    declared: usize,
}

impl RouteDecision {
    fn condition(&self) -> ConditionUpdate {
        if self.lost.is_empty() {
            return ConditionUpdate::new(
                ConditionType::RoutesAdmitted,
                ConditionStatus::True,
                reason::ADMITTED,
                format!(
                    "{} of {} routes admitted",
                    self.admitted.len(),
                    self.declared
                ),
            );
        }
        let conflicts: Vec<String> = self
            .lost
            .iter()
            .map(|(route, holder)| format!("route {route} {holder}"))
            .collect();
        ConditionUpdate::new(
            ConditionType::RoutesAdmitted,
            ConditionStatus::False,
            reason::ROUTE_CONFLICT,
            conflicts.join("; "),
        )
    }
}

async fn apply(
    worker: &Worker,
    key: &WorkerKey,
    context: &Context,
) -> Result<(Action, Outcome), Error> {
    let spec = &worker.spec;
    let sources = resolve::fetch(&context.client, &key.namespace, spec).await?;
    let routes = {
        let declared = route_keys(&spec.routes);
        let lost = lock(&context.index).routes().lost(key, &declared);
        let mut admitted: Vec<Route> = Vec::new();
        for route in &spec.routes {
            let route_key = RouteKey::from(route);
            if !lost.iter().any(|(lost, _)| *lost == route_key) && !admitted.contains(route) {
                admitted.push(route.clone());
            }
        }
        RouteDecision {
            admitted,
            lost,
            declared: declared.len(),
        }
    };
    let routes_condition = routes.condition();
    let placement = placement(&context.nodes.borrow(), key, spec.replicas);
    let url = crate::status::url(&routes.admitted);
    // The revision being served stays the last good one until a new bundle is written.
    let served = worker
        .status
        .as_ref()
        .and_then(|status| status.revision.clone());

    let resolved = match resolve::resolve(&key.namespace, spec, &sources) {
        Ok(resolved) => resolved,
        Err(missing) => {
            let conditions = missing_reference_conditions(&missing, routes_condition);
            keep_serving(worker, key, context, served, url, placement, &conditions).await?;
            return Ok((
                Action::requeue(context.missing_reference_retry),
                Outcome::NotReady,
            ));
        }
    };
    let kind = match script::check(&resolved.script) {
        Ok(kind) => kind,
        Err(syntax) => {
            let conditions = syntax_error_conditions(&syntax, routes_condition);
            keep_serving(worker, key, context, served, url, placement, &conditions).await?;
            return Ok((Action::requeue(context.resync), Outcome::NotReady));
        }
    };
    let bundle = Bundle::new(
        key.to_string(),
        resolved.script,
        resolved.env,
        spec.limits,
        routes.admitted.clone(),
    )
    .with_allowed_hosts(
        spec.egress
            .as_ref()
            .map(|egress| egress.allowed_hosts.clone())
            .unwrap_or_default(),
    );
    apply_bundle(context, key, &bundle).await?;
    let (revisions, unapplied) =
        rollout(worker, key, context, Some(&bundle.revision), true).await?;
    let all_lost = routes.declared > 0 && routes.admitted.is_empty();
    let ready = if all_lost {
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason::ROUTES_CONFLICTED,
            "every route of this Worker is held by an older Worker",
        )
    } else {
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::True,
            reason::BUNDLE_READY,
            match &unapplied {
                None => format!("revision {} is written", bundle.revision),
                Some(error) => format!(
                    "revision {} is written; {error}, so the previous split is kept",
                    bundle.revision
                ),
            },
        )
    };
    let script_valid = ConditionUpdate::new(
        ConditionType::ScriptValid,
        ConditionStatus::True,
        reason::PARSED,
        match kind {
            ScriptKind::Module => "parsed as an ES module",
            ScriptKind::Script => "parsed as a classic script",
        },
    );
    let conditions = [ready, script_valid, routes_condition];
    let shown = Shown {
        revision: Some(bundle.revision.clone()),
        url,
        placement,
        revisions,
    };
    write_status(worker, key, context, shown, &conditions).await?;
    let outcome = if all_lost {
        Outcome::NotReady
    } else {
        Outcome::Ready
    };
    Ok((Action::requeue(context.resync), outcome))
}

fn missing_reference_conditions(
    missing: &MissingReference,
    routes: ConditionUpdate,
) -> [ConditionUpdate; 3] {
    [
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason::REFERENCE_NOT_FOUND,
            missing.to_string(),
        ),
        ConditionUpdate::new(
            ConditionType::ScriptValid,
            ConditionStatus::Unknown,
            reason::REFERENCE_NOT_FOUND,
            format!("not checked: {missing}"),
        ),
        routes,
    ]
}

fn syntax_error_conditions(syntax: &SyntaxError, routes: ConditionUpdate) -> [ConditionUpdate; 3] {
    [
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason::SYNTAX_ERROR,
            format!("the script does not parse: {syntax}"),
        ),
        ConditionUpdate::new(
            ConditionType::ScriptValid,
            ConditionStatus::False,
            reason::SYNTAX_ERROR,
            syntax.to_string(),
        ),
        routes,
    ]
}

/// The replicas' nodes and threads, by the shared placement function.
fn placement(
    nodes: &isolane_placement::NodeSet,
    key: &WorkerKey,
    replicas: i32,
) -> Vec<ReplicaPlacement> {
    let replicas = usize::try_from(replicas.max(1)).unwrap_or(1);
    nodes
        .place(&key.to_string(), replicas)
        .into_iter()
        .map(|assignment| ReplicaPlacement {
            node: assignment.node,
            thread: assignment.thread,
        })
        .collect()
}

/// The bundle Secret of `bundle`'s revision, ready for server-side apply
/// (the encoding nodes decode: `isolane_crds::BundleSecret`).
pub fn bundle_secret(namespace: &str, key: &WorkerKey, bundle: &Bundle) -> Result<Secret, Error> {
    let encoded = BundleSecret::encode(bundle).map_err(|source| Error::SerializeBundle {
        worker_id: key.to_string(),
        source,
    })?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(encoded.name),
            namespace: Some(namespace.to_owned()),
            labels: Some(encoded.labels),
            annotations: Some(encoded.annotations),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(
            encoded
                .data
                .into_iter()
                .map(|(key, value)| (key, ByteString(value)))
                .collect(),
        ),
        ..Secret::default()
    })
}

async fn apply_bundle(context: &Context, key: &WorkerKey, bundle: &Bundle) -> Result<(), Error> {
    let secret = bundle_secret(&context.namespace, key, bundle)?;
    let name = secret.metadata.name.clone().unwrap_or_default();
    let wanted = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(DIGEST_ANNOTATION));
    let existing = context
        .bundles
        .get(&ObjectRef::new(&name).within(&context.namespace));
    let current = existing
        .as_ref()
        .and_then(|existing| existing.metadata.annotations.as_ref())
        .and_then(|annotations| annotations.get(DIGEST_ANNOTATION));
    if current.is_some() && current == wanted {
        return Ok(());
    }
    // Recorded before the write: its watch event may arrive before the response.
    if let Some(digest) = wanted {
        lock(&context.written).insert(name.clone(), digest.clone());
    }
    let api: Api<Secret> = Api::namespaced(context.client.clone(), &context.namespace);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&secret),
    )
    .await
    .map_err(|source| Error::ApplyBundle {
        namespace: context.namespace.clone(),
        secret: name.clone(),
        source: Box::new(source),
    })?;
    info!(worker.id = %key, revision = %bundle.revision, secret = %name, "bundle written");
    Ok(())
}

/// The status of a Worker whose change cannot be served (a missing
/// reference, a syntax error): the `served` revision and its split stay.
async fn keep_serving(
    worker: &Worker,
    key: &WorkerKey,
    context: &Context,
    served: Option<String>,
    url: Option<String>,
    placement: Vec<ReplicaPlacement>,
    conditions: &[ConditionUpdate],
) -> Result<(), Error> {
    let (revisions, _) = rollout(worker, key, context, served.as_deref(), false).await?;
    let shown = Shown {
        revision: served,
        url,
        placement,
        revisions,
    };
    write_status(worker, key, context, shown, conditions).await
}

/// The split and the revision history for this reconcile: `spec.traffic`
/// resolved against the revisions kept (the previous split stays, with the
/// reason, when it cannot be), and the Secrets beyond the history deleted
/// (only once the latest revision is written: `latest_written`).
async fn rollout(
    worker: &Worker,
    key: &WorkerKey,
    context: &Context,
    latest: Option<&str>,
    latest_written: bool,
) -> Result<(Revisions, Option<TrafficError>), Error> {
    let stored = revisions::stored(key, context.bundles.state().iter().map(AsRef::as_ref));
    let previous = worker
        .status
        .as_ref()
        .map(|status| status.traffic.clone())
        .unwrap_or_default();
    let exists =
        |revision: &str| Some(revision) == latest || stored.iter().any(|s| s.revision == revision);
    let (traffic, unapplied) = match traffic::resolve(&worker.spec.traffic, latest, exists) {
        Ok(traffic) => (traffic, None),
        Err(error) if previous.is_empty() => (
            traffic::resolve(&[], latest, |_| false).unwrap_or_default(),
            Some(error),
        ),
        Err(error) => (previous.clone(), Some(error)),
    };
    let plan = revisions::plan(
        key,
        &stored,
        latest,
        latest_written,
        &traffic,
        &worker.spec.traffic,
        &previous,
        worker.spec.revision_history_limit,
        Timestamp::now(),
    );
    if latest_written {
        for secret in &plan.delete {
            delete_bundle(context, key, secret).await?;
        }
    }
    Ok((
        Revisions {
            traffic,
            revisions: plan.statuses,
        },
        unapplied,
    ))
}

/// Deletes one bundle Secret (gone already is fine).
async fn delete_bundle(context: &Context, key: &WorkerKey, name: &str) -> Result<(), Error> {
    lock(&context.written).remove(name);
    let api: Api<Secret> = Api::namespaced(context.client.clone(), &context.namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            info!(worker.id = %key, secret = %name, "bundle deleted");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::DeleteBundle {
            namespace: context.namespace.clone(),
            secret: name.to_owned(),
            source: Box::new(source),
        }),
    }
}

async fn write_status(
    worker: &Worker,
    key: &WorkerKey,
    context: &Context,
    shown: Shown,
    conditions: &[ConditionUpdate],
) -> Result<(), Error> {
    let current = worker.status.as_ref();
    let desired = DesiredStatus::new(
        current,
        worker.metadata.generation,
        shown,
        conditions,
        Timestamp::now(),
    );
    let statuses = ConditionType::ALL.map(|type_| {
        conditions
            .iter()
            .find(|condition| condition.type_ == type_)
            .map_or(ConditionStatus::Unknown, |condition| condition.status)
    });
    context.metrics.set_conditions(key, statuses);
    if desired.is_current(current) {
        return Ok(());
    }
    publish_failures(worker, context, current, conditions).await;
    let api: Api<Worker> = Api::namespaced(context.client.clone(), &key.namespace);
    api.patch_status(
        &key.name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(desired.apply_body()),
    )
    .await
    .map_err(|source| Error::PatchStatus {
        worker_id: key.to_string(),
        source: Box::new(source),
    })?;
    Ok(())
}

/// Emits a Warning event for each failing condition whose reason or message
/// changed since the last status (so a Worker stuck on one problem does not
/// repeat it on every resync).
async fn publish_failures(
    worker: &Worker,
    context: &Context,
    current: Option<&isolane_crds::WorkerStatus>,
    conditions: &[ConditionUpdate],
) {
    let reference = worker.object_ref(&());
    for condition in conditions {
        if condition.status != ConditionStatus::False {
            continue;
        }
        let unchanged = current.is_some_and(|status| {
            status.conditions.iter().any(|existing| {
                existing.type_ == condition.type_.as_str()
                    && existing.status == condition.status.as_str()
                    && existing.reason == condition.reason
                    && existing.message == condition.message
            })
        });
        // Ready=False repeats the cause already reported by another condition.
        if unchanged
            || (condition.type_ == ConditionType::Ready
                && condition.reason != reason::REFERENCE_NOT_FOUND)
        {
            continue;
        }
        let event = KubeEvent {
            type_: EventType::Warning,
            reason: condition.reason.to_owned(),
            note: Some(condition.message.clone()),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(error) = context.recorder.publish(&event, &reference).await {
            debug!(%error, "failed to publish an event");
        }
    }
}

async fn cleanup(worker: &Worker, key: &WorkerKey, context: &Context) -> Result<Action, Error> {
    let mut names: Vec<String> =
        revisions::stored(key, context.bundles.state().iter().map(AsRef::as_ref))
            .into_iter()
            .map(|stored| stored.secret)
            .collect();
    let legacy = Bundle::secret_name(&key.namespace, &key.name);
    if !names.contains(&legacy) {
        names.push(legacy);
    }
    for name in names {
        if let Err(error) = delete_bundle(context, key, &name).await {
            let event = KubeEvent {
                type_: EventType::Warning,
                reason: "BundleDeleteFailed".to_owned(),
                note: Some(error.to_string()),
                action: "Cleanup".to_owned(),
                secondary: None,
            };
            if let Err(publish) = context
                .recorder
                .publish(&event, &worker.object_ref(&()))
                .await
            {
                debug!(error = %publish, "failed to publish an event");
            }
            return Err(error);
        }
    }
    context.metrics.forget(key);
    Ok(Action::await_change())
}

// === error policy ===

/// Retries failed reconciles with a per-Worker exponential backoff: 0.5 s
/// doubling to 5 min; an optimistic-concurrency conflict (409) is retried after
/// 100 ms the first three times.
fn error_policy(worker: Arc<Worker>, error: &Error, context: Arc<Context>) -> Action {
    let Some(key) = key_of(&worker) else {
        return Action::requeue(Duration::from_secs(60));
    };
    let attempts = {
        let mut failures = lock(&context.failures);
        let attempts = failures.entry(key.clone()).or_insert(0);
        *attempts = attempts.saturating_add(1);
        *attempts
    };
    let delay = backoff(attempts, error.is_conflict());
    warn!(
        worker.id = %key,
        error = %error,
        kind = error.kind(),
        attempts,
        retry_ms = delay.as_millis(),
        "reconcile failed"
    );
    Action::requeue(delay)
}

/// The delay before retry number `attempts` (1-based).
pub fn backoff(attempts: u32, conflict: bool) -> Duration {
    if conflict && attempts <= 3 {
        return Duration::from_millis(100);
    }
    let exponent = attempts.saturating_sub(1).min(10);
    Duration::from_millis(500)
        .saturating_mul(1 << exponent)
        .min(Duration::from_secs(300))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use isolane_crds::{BUNDLE_KEY, Limits, REVISION_ANNOTATION};

    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(1, false), Duration::from_millis(500));
        assert_eq!(backoff(2, false), Duration::from_secs(1));
        assert_eq!(backoff(5, false), Duration::from_secs(8));
        assert_eq!(backoff(30, false), Duration::from_secs(300));
        assert_eq!(backoff(2, true), Duration::from_millis(100));
        assert_eq!(backoff(4, true), Duration::from_secs(4));
    }

    #[test]
    fn bundle_secret_has_the_format_nodes_read() {
        let key = WorkerKey::new("default", "hello");
        let bundle = Bundle::new(
            key.to_string(),
            "export default {}".into(),
            BTreeMap::new(),
            Limits::default(),
            vec![],
        );
        let secret = bundle_secret("isolane-system", &key, &bundle).unwrap();
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some(Bundle::revision_secret_name("default", "hello", &bundle.revision).as_str())
        );
        assert_eq!(secret.metadata.namespace.as_deref(), Some("isolane-system"));
        let labels = secret.metadata.labels.unwrap();
        assert_eq!(labels.get(BUNDLE_LABEL).map(String::as_str), Some("true"));
        let annotations = secret.metadata.annotations.unwrap();
        assert_eq!(annotations[WORKER_ID_ANNOTATION], "default/hello");
        assert_eq!(annotations[REVISION_ANNOTATION], bundle.revision);
        let data = secret.data.unwrap();
        let decoded: Bundle = serde_json::from_slice(&data[BUNDLE_KEY].0).unwrap();
        assert_eq!(decoded, bundle);
        // The body carries apiVersion and kind, as server-side apply needs.
        let body = serde_json::to_value(Secret {
            metadata: ObjectMeta::default(),
            ..Secret::default()
        })
        .unwrap();
        assert_eq!(body["kind"], "Secret");
    }

    #[test]
    fn bundle_owner_reads_the_worker_id() {
        let metadata = ObjectMeta {
            annotations: Some(BTreeMap::from([(
                WORKER_ID_ANNOTATION.to_owned(),
                "ns/name".to_owned(),
            )])),
            ..ObjectMeta::default()
        };
        let owner = bundle_owner(&metadata).unwrap();
        assert_eq!(owner.name, "name");
        assert_eq!(owner.namespace.as_deref(), Some("ns"));
        assert!(bundle_owner(&ObjectMeta::default()).is_none());
    }

    #[test]
    fn status_updates_do_not_trigger_a_reconcile() {
        let mut worker = Worker::new(
            "w",
            isolane_crds::WorkerSpec {
                script: Some("x".into()),
                script_from: None,
                env: vec![],
                routes: vec![],
                limits: Limits::default(),
                egress: None,
                triggers: None,
                replicas: 1,
                traffic: Vec::new(),
                version_affinity: None,
                allow_revision_override: false,
                revision_history_limit: 10,
            },
        );
        worker.metadata.generation = Some(1);
        let before = reconcile_trigger(&worker);
        worker.status = Some(isolane_crds::WorkerStatus::default());
        assert_eq!(reconcile_trigger(&worker), before);
        worker.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
        assert_ne!(reconcile_trigger(&worker), before);
    }
}
