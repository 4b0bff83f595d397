//! The plan's tests (`plan.rs`).

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
        policy: crate::policy::Verdict {
            applied: isolane_worker::policy::Applied {
                limits: isolane_worker::Limits::default(),
                cpu_ms_per_second: None,
            },
            violations: Vec::new(),
        },
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
fn the_bundle_carries_the_policy_s_limits_and_quota_and_a_violation_is_reported() {
    let policy: isolane_crds::TenantPolicy = serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1", "kind": "TenantPolicy",
        "metadata": {"name": "free-tier"},
        "spec": {"namespaceSelector": {},
                 "limits": {"ceilings": {"cpuMs": 200}, "defaults": {"cpuMs": 50}},
                 "quotas": {"cpuMsPerSecond": 100}},
    }))
    .unwrap();
    let mut policies = crate::policy::TenantPolicies::default();
    policies.set_policies([policy]);
    let mut worker = worker(SCRIPT, &["hello.example.com"]);
    let under = |worker: &Worker| Observed {
        policy: policies.apply("default", &worker.spec.limits),
        ..observed()
    };
    // No limit set: the default, and the quota.
    let unset = plan(&worker, &key(), &under(&worker), &settings()).unwrap();
    assert_eq!(unset.outcome, Outcome::Ready);
    let bundle = bundle_in(applied(&unset).unwrap());
    assert_eq!(bundle.limits.cpu_ms, 50);
    assert_eq!(bundle.cpu_ms_per_second, Some(100));
    // Over the ceiling (admitted before the policy): held to it, reported.
    worker.spec.limits.cpu_ms = 500;
    let over = plan(&worker, &key(), &under(&worker), &settings()).unwrap();
    assert_eq!(over.outcome, Outcome::NotReady);
    assert_eq!(bundle_in(applied(&over).unwrap()).limits.cpu_ms, 200);
    let status = written_status(&over);
    assert_eq!(
        condition(status, "Ready"),
        ("False", reason::POLICY_VIOLATION)
    );
    assert!(
        status.conditions[0].message.starts_with(
            "spec.limits.cpuMs 500 exceeds 200, the ceiling of TenantPolicy \"free-tier\""
        ),
        "{}",
        status.conditions[0].message
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
         lacks the label dispatch.isolane.dev/apps=true, and no TenantPolicy selecting it has \
         apps in dispatch.from (set by a cluster admin); calls into it are refused until one of \
         them says so"
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
    let bundle = bundle_in(applied(&written).expect("the bundle is applied"));
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
