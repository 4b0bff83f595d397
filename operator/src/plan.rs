//! What a reconcile decides, without I/O: from a Worker and what was
//! observed for it ([`Observed`]), the steps that bring the cluster to what
//! the Worker says ([`Plan`]). [`crate::executor`] carries them out.
//!
//! 1. Resolve the script and env from the references read; check the syntax.
//! 2. Decide the routes (the ones older Workers hold are left out).
//! 3. Build the bundle of the revision; apply its Secret unless the store
//!    holds it with the same digest.
//! 4. Resolve the traffic split and collect old revisions
//!    ([`crate::revisions`]); delete the Secrets beyond the history once the
//!    latest is written.
//! 5. The status and its conditions; a Warning event for each failing
//!    condition that changed; the status write only when it changed.
//!
//! While a reference is missing or the script does not parse, the last good
//! revision keeps serving: no bundle is written and `status.revision` stays.

mod conditions;

use std::sync::Arc;
use std::time::Duration;

use isolane_crds::{
    ConditionStatus, ConditionType, ReplicaPlacement, RevisionStatus, Worker, WorkerSpec,
    WorkerStatus,
};
use isolane_placement::NodeSet;
use isolane_worker::traffic::{self, TrafficError};
use isolane_worker::{Bundle, Route};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::PartialObjectMeta;

use crate::Error;
use crate::artifact::ArtifactCheck;
use crate::bundle::{bundle_secret, digest};
use crate::metrics::Outcome;
use crate::resolve::{self, Sources};
use crate::revisions::{self, Stored};
use crate::routes::{Holder, WorkerKey};
use crate::script::{self, ScriptKind};
use crate::status::{ConditionUpdate, DesiredStatus, Revisions, Shown, reason};
use conditions::{
    Conditions, Links, RouteDecision, invalid_conditions, missing_reference_conditions,
    services_condition, serving_conditions,
};
pub use conditions::{DispatchConsent, MissingService, RefusedDispatch};

/// What a reconcile observed for one Worker before deciding.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The ConfigMaps and Secrets the Worker references, as read.
    pub sources: Sources,
    /// The verdict on `spec.bundle`, when it has one.
    pub artifact: Option<ArtifactCheck>,
    /// The routes it declares that other Workers hold, and who holds them.
    pub lost: Vec<(Route, Holder)>,
    /// Its service bindings that name a Worker the namespace does not have.
    pub missing_services: Vec<MissingService>,
    /// Which namespaces its dispatch namespace bindings name agreed.
    pub dispatch: DispatchConsent,
    /// Its limits and quota under its namespace's tenant policies, and
    /// the limits it sets above their ceilings (`policy.rs`).
    pub policy: crate::policy::Verdict,
    /// The schedulable runtime nodes.
    pub nodes: Arc<NodeSet>,
    /// The bundle Secrets (metadata) in the operator namespace, as the store
    /// holds them.
    pub bundles: Vec<Arc<PartialObjectMeta<Secret>>>,
    /// When the decisions are made.
    pub now: Timestamp,
}

/// What stays the same from one reconcile to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Namespace of the bundle Secrets.
    pub namespace: String,
    /// Requeue of a Worker with a missing reference.
    pub missing_reference_retry: Duration,
    /// Periodic re-reconcile.
    pub resync: Duration,
}

/// One step of a plan, in the order the executor takes them; it stops at
/// the first that fails.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Server-side apply this bundle Secret.
    ApplyBundle(Secret),
    /// Delete this bundle Secret (gone already is fine).
    DeleteBundle(String),
    /// Set the Worker's condition gauges (in [`ConditionType::ALL`] order).
    RecordConditions([ConditionStatus; ConditionType::COUNT]),
    /// Publish a Warning event on the Worker (a failure to publish is not an error).
    Warn(Warning),
    /// Server-side apply this status on the status subresource.
    WriteStatus(DesiredStatus),
}

