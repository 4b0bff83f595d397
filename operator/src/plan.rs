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
    let mut bundle = bundle_of(key, resolved, spec, routes.admitted.clone())
        .with_dispatch_consent(observed.dispatch.consented.clone());
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
    let conditions = serving_conditions(
        all_lost,
        &bundle.revision,
        rollout.unapplied.as_ref(),
        kind,
        links(),
    );
    shown.revision = Some(bundle.revision.clone());
    shown.revisions = rollout.revisions;
    steps.extend(status_steps(worker, shown, &conditions, observed.now));
    Ok(Plan {
        steps,
        outcome: if all_lost {
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

/// The bundle of `key`'s spec with its resolved script and env, serving
/// the `admitted` routes.
fn bundle_of(
    key: &WorkerKey,
    resolved: resolve::Resolved,
    spec: &WorkerSpec,
    admitted: Vec<Route>,
) -> Bundle {
    Bundle::new(
        key.to_string(),
        resolved.script,
        resolved.env,
        spec.limits,
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
mod tests {
    use std::collections::BTreeMap;

    use isolane_crds::{ConfigMapKeyRef, ScriptFrom};
    use isolane_placement::Node;
    use isolane_worker::{REVISION_ANNOTATION, WORKER_ID_ANNOTATION};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;
    use kube::core::PartialObjectMetaExt;

    use super::*;
    use crate::fixtures;

    const SCRIPT: &str = "export default { fetch() { return new Response('hi') } }";

    fn settings() -> Settings {
        Settings {
            namespace: "isolane-system".into(),
            missing_reference_retry: Duration::from_secs(60),
            resync: Duration::from_secs(600),
        }
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn worker(script: &str, hosts: &[&str]) -> Worker {
        fixtures::worker("apps", "hello", 1, fixtures::spec(Some(script), hosts))
    }

    fn key() -> WorkerKey {
        WorkerKey::new("apps", "hello")
    }

    fn observed() -> Observed {
        Observed {
            artifact: None,
            sources: Sources::default(),
            lost: Vec::new(),
            missing_services: Vec::new(),
            dispatch: DispatchConsent::default(),
            nodes: Arc::new(NodeSet::new(vec![Node::new("node-1", 2)])),
            bundles: Vec::new(),
            now: now(),
        }
    }

    /// The store's view of a Secret the executor applied.
    fn stored(secret: &Secret) -> Arc<PartialObjectMeta<Secret>> {
        let mut metadata = secret.metadata.clone();
        metadata.creation_timestamp = Some(Time(now()));
        Arc::new(metadata.into_response_partial())
    }

    /// An old revision's Secret, created `age` seconds before [`now`].
    fn old_revision(revision: &str, age: i64) -> Arc<PartialObjectMeta<Secret>> {
        let metadata = ObjectMeta {
            name: Some(Bundle::revision_secret_name("apps", "hello", revision)),
            namespace: Some("isolane-system".into()),
            annotations: Some(BTreeMap::from([
                (WORKER_ID_ANNOTATION.to_owned(), "apps/hello".to_owned()),
                (REVISION_ANNOTATION.to_owned(), revision.to_owned()),
            ])),
            creation_timestamp: Some(Time(
                now()
                    .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(age))
                    .unwrap(),
            )),
            ..ObjectMeta::default()
        };
        Arc::new(metadata.into_response_partial())
    }

    fn written_status(plan: &Plan) -> &WorkerStatus {
        plan.steps
            .iter()
            .find_map(|step| match step {
                Step::WriteStatus(desired) => Some(&desired.status),
                _ => None,
            })
            .expect("the plan writes the status")
    }

    fn condition<'a>(status: &'a WorkerStatus, type_: &str) -> (&'a str, &'a str) {
        let condition = status.conditions.iter().find(|c| c.type_ == type_).unwrap();
        (condition.status.as_str(), condition.reason.as_str())
    }

    /// The bundle a Secret the plan applies holds.
    fn bundle_in(secret: &Secret) -> Bundle {
        let data = secret.data.as_ref().unwrap();
        serde_json::from_slice(&data[isolane_worker::BUNDLE_KEY].0).unwrap()
    }

    fn applied(plan: &Plan) -> Option<&Secret> {
        plan.steps.iter().find_map(|step| match step {
            Step::ApplyBundle(secret) => Some(secret),
            _ => None,
        })
    }

    #[test]
    fn a_new_worker_gets_its_bundle_then_a_ready_status() {
        let worker = worker(SCRIPT, &["hello.example.com"]);
        let plan = plan(&worker, &key(), &observed(), &settings()).unwrap();
        assert_eq!(plan.outcome, Outcome::Ready);
        assert_eq!(plan.requeue, settings().resync);
        let secret = applied(&plan).expect("the bundle is applied");
        assert!(
            matches!(plan.steps[0], Step::ApplyBundle(_)),
            "bundle first"
        );
        assert!(
            matches!(plan.steps.last(), Some(Step::WriteStatus(_))),
            "status last"
        );
        let revision = &secret.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION];
        let status = written_status(&plan);
        assert_eq!(status.revision.as_ref(), Some(revision));
        assert_eq!(status.url.as_deref(), Some("http://hello.example.com/"));
        assert_eq!(condition(status, "Ready"), ("True", reason::BUNDLE_READY));
        assert_eq!(condition(status, "ScriptValid"), ("True", reason::PARSED));
        assert_eq!(
            condition(status, "RoutesAdmitted"),
            ("True", reason::ADMITTED)
        );
        assert_eq!(
            condition(status, "ServicesBound"),
            ("True", reason::SERVICES_FOUND)
        );
        assert_eq!(status.placement.len(), 1);
        assert_eq!(status.placement[0].node, "node-1");
        assert_eq!(status.revisions.len(), 1);
        assert_eq!(&status.revisions[0].revision, revision);
        assert!(
            plan.steps.contains(&Step::RecordConditions(
                [ConditionStatus::True; ConditionType::COUNT]
            )),
            "{:?}",
            plan.steps
        );
    }

    #[test]
    fn a_binding_to_a_missing_worker_is_served_and_reported_until_it_exists() {
        let mut worker = worker(SCRIPT, &["hello.example.com"]);
        worker.spec.bindings = vec![
            isolane_worker::Binding::service("AUTH", "auth", None),
            isolane_worker::Binding::service("RENDER", "render", Some("Renderer")),
        ];
        let missing = Observed {
            missing_services: vec![MissingService {
                binding: "AUTH".into(),
                worker: "auth".into(),
            }],
            ..observed()
        };
        let plan_missing = plan(&worker, &key(), &missing, &settings()).unwrap();
        // Admitted: the bundle is written and the Worker serves.
        assert_eq!(plan_missing.outcome, Outcome::Ready);
        assert!(applied(&plan_missing).is_some());
        let status = written_status(&plan_missing);
        assert_eq!(condition(status, "Ready"), ("True", reason::BUNDLE_READY));
        assert_eq!(
            condition(status, "ServicesBound"),
            ("False", reason::SERVICE_NOT_FOUND)
        );
        let message = &status
            .conditions
            .iter()
            .find(|c| c.type_ == "ServicesBound")
            .unwrap()
            .message;
        assert_eq!(
            message,
            "binding AUTH names Worker auth, which does not exist in namespace apps; \
             calls through it fail until it does"
        );
        assert!(plan_missing.steps.contains(&Step::Warn(Warning {
            reason: reason::SERVICE_NOT_FOUND.into(),
            note: message.clone(),
        })));

        // Once it exists, the same Worker reports both bindings found.
        let found = plan(&worker, &key(), &observed(), &settings()).unwrap();
        let status = written_status(&found);
        assert_eq!(
            condition(status, "ServicesBound"),
            ("True", reason::SERVICES_FOUND)
        );
        let message = &status.conditions[3].message;
        assert_eq!(
            message,
            "2 of 2 service bindings name a Worker of this namespace"
        );
    }

    #[test]
    fn a_dispatch_namespace_that_did_not_agree_is_reported_and_left_out_of_the_bundle() {
        let mut worker = worker(SCRIPT, &["hello.example.com"]);
        worker.spec.bindings = vec![
            isolane_worker::Binding::dispatch_namespace("A", "cust-a"),
            isolane_worker::Binding::dispatch_namespace("B", "cust-b"),
        ];
        let one_refused = Observed {
            dispatch: DispatchConsent {
                consented: ["cust-a".to_owned()].into(),
                refused: vec![RefusedDispatch {
                    binding: "B".into(),
                    namespace: "cust-b".into(),
                }],
            },
            ..observed()
        };
        let refused = plan(&worker, &key(), &one_refused, &settings()).unwrap();
        assert_eq!(refused.outcome, Outcome::Ready);
        let bundle = bundle_in(applied(&refused).unwrap());
        assert_eq!(bundle.dispatch_consent, ["cust-a".to_owned()].into());
        let status = written_status(&refused);
        assert_eq!(
            condition(status, "ServicesBound"),
            ("False", reason::DISPATCH_NOT_ALLOWED)
        );
        let message = &status.conditions[3].message;
        assert_eq!(
            message,
            "binding B names dispatch namespace cust-b, which has not agreed: its Namespace \
             lacks the label dispatch.isolane.dev/apps=true (set by a cluster admin); calls into \
             it are refused until it has it"
        );
        // Once it agrees: a new revision (the consent is part of it).
        let agreed = Observed {
            dispatch: DispatchConsent {
                consented: ["cust-a".to_owned(), "cust-b".to_owned()].into(),
                refused: Vec::new(),
            },
            ..observed()
        };
        let agreed = plan(&worker, &key(), &agreed, &settings()).unwrap();
        let status = written_status(&agreed);
        assert_eq!(
            condition(status, "ServicesBound"),
            ("True", reason::SERVICES_FOUND)
        );
        assert_eq!(
            status.conditions[3].message,
            "0 of 0 service bindings name a Worker of this namespace; 2 of 2 dispatch namespaces agreed"
        );
        let before = bundle_in(applied(&refused).unwrap());
        let after = bundle_in(applied(&agreed).unwrap());
        assert_ne!(before.revision, after.revision);
    }
    #[test]
    fn a_json_binding_reaches_the_bundle_as_json_text() {
        let mut worker = worker(SCRIPT, &["hello.example.com"]);
        worker.spec.env = vec![isolane_crds::EnvVar {
            name: "CONFIG".into(),
            value: None,
            value_from: None,
            json: Some(serde_json::json!({ "retries": 3, "hosts": ["a"] })),
        }];
        let plan = plan(&worker, &key(), &observed(), &settings()).unwrap();
        let secret = applied(&plan).expect("the bundle is applied");
        let data = &secret.data.as_ref().unwrap()[isolane_worker::BUNDLE_KEY].0;
        let bundle: Bundle = serde_json::from_slice(data).unwrap();
        assert_eq!(bundle.json_env["CONFIG"], r#"{"hosts":["a"],"retries":3}"#);
        assert!(bundle.env.is_empty(), "not a text binding");
    }

    #[test]
    fn a_current_worker_needs_no_write() {
        let mut worker = worker(SCRIPT, &["hello.example.com"]);
        let first = plan(&worker, &key(), &observed(), &settings()).unwrap();
        let mut observed = observed();
        observed.bundles.push(stored(applied(&first).unwrap()));
        worker.status = Some(written_status(&first).clone());
        let again = plan(&worker, &key(), &observed, &settings()).unwrap();
        assert_eq!(
            again.steps,
            [Step::RecordConditions(
                [ConditionStatus::True; ConditionType::COUNT]
            )]
        );
        assert_eq!(again.outcome, Outcome::Ready);
    }

    #[test]
    fn a_stored_bundle_does_not_change_the_reported_creation_time() {
        // Written at a time with nanoseconds; its Secret says whole seconds.
        let mut worker = worker(SCRIPT, &["hello.example.com"]);
        let mut at_write = observed();
        at_write.now = now() + std::time::Duration::from_millis(250);
        let first = plan(&worker, &key(), &at_write, &settings()).unwrap();
        worker.status = Some(written_status(&first).clone());
        let mut later = observed();
        later.now = now() + std::time::Duration::from_secs(30);
        later.bundles.push(stored(applied(&first).unwrap()));
        let again = plan(&worker, &key(), &later, &settings()).unwrap();
        assert_eq!(
            again.steps,
            [Step::RecordConditions(
                [ConditionStatus::True; ConditionType::COUNT]
            )]
        );
    }

    #[test]
    fn a_syntax_error_keeps_the_served_revision_and_warns() {
        let good = worker(SCRIPT, &[]);
        let first = plan(&good, &key(), &observed(), &settings()).unwrap();
        let served = written_status(&first).clone();
        let mut broken = worker("export default {\n  fetch() {\n    return 1 +\n  }\n}", &[]);
        broken.status = Some(served.clone());
        let mut observed = observed();
        observed.bundles.push(stored(applied(&first).unwrap()));
        let plan = plan(&broken, &key(), &observed, &settings()).unwrap();
        assert_eq!(plan.outcome, Outcome::NotReady);
        assert!(applied(&plan).is_none(), "no bundle for a broken script");
        let status = written_status(&plan);
        assert_eq!(status.revision, served.revision);
        assert_eq!(condition(status, "Ready"), ("False", reason::SYNTAX_ERROR));
        assert_eq!(
            condition(status, "ScriptValid"),
            ("False", reason::SYNTAX_ERROR)
        );
        let warnings: Vec<&Warning> = plan
            .steps
            .iter()
            .filter_map(|step| match step {
                Step::Warn(warning) => Some(warning),
                _ => None,
            })
            .collect();
        assert_eq!(
            warnings.len(),
            1,
            "one warning, not Ready's echo: {warnings:?}"
        );
        assert_eq!(warnings[0].reason, reason::SYNTAX_ERROR);
        assert!(
            warnings[0].note.starts_with("4:3: "),
            "{}",
            warnings[0].note
        );
    }

    #[test]
    fn a_missing_reference_is_retried_and_named() {
        let mut worker = worker(SCRIPT, &[]);
        worker.spec.script = None;
        worker.spec.script_from = Some(ScriptFrom {
            config_map_key_ref: ConfigMapKeyRef {
                name: "code".into(),
                key: "main.js".into(),
            },
        });
        let plan = plan(&worker, &key(), &observed(), &settings()).unwrap();
        assert_eq!(plan.outcome, Outcome::NotReady);
        assert_eq!(plan.requeue, settings().missing_reference_retry);
        assert!(applied(&plan).is_none());
        let status = written_status(&plan);
        assert_eq!(status.revision, None);
        assert_eq!(
            condition(status, "Ready"),
            ("False", reason::REFERENCE_NOT_FOUND)
        );
        assert_eq!(
            condition(status, "ScriptValid"),
            ("Unknown", reason::REFERENCE_NOT_FOUND)
        );
        assert!(plan.steps.contains(&Step::Warn(Warning {
            reason: reason::REFERENCE_NOT_FOUND.to_owned(),
            note: "ConfigMap apps/code not found".to_owned(),
        })));
    }

    #[test]
    fn a_worker_that_lost_every_route_is_not_ready_and_routes_nothing() {
        let worker = worker(SCRIPT, &["shared.example.com"]);
        let mut observed = observed();
        let holder = Holder::OlderWorker(WorkerKey::new("apps", "older"));
        observed.lost = vec![(worker.spec.routes[0].clone(), holder)];
        let plan = plan(&worker, &key(), &observed, &settings()).unwrap();
        assert_eq!(plan.outcome, Outcome::NotReady);
        let secret = applied(&plan).expect("the bundle is still written");
        let json = &secret.data.as_ref().unwrap()[isolane_worker::BUNDLE_KEY].0;
        let bundle: Bundle = serde_json::from_slice(json).unwrap();
        assert!(bundle.routes.is_empty(), "{:?}", bundle.routes);
        let status = written_status(&plan);
        assert_eq!(status.url, None);
        assert_eq!(
            condition(status, "Ready"),
            ("False", reason::ROUTES_CONFLICTED)
        );
        assert_eq!(
            condition(status, "RoutesAdmitted"),
            ("False", reason::ROUTE_CONFLICT)
        );
    }

    #[test]
    fn old_revisions_beyond_the_history_are_deleted_after_the_new_one_is_written() {
        let mut worker = worker(SCRIPT, &[]);
        worker.spec.revision_history_limit = 1;
        let mut observed = observed();
        observed.bundles = vec![
            old_revision("r1", 300),
            old_revision("r2", 200),
            old_revision("r3", 100),
        ];
        let plan = plan(&worker, &key(), &observed, &settings()).unwrap();
        let deleted: Vec<&str> = plan
            .steps
            .iter()
            .filter_map(|step| match step {
                Step::DeleteBundle(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            deleted,
            [
                Bundle::revision_secret_name("apps", "hello", "r2"),
                Bundle::revision_secret_name("apps", "hello", "r1"),
            ]
        );
        let apply = plan
            .steps
            .iter()
            .position(|step| matches!(step, Step::ApplyBundle(_)))
            .unwrap();
        let first_delete = plan
            .steps
            .iter()
            .position(|step| matches!(step, Step::DeleteBundle(_)))
            .unwrap();
        assert!(
            apply < first_delete,
            "deleted only after the new one is written"
        );
    }

    #[test]
    fn a_bundle_by_digest_is_written_when_checked_and_refused_with_its_reason() {
        let reference = format!("registry.example/apps/hello@sha256:{}", "a".repeat(64));
        let mut spec = fixtures::spec(None, &["hello.example.com"]);
        spec.bundle = Some(reference.clone());
        let worker = fixtures::worker("apps", "hello", 1, spec);
        let source = isolane_worker::ArtifactSource {
            reference: reference.clone(),
            username: Some("puller".into()),
            password: Some("secret".into()),
        };
        let valid = Observed {
            artifact: Some(ArtifactCheck::Valid(source.clone())),
            ..observed()
        };
        let written = plan(&worker, &key(), &valid, &settings()).unwrap();
        assert_eq!(written.outcome, Outcome::Ready);
        let secret = applied(&written).expect("the bundle is applied");
        let data = &secret.data.as_ref().unwrap()[isolane_worker::BUNDLE_KEY].0;
        let bundle: Bundle = serde_json::from_slice(data).unwrap();
        assert_eq!(bundle.artifact, Some(source.clone()));
        assert!(bundle.script.is_empty() && bundle.modules.is_none());
        // Another digest is another revision; the credentials are not part of it.
        let other = Bundle::new(
            bundle.worker_id.clone(),
            String::new(),
            Default::default(),
            bundle.limits,
            Vec::new(),
        );
        let one = other.clone().with_artifact(source.clone());
        let rotated = other.clone().with_artifact(isolane_worker::ArtifactSource {
            password: Some("rotated".into()),
            ..source.clone()
        });
        let two = other.with_artifact(isolane_worker::ArtifactSource {
            reference: reference.replace("@sha256:a", "@sha256:b"),
            ..source
        });
        assert_eq!(one.revision, rotated.revision);
        assert_ne!(one.revision, two.revision);

        let refused = Observed {
            artifact: Some(ArtifactCheck::Refused {
                reason: reason::BUNDLE_INVALID,
                message: "the bundle is refused (too_large): …".into(),
            }),
            ..observed()
        };
        let plan = plan(&worker, &key(), &refused, &settings()).unwrap();
        assert_eq!(plan.outcome, Outcome::NotReady);
        assert!(
            applied(&plan).is_none(),
            "a refused bundle is never written"
        );
        assert_eq!(plan.requeue, settings().missing_reference_retry);
        let status = written_status(&plan);
        assert_eq!(
            condition(status, "Ready"),
            ("False", reason::BUNDLE_INVALID)
        );
    }
}
