//! The reconcile of one Worker, and its error policy.
//!
//! No reconcile starts before every watch has listed once (`synced`): kube's
//! controller waits for the Worker store only, and a decision made from a
//! bundle store or route index still filling up is wrong (a Worker deleted
//! while the operator was down lost its finalizer with its bundles left
//! behind, for ever).
//!
//! Wrapped in kube's [`finalizer`] with [`FINALIZER`]: *apply* observes
//! (reads the ConfigMaps and Secrets the Worker references, and snapshots the
//! route index, the node set and the bundle store), decides
//! ([`crate::plan::plan`], no I/O) and carries the plan out
//! ([`Executor::execute`]); *cleanup* deletes every bundle Secret of the
//! Worker, as listed from the API at that moment (the finalizer goes once
//! it returns, so nothing may be missed). Problems the user fixes are conditions, not errors (see
//! [`crate::status`]); API failures are retried with a per-Worker backoff
//! ([`error_policy`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use isolane_crds::{Worker, WorkerSpec};
use isolane_placement::NodeSet;
use isolane_worker::Bundle;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client};
use tokio::sync::watch;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::artifact::ArtifactChecker;
use crate::certificates::Certificates;
use crate::executor::Executor;
use crate::index::WorkerIndex;
use crate::metrics::Outcome;
use crate::plan::{self, DispatchConsent, MissingService, Observed, RefusedDispatch, Settings};
use crate::resolve;
use crate::routes::WorkerKey;
use crate::{Error, FINALIZER, lock};

/// What the reconcile reads from and writes with.
pub struct Context {
    client: Client,
    settings: Settings,
    index: Arc<Mutex<WorkerIndex>>,
    bundles: Store<PartialObjectMeta<Secret>>,
    nodes: watch::Receiver<Arc<NodeSet>>,
    executor: Executor,
    /// Turns true once every watch has listed once.
    synced: watch::Receiver<bool>,
    /// Consecutive failures, by Worker.
    failures: Mutex<HashMap<WorkerKey, u32>>,
    /// Pulls and checks `spec.bundle`.
    artifacts: Arc<ArtifactChecker>,
    /// The durable store, when the cluster has one: a deleted Worker's
    /// Durable Object alarms are deleted there.
    store: Option<isolane_storage::Store>,
    /// The Workers' Certificates, when they are asked for.
    certificates: Option<Certificates>,
    /// Namespaces (metadata), whose labels say who may dispatch into them;
    /// without it no namespace has agreed.
    namespaces: Option<Store<PartialObjectMeta<Namespace>>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// Reads references through `client`, route claims from `index`,
    /// bundles from `bundles`, the node set from `nodes`; writes with
    /// `executor`; reconciles wait for `synced` to turn true; `spec.bundle`
    /// is checked with `artifacts`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: Client,
        settings: Settings,
        index: Arc<Mutex<WorkerIndex>>,
        bundles: Store<PartialObjectMeta<Secret>>,
        nodes: watch::Receiver<Arc<NodeSet>>,
        executor: Executor,
        synced: watch::Receiver<bool>,
        artifacts: Arc<ArtifactChecker>,
    ) -> Self {
        Self {
            client,
            settings,
            index,
            bundles,
            nodes,
            executor,
            synced,
            failures: Mutex::new(HashMap::new()),
            artifacts,
            store: None,
            certificates: None,
            namespaces: None,
        }
    }

    /// Reads the dispatch consent labels of Namespaces from `namespaces`.
    #[must_use]
    pub fn with_namespaces(mut self, namespaces: Store<PartialObjectMeta<Namespace>>) -> Self {
        self.namespaces = Some(namespaces);
        self
    }

    /// Deletes a deleted Worker's Durable Object alarms in `store`.
    #[must_use]
    pub fn with_store(mut self, store: Option<isolane_storage::Store>) -> Self {
        self.store = store;
        self
    }

    /// Asks cert-manager for the Workers' Certificates through `certificates`.
    #[must_use]
    pub fn with_certificates(mut self, certificates: Option<Certificates>) -> Self {
        self.certificates = certificates;
        self
    }

    /// Waits until every watch has listed once.
    async fn caches_synced(&self) -> Result<(), Error> {
        let mut synced = self.synced.clone();
        synced
            .wait_for(|synced| *synced)
            .await
            .map(|_| ())
            .map_err(|_| Error::NotSynced)
    }
}