/// A Warning event on the Worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The failing condition's reason.
    pub reason: String,
    /// Its message.
    pub note: String,
}

/// What a reconcile of a Worker does.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// What the reconcile counts as.
    pub outcome: Outcome,
    /// When to reconcile again without an event.
    pub requeue: Duration,
}

/// The plan for `worker` (named `key`) given what was `observed`.
pub fn plan(
    worker: &Worker,
    key: &WorkerKey,
    observed: &Observed,
    settings: &Settings,
) -> Result<Plan, Error> {
    let spec = &worker.spec;
    let routes = RouteDecision::new(&spec.routes, &observed.lost);
    let links = || Links {
        routes: routes.condition(),
        services: services_condition(
            spec,
            &key.namespace,
            &observed.missing_services,
            &observed.dispatch.refused,
        ),
    };
    let stored = revisions::stored(key, observed.bundles.iter().map(AsRef::as_ref));
    let mut shown = Shown {
        revision: None,
        url: crate::status::url(&routes.admitted),
        placement: placement(&observed.nodes, key, spec.replicas),
        revisions: Revisions::default(),
    };
    // The revision being served stays the last good one until a new bundle is written.
    let served = worker
        .status
        .as_ref()
        .and_then(|status| status.revision.clone());

    let not_ready = |conditions: Conditions, mut shown: Shown, requeue| {
        let rollout = rollout(worker, key, &stored, served.as_deref(), false, observed.now);
        shown.revision.clone_from(&served);
        shown.revisions = rollout.revisions;
        Plan {
            steps: status_steps(worker, shown, &conditions, observed.now),
            outcome: Outcome::NotReady,
            requeue,
        }
    };
    let resolved = match resolve::resolve(&key.namespace, spec, &observed.sources) {
        Ok(resolved) => resolved,
        Err(missing) => {
            let conditions = missing_reference_conditions(&missing, links());
            return Ok(not_ready(
                conditions,
                shown,
                settings.missing_reference_retry,
            ));
        }
    };
    let artifact = match &observed.artifact {
        None => None,
        Some(ArtifactCheck::Valid(source)) => Some(source.clone()),
        Some(ArtifactCheck::Refused { reason, message }) => {
            let conditions = invalid_conditions(reason, message.clone(), message.clone(), links());
            return Ok(not_ready(
                conditions,
                shown,
                settings.missing_reference_retry,
            ));
        }
    };
    let script = artifact.is_none().then_some(resolved.script.as_str());
    let kind = match admit(spec, script) {
        Ok(kind) => kind,
        Err((reason, message, detail)) => {
            let conditions = invalid_conditions(reason, message, detail, links());
            return Ok(not_ready(conditions, shown, settings.resync));
        }
    };
    let applied = &observed.policy.applied;
    let mut bundle = bundle_of(key, resolved, spec, applied.limits, routes.admitted.clone())
        .with_dispatch_consent(observed.dispatch.consented.clone())
        .with_cpu_quota(applied.cpu_ms_per_second);
    if let Some(source) = artifact {
        bundle = bundle.with_artifact(source);
    }
    let mut steps = Vec::new();
    let secret = bundle_secret(&settings.namespace, key, &bundle)?;
    if !is_stored(&secret, &observed.bundles) {
        steps.push(Step::ApplyBundle(secret));
    }
    let rollout = rollout(
        worker,
        key,
        &stored,
        Some(&bundle.revision),
        true,
        observed.now,
    );
    steps.extend(rollout.delete.into_iter().map(Step::DeleteBundle));

    let all_lost = routes.declared > 0 && routes.admitted.is_empty();
    let mut conditions = serving_conditions(
        all_lost,
        &bundle.revision,
        rollout.unapplied.as_ref(),
        kind,
        links(),
    );
    let violated = conditions::policy_violation(&mut conditions, observed.policy.message());
    shown.revision = Some(bundle.revision.clone());
    shown.revisions = rollout.revisions;
    steps.extend(status_steps(worker, shown, &conditions, observed.now));
    Ok(Plan {
        steps,
        outcome: if all_lost || violated {
            Outcome::NotReady
        } else {
            Outcome::Ready
        },
        requeue: settings.resync,
    })
}

/// The script's kind, or why the Worker cannot become a bundle: its
/// condition reason, message and detail. The webhook refuses bad settings
/// already; a Worker applied without it is refused here, before any bundle
/// is written. A bundle named by digest (`script` is `None`) was parsed
/// when it was pulled (crate::artifact): its main is an ES module.
fn admit(
    spec: &WorkerSpec,
    script: Option<&str>,
) -> Result<ScriptKind, (&'static str, String, String)> {
    let kind = match script {
        None => ScriptKind::Module,
        Some(script) => script::check(script).map_err(|syntax| {
            (
                reason::SYNTAX_ERROR,
                format!("the script does not parse: {syntax}"),
                syntax.to_string(),
            )
        })?,
    };
    isolane_worker::compat::resolve(
        spec.compatibility_date.as_deref(),
        &spec.compatibility_flags,
    )
    .map_err(|error| {
        (
            reason::INVALID_COMPATIBILITY,
            format!("the compatibility settings are refused: {error}"),
            error.to_string(),
        )
    })?;
    isolane_worker::check_bindings(spec.env.iter().map(|var| var.name.as_str()), &spec.bindings)
        .map_err(|error| {
            (
                reason::INVALID_BINDINGS,
                format!("the bindings are refused: {error}"),
                error.to_string(),
            )
        })?;
    isolane_worker::queue::check_consumers(&spec.queue_consumers).map_err(|error| {
        (
            reason::INVALID_BINDINGS,
            format!("spec.queueConsumers are refused: {error}"),
            error.to_string(),
        )
    })?;
    Ok(kind)
}

/// The bundle of `key`'s spec with its resolved script and env, its
/// `limits` (the spec's under the tenant policies), serving the `admitted`
/// routes.
fn bundle_of(
    key: &WorkerKey,
    resolved: resolve::Resolved,
    spec: &WorkerSpec,
    limits: isolane_worker::Limits,
    admitted: Vec<Route>,
) -> Bundle {
    Bundle::new(
        key.to_string(),
        resolved.script,
        resolved.env,
        limits,
        admitted,
    )
    .with_allowed_hosts(
        spec.egress
            .as_ref()
            .map(|egress| egress.allowed_hosts.clone())
            .unwrap_or_default(),
    )
    .with_compatibility(
        spec.compatibility_date.clone(),
        spec.compatibility_flags.clone(),
    )
    .with_bindings(spec.bindings.clone())
    .with_queue_consumers(spec.queue_consumers.clone())
    .with_json_env(resolved.json)
}

/// The bundle Secrets a deleted Worker leaves behind, to delete: every
/// revision's, and the one Secret of an operator from before per-revision
/// Secrets.
pub fn cleanup<'a>(
    key: &WorkerKey,
    bundles: impl IntoIterator<Item = &'a PartialObjectMeta<Secret>>,
) -> Vec<String> {
    let mut names: Vec<String> = revisions::stored(key, bundles)
        .into_iter()
        .map(|stored| stored.secret)
        .collect();
    let legacy = Bundle::secret_name(&key.namespace, &key.name);
    if !names.contains(&legacy) {
        names.push(legacy);
    }
    names
}

/// True when the store holds `secret` with the same digest.
fn is_stored(secret: &Secret, bundles: &[Arc<PartialObjectMeta<Secret>>]) -> bool {
    let wanted = digest(&secret.metadata);
    wanted.is_some()
        && bundles.iter().any(|stored| {
            stored.metadata.name == secret.metadata.name
                && stored.metadata.namespace == secret.metadata.namespace
                && digest(&stored.metadata) == wanted
        })
}