/// Reconciles one Worker (see the module docs); counts it in the metrics.
pub async fn reconcile(worker: Arc<Worker>, context: Arc<Context>) -> Result<Action, Error> {
    let key = worker.key().ok_or(Error::UnnamedWorker)?;
    context.caches_synced().await?;
    let started = Instant::now();
    let span = info_span!("reconcile", worker.id = %key);
    let api: Api<Worker> = Api::namespaced(context.client.clone(), &key.namespace);
    let outcome = Mutex::new(Outcome::Pending);
    let result = finalizer(&api, FINALIZER, Arc::clone(&worker), |event| async {
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
    let metrics = context.executor.metrics();
    match &result {
        Ok(_) => {
            lock(&context.failures).remove(&key);
            let outcome = *lock(&outcome);
            metrics.reconciled(outcome, None, took);
            span.in_scope(|| {
                debug!(
                    result = outcome.as_str(),
                    took_ms = took.as_millis(),
                    "reconciled"
                )
            });
        }
        Err(error) => {
            metrics.reconciled(Outcome::Error, Some(error.kind()), took);
            // One event per run of failures (the error policy counts them), not one per retry.
            let first_failure = !lock(&context.failures).contains_key(&key);
            if first_failure {
                let note = format!("{error} ({}); retrying", error.kind());
                context
                    .executor
                    .warn(&worker, "ReconcileFailed", &note, "Reconcile")
                    .await;
            }
        }
    }
    result
}

/// Observe, plan, execute.
async fn apply(
    worker: &Worker,
    key: &WorkerKey,
    context: &Context,
) -> Result<(Action, Outcome), Error> {
    let observed = observe(worker, key, context).await?;
    let plan = plan::plan(worker, key, &observed, &context.settings)?;
    context.executor.execute(worker, key, &plan.steps).await?;
    if let Some(certificates) = &context.certificates {
        certificates.sync(worker, key, &observed.lost).await?;
    }
    Ok((Action::requeue(plan.requeue), plan.outcome))
}

/// What the plan needs: the references read now, and the caches' state.
async fn observe(worker: &Worker, key: &WorkerKey, context: &Context) -> Result<Observed, Error> {
    let sources = resolve::fetch(&context.client, &key.namespace, &worker.spec).await?;
    let artifact = context
        .artifacts
        .check(&context.client, &key.namespace, &worker.spec)
        .await?;
    let (lost, missing_services, policy, dispatch) = {
        let index = lock(&context.index);
        let lost = worker
            .claim()
            .map(|claim| index.routes().lost(&claim))
            .unwrap_or_default();
        let policy = index.policies().apply(&key.namespace, &worker.spec.limits);
        let dispatch = dispatch_consent(
            key,
            &worker.spec,
            context.namespaces.as_ref(),
            index.policies(),
        );
        (
            lost,
            missing_services(key, &worker.spec, &index),
            policy,
            dispatch,
        )
    };
    Ok(Observed {
        sources,
        artifact,
        lost,
        missing_services,
        dispatch,
        policy,
        nodes: Arc::clone(&context.nodes.borrow()),
        bundles: bundles_of(key, &context.bundles),
        now: Timestamp::now(),
    })
}

/// `key`'s service bindings that name a Worker the index does not hold
/// (not made yet, deleted, or of another installation's class).
fn missing_services(
    key: &WorkerKey,
    spec: &WorkerSpec,
    index: &WorkerIndex,
) -> Vec<MissingService> {
    spec.bindings
        .iter()
        .filter_map(|binding| Some((binding, binding.service.as_ref()?)))
        .filter(|(_, service)| !index.contains(&WorkerKey::new(&key.namespace, &service.name)))
        .map(|(binding, service)| MissingService {
            binding: binding.name.clone(),
            worker: service.name.clone(),
        })
        .collect()
}

/// Which namespaces `key`'s dispatch namespace bindings name agreed to be
/// dispatched into from its namespace: their Namespace carries the label
/// `dispatch.isolane.dev/<key's namespace>: "true"` in `namespaces`, or a
/// TenantPolicy selecting them names its namespace in `dispatch.from` (a
/// namespace not seen has not agreed).
fn dispatch_consent(
    key: &WorkerKey,
    spec: &WorkerSpec,
    namespaces: Option<&Store<PartialObjectMeta<Namespace>>>,
    policies: &crate::policy::TenantPolicies,
) -> DispatchConsent {
    let mut consent = DispatchConsent::default();
    for binding in &spec.bindings {
        let Some(dispatch) = &binding.dispatch_namespace else {
            continue;
        };
        let target = &dispatch.namespace;
        let labels = namespaces
            .and_then(|store| store.get(&ObjectRef::new(target)))
            .and_then(|namespace| namespace.metadata.labels.clone())
            .unwrap_or_default();
        if isolane_worker::dispatch::consents(&labels, &key.namespace)
            || policies.dispatch_consent(target, &key.namespace).is_some()
        {
            consent.consented.insert(target.clone());
        } else {
            consent.refused.push(RefusedDispatch {
                binding: binding.name.clone(),
                namespace: target.clone(),
            });
        }
    }
    consent
}

/// The stored bundle Secrets that may be `key`'s, by name (its revisions'
/// names share a prefix; the one Secret of an operator from before
/// per-revision Secrets has its own name): the plan reads only these, and
/// a copy of the whole store for each reconcile, read twice, was O(n) per
/// Worker.
fn bundles_of(
    key: &WorkerKey,
    bundles: &Store<PartialObjectMeta<Secret>>,
) -> Vec<Arc<PartialObjectMeta<Secret>>> {
    let prefix = Bundle::revision_secret_name(&key.namespace, &key.name, "");
    let legacy = Bundle::secret_name(&key.namespace, &key.name);
    bundles.state_filter(|secret| {
        secret
            .metadata
            .name
            .as_deref()
            .is_some_and(|name| name.starts_with(&prefix) || name == legacy)
    })
}

async fn cleanup(worker: &Worker, key: &WorkerKey, context: &Context) -> Result<Action, Error> {
    delete_alarms(worker, key, context).await?;
    if let Some(certificates) = &context.certificates {
        certificates.cleanup(key).await?;
    }
    let bundles = context.executor.list_bundles().await?;
    for name in plan::cleanup(key, &bundles) {
        if let Err(error) = context.executor.delete_bundle(key, &name).await {
            context
                .executor
                .warn(worker, "BundleDeleteFailed", &error.to_string(), "Cleanup")
                .await;
            return Err(error);
        }
    }
    context.executor.metrics().forget(key);
    Ok(Action::await_change())
}

/// Deletes the deleted Worker's Durable Object alarms: no process would
/// deliver them, and every alarm loop would claim and give them back at
/// each look. Their objects' storage stays (a Worker made again with the
/// name finds it). A store that does not answer fails the cleanup, which
/// is retried: the Worker goes once its alarms have.
async fn delete_alarms(worker: &Worker, key: &WorkerKey, context: &Context) -> Result<(), Error> {
    let Some(store) = &context.store else {
        return Ok(());
    };
    match store.delete_worker_alarms(&key.namespace, &key.name).await {
        Ok(deleted) => {
            if deleted > 0 {
                info!(worker.id = %key, deleted, "deleted the Worker's Durable Object alarms");
            }
            Ok(())
        }
        Err(source) => {
            let error = Error::DeleteAlarms {
                worker_id: key.to_string(),
                source,
            };
            context
                .executor
                .warn(worker, "AlarmDeleteFailed", &error.to_string(), "Cleanup")
                .await;
            Err(error)
        }
    }
}

// === error policy ===

/// Retries failed reconciles with a per-Worker exponential backoff: 0.5 s
/// doubling to 5 min; an optimistic-concurrency conflict (409) is retried after
/// 100 ms the first three times.
pub fn error_policy(worker: Arc<Worker>, error: &Error, context: Arc<Context>) -> Action {
    let Some(key) = worker.key() else {
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
}