/// The status steps: the condition gauges, then — when the status changes —
/// a Warning for each failing condition that changed and the status write.
fn status_steps(
    worker: &Worker,
    shown: Shown,
    conditions: &[ConditionUpdate],
    now: Timestamp,
) -> Vec<Step> {
    let current = worker.status.as_ref();
    let desired = DesiredStatus::new(current, worker.metadata.generation, shown, conditions, now);
    let statuses = ConditionType::ALL.map(|type_| {
        conditions
            .iter()
            .find(|condition| condition.type_ == type_)
            .map_or(ConditionStatus::Unknown, |condition| condition.status)
    });
    let mut steps = vec![Step::RecordConditions(statuses)];
    if desired.is_current(current) {
        return steps;
    }
    steps.extend(warnings(current, conditions).map(Step::Warn));
    steps.push(Step::WriteStatus(desired));
    steps
}

/// A Warning for each failing condition whose reason or message changed
/// since the `current` status (so a Worker stuck on one problem does not
/// repeat it on every resync).
fn warnings<'a>(
    current: Option<&'a WorkerStatus>,
    conditions: &'a [ConditionUpdate],
) -> impl Iterator<Item = Warning> + 'a {
    conditions
        .iter()
        .filter(|condition| condition.status == ConditionStatus::False)
        .filter(move |condition| {
            !current.is_some_and(|status| {
                status.conditions.iter().any(|existing| {
                    existing.type_ == condition.type_.as_str()
                        && existing.status == condition.status.as_str()
                        && existing.reason == condition.reason
                        && existing.message == condition.message
                })
            })
        })
        // Ready=False repeats the cause already reported by another condition.
        .filter(|condition| {
            condition.type_ != ConditionType::Ready
                || condition.reason == reason::REFERENCE_NOT_FOUND
        })
        .map(|condition| Warning {
            reason: condition.reason.to_owned(),
            note: condition.message.clone(),
        })
}

/// The split and revision history of a reconcile.
struct Rollout {
    revisions: Revisions,
    /// Secrets beyond the history (only once the latest is written).
    delete: Vec<String>,
    /// Why `spec.traffic` could not be applied, if it could not.
    unapplied: Option<TrafficError>,
}

/// `spec.traffic` resolved against the revisions kept (the previous split
/// stays, with the reason, when it cannot be), and the Secrets beyond the
/// history (only once the latest revision is written: `latest_written`).
fn rollout(
    worker: &Worker,
    key: &WorkerKey,
    stored: &[Stored],
    latest: Option<&str>,
    latest_written: bool,
    now: Timestamp,
) -> Rollout {
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
        stored,
        latest,
        latest_written,
        &traffic,
        &worker.spec.traffic,
        &previous,
        worker.spec.revision_history_limit,
        now,
    );
    Rollout {
        revisions: Revisions {
            traffic,
            revisions: keep_reported_creation(worker, plan.statuses),
        },
        delete: if latest_written {
            plan.delete
        } else {
            Vec::new()
        },
        unapplied,
    }
}

/// `revisions` with the creation time the status already reports for a
/// revision it lists: the first status of a revision gives the time it was
/// written (to the nanosecond), later ones would give its Secret's
/// creation time (whole seconds), and that difference alone rewrote every
/// Worker's status once more (at the next reconcile, or after a restart).
fn keep_reported_creation(
    worker: &Worker,
    mut revisions: Vec<RevisionStatus>,
) -> Vec<RevisionStatus> {
    let reported = worker
        .status
        .as_ref()
        .map_or(&[][..], |status| status.revisions.as_slice());
    for revision in &mut revisions {
        let earlier = reported
            .iter()
            .find(|earlier| earlier.revision == revision.revision && earlier.created.is_some());
        if let Some(earlier) = earlier {
            revision.created.clone_from(&earlier.created);
        }
    }
    revisions
}

/// The replicas' nodes and threads, by the shared placement function.
fn placement(nodes: &NodeSet, key: &WorkerKey, replicas: i32) -> Vec<ReplicaPlacement> {
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

#[cfg(test)]
mod tests;
