//! The operator against a real kube-apiserver, as a real process: Workers become
//! bundles and status; updates, references, syntax errors, route conflicts and
//! deletion; the admission webhook registered with the apiserver.
//!
//! Each test starts its own control plane and operator. The operator binary is
//! named by `ISOLANE_OPERATOR_BIN` (`make test-only` sets it).

use std::collections::BTreeMap;
use std::time::Duration;

use isolane_crds::{ConfigMapKeyRef, EnvValueFrom, EnvVar, ScriptFrom, SecretKeyRef, Worker};
use isolane_e2e::certs;
use isolane_e2e::operator::{
    OPERATOR_NAMESPACE, Operator, OperatorOptions, register_mutating_webhook, register_webhook,
};
use isolane_e2e::workers::{
    apply, bundle, condition, has_condition, hello_script, inline_worker, prepare,
    wait_bundle_gone, wait_for_bundle, wait_for_worker, wait_ready,
};
use isolane_testenv::ControlPlane;
use isolane_testenv::wait_until;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};

const NS: &str = "apps";
/// Generous for a loaded 2-core machine; a healthy run takes well under a second per step.
const STEP: Duration = Duration::from_secs(30);

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

async fn start() -> (ControlPlane, tempfile::TempDir, Operator) {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let operator = Operator::start(&cp, dir.path(), &OperatorOptions::default());
    operator.wait_ready(STEP).await;
    (cp, dir, operator)
}

async fn delete_worker(client: &Client, name: &str) {
    Api::<Worker>::namespaced(client.clone(), NS)
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the Worker");
}

async fn wait_worker_gone(client: &Client, name: &str) {
    let api: Api<Worker> = Api::namespaced(client.clone(), NS);
    wait_until(&format!("Worker {name} to be gone"), STEP, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

fn revision(worker: &Worker) -> String {
    worker
        .status
        .as_ref()
        .and_then(|status| status.revision.clone())
        .expect("a Ready Worker has a revision")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_update_and_delete_a_worker() {
    let (cp, _dir, operator) = start().await;
    let client = cp.client();

    // Apply → bundle and Ready, with URL, finalizer and conditions.
    apply(
        &client,
        NS,
        &inline_worker("hello", &hello_script("v1"), &["hello.example.com"]),
    )
    .await;
    let worker = wait_ready(&client, NS, "hello", STEP).await;
    let first = revision(&worker);
    let status = worker.status.as_ref().expect("status");
    assert_eq!(status.url.as_deref(), Some("http://hello.example.com/"));
    assert!(has_condition(
        &worker,
        "ScriptValid",
        "True",
        Some("Parsed")
    ));
    assert!(has_condition(
        &worker,
        "RoutesAdmitted",
        "True",
        Some("Admitted")
    ));
    assert_eq!(
        worker.metadata.finalizers.as_deref(),
        Some(&["isolane.dev/bundle".to_owned()][..])
    );
    let stored = wait_for_bundle(&client, NS, "hello", "to exist", STEP, |_| true).await;
    assert_eq!(stored.worker_id, "apps/hello");
    assert_eq!(stored.revision, first);
    assert!(stored.script.contains("\"v1\""));
    assert_eq!(stored.routes.len(), 1);
    let secret = Api::<Secret>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .get(&isolane_worker::Bundle::revision_secret_name(
            NS, "hello", &first,
        ))
        .await
        .expect("bundle Secret");
    let annotations = secret.metadata.annotations.expect("annotations");
    assert_eq!(annotations["isolane.dev/worker-id"], "apps/hello");
    assert_eq!(annotations["isolane.dev/revision"], first);
    assert_eq!(
        secret.metadata.labels.expect("labels")["isolane.dev/bundle"],
        "true"
    );

    // Update the script → new revision and bundle; lastTransitionTime of Ready kept.
    let ready_since = condition(&worker, "Ready")
        .expect("Ready")
        .last_transition_time
        .clone();
    apply(
        &client,
        NS,
        &inline_worker("hello", &hello_script("v2"), &["hello.example.com"]),
    )
    .await;
    let updated = wait_for_worker(&client, NS, "hello", "to serve v2", STEP, |worker| {
        has_condition(worker, "Ready", "True", None) && revision(worker) != first
    })
    .await;
    let second = revision(&updated);
    let stored = wait_for_bundle(
        &client,
        NS,
        "hello",
        "at the new revision",
        STEP,
        |bundle| bundle.revision == second,
    )
    .await;
    assert!(stored.script.contains("\"v2\""));
    assert_eq!(
        condition(&updated, "Ready")
            .expect("Ready")
            .last_transition_time,
        ready_since,
        "Ready did not flip, so its transition time stays"
    );

    // Someone deletes the bundle Secret: the operator writes it again.
    Api::<Secret>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .delete(
            &isolane_worker::Bundle::revision_secret_name(NS, "hello", &second),
            &DeleteParams::default(),
        )
        .await
        .expect("delete the bundle");
    wait_for_bundle(&client, NS, "hello", "to be rewritten", STEP, |bundle| {
        bundle.revision == second
    })
    .await;

    // Metrics: reconciles counted, Workers by condition, leader.
    let metrics = operator.metrics().await.expect("metrics");
    assert!(
        isolane_e2e::http::metric(
            &metrics,
            "isolane_operator_reconciles_total{result=\"ready\"}"
        )
        .is_some_and(|count| count >= 2.0),
        "{metrics}"
    );
    assert_eq!(
        isolane_e2e::http::metric(
            &metrics,
            "isolane_operator_workers{condition=\"Ready\",status=\"True\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        isolane_e2e::http::metric(&metrics, "isolane_operator_leader"),
        Some(1.0)
    );
    assert!(metrics.contains("isolane_operator_reconcile_duration_seconds_bucket{le=\"0.01\"}"));
    promtool_check(&metrics);

    // Delete → bundle gone, Worker gone (the finalizer was removed).
    delete_worker(&client, "hello").await;
    wait_bundle_gone(&client, NS, "hello", STEP).await;
    wait_worker_gone(&client, "hello").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn referenced_configmaps_and_secrets_are_watched() {
    let (cp, _dir, _operator) = start().await;
    let client = cp.client();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);

    // A Worker whose script ConfigMap and env Secret do not exist yet.
    let mut worker = inline_worker("from-cm", "", &["cm.example.com"]);
    worker.spec.script = None;
    worker.spec.script_from = Some(ScriptFrom {
        config_map_key_ref: ConfigMapKeyRef {
            name: "code".into(),
            key: "index.js".into(),
        },
    });
    worker.spec.env = vec![
        EnvVar {
            name: "GREETING".into(),
            value: Some("hi".into()),
            value_from: None,
            json: None,
        },
        EnvVar {
            name: "TOKEN".into(),
            value: None,
            value_from: Some(EnvValueFrom {
                secret_key_ref: Some(SecretKeyRef {
                    name: "creds".into(),
                    key: "token".into(),
                }),
                config_map_key_ref: None,
            }),
            json: None,
        },
    ];
    apply(&client, NS, &worker).await;
    let missing = wait_for_worker(
        &client,
        NS,
        "from-cm",
        "to report the missing ConfigMap",
        STEP,
        |w| has_condition(w, "Ready", "False", Some("ReferenceNotFound")),
    )
    .await;
    assert_eq!(
        condition(&missing, "Ready").expect("Ready").message,
        "ConfigMap apps/code not found"
    );
    assert!(bundle(&client, NS, "from-cm").await.is_none());

    // Create the ConfigMap: now the Secret is what is missing (no nudge needed).
    let code = |text: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some("code".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("index.js".into(), hello_script(text))])),
        ..ConfigMap::default()
    };
    config_maps
        .create(&PostParams::default(), &code("from a ConfigMap"))
        .await
        .expect("create the ConfigMap");
    wait_for_worker(
        &client,
        NS,
        "from-cm",
        "to report the missing Secret",
        STEP,
        |w| condition(w, "Ready").is_some_and(|c| c.message == "Secret apps/creds not found"),
    )
    .await;

    // Create the Secret without the key, then with it.
    let creds = |key: &str| Secret {
        metadata: ObjectMeta {
            name: Some("creds".into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([(key.to_owned(), "s3cret".to_owned())])),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &creds("other"))
        .await
        .expect("create the Secret");
    wait_for_worker(
        &client,
        NS,
        "from-cm",
        "to report the missing key",
        STEP,
        |w| {
            condition(w, "Ready")
                .is_some_and(|c| c.message == "key \"token\" not found in Secret apps/creds")
        },
    )
    .await;
    secrets
        .replace("creds", &PostParams::default(), &creds("token"))
        .await
        .expect("replace the Secret");
    let ready = wait_ready(&client, NS, "from-cm", STEP).await;
    let first = revision(&ready);
    let stored = wait_for_bundle(&client, NS, "from-cm", "to exist", STEP, |b| {
        b.revision == first
    })
    .await;
    assert!(stored.script.contains("from a ConfigMap"));
    assert_eq!(stored.env["TOKEN"], "s3cret");
    assert_eq!(stored.env["GREETING"], "hi");

    // Change the ConfigMap → new revision and bundle.
    config_maps
        .replace("code", &PostParams::default(), &code("changed"))
        .await
        .expect("replace the ConfigMap");
    let changed = wait_for_worker(
        &client,
        NS,
        "from-cm",
        "to pick up the ConfigMap change",
        STEP,
        |w| has_condition(w, "Ready", "True", None) && revision(w) != first,
    )
    .await;
    let second = revision(&changed);
    let stored = wait_for_bundle(&client, NS, "from-cm", "at the new revision", STEP, |b| {
        b.revision == second
    })
    .await;
    assert!(stored.script.contains("changed"));

    // A broken script in the ConfigMap: ScriptValid=False with line:column; the
    // last good bundle keeps serving.
    let mut broken = code("x");
    broken.data = Some(BTreeMap::from([(
        "index.js".into(),
        "export default {\n  fetch() {\n    return new Response('x'\n  }\n};\n".into(),
    )]));
    config_maps
        .replace("code", &PostParams::default(), &broken)
        .await
        .expect("replace the ConfigMap");
    let invalid = wait_for_worker(
        &client,
        NS,
        "from-cm",
        "to report the syntax error",
        STEP,
        |w| has_condition(w, "ScriptValid", "False", Some("SyntaxError")),
    )
    .await;
    let message = &condition(&invalid, "ScriptValid")
        .expect("ScriptValid")
        .message;
    assert!(message.starts_with("4:3: "), "{message}");
    assert!(has_condition(
        &invalid,
        "Ready",
        "False",
        Some("SyntaxError")
    ));
    assert_eq!(
        revision(&invalid),
        second,
        "the served revision is the last good one"
    );
    assert_eq!(
        bundle(&client, NS, "from-cm")
            .await
            .expect("bundle")
            .revision,
        second
    );

    // A Warning event was recorded for the syntax error.
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    wait_until("a SyntaxError event", STEP, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("SyntaxError")
                    && event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("from-cm")
            })
            .then_some(())
    })
    .await;

    // Unrelated ConfigMaps do not disturb it; deleting the Worker removes the bundle.
    delete_worker(&client, "from-cm").await;
    wait_bundle_gone(&client, NS, "from-cm", STEP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_conflicts_go_to_the_older_worker() {
    let (cp, _dir, _operator) = start().await;
    let client = cp.client();

    apply(
        &client,
        NS,
        &inline_worker("older", &hello_script("older"), &["shared.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "older", STEP).await;
    // Creation timestamps have one-second resolution: make sure "newer" is newer.
    let older: Worker = Api::namespaced(client.clone(), NS)
        .get("older")
        .await
        .expect("older");
    wait_until(
        "the clock to pass the older Worker's creation second",
        STEP,
        || async {
            let created = older.metadata.creation_timestamp.as_ref()?.0;
            (k8s_openapi::jiff::Timestamp::now().as_second() > created.as_second()).then_some(())
        },
    )
    .await;
    apply(
        &client,
        NS,
        &inline_worker(
            "newer",
            &hello_script("newer"),
            &["shared.example.com", "own.example.com"],
        ),
    )
    .await;
    let newer = wait_for_worker(
        &client,
        NS,
        "newer",
        "to lose the shared route",
        STEP,
        |w| has_condition(w, "RoutesAdmitted", "False", Some("RouteConflict")),
    )
    .await;
    let message = &condition(&newer, "RoutesAdmitted")
        .expect("RoutesAdmitted")
        .message;
    assert_eq!(
        message,
        "route shared.example.com/ is held by older Worker apps/older"
    );
    // Ready stays True: it still serves its own route.
    assert!(has_condition(&newer, "Ready", "True", None));
    assert_eq!(
        newer.status.as_ref().and_then(|s| s.url.as_deref()),
        Some("http://own.example.com/")
    );
    let stored = wait_for_bundle(&client, NS, "newer", "to exist", STEP, |_| true).await;
    let hosts: Vec<&str> = stored.routes.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(
        hosts,
        vec!["own.example.com"],
        "the lost route is not in the bundle"
    );
    let older = wait_ready(&client, NS, "older", STEP).await;
    assert!(has_condition(&older, "RoutesAdmitted", "True", None));

    // A third Worker that only wants the shared route is not Ready at all.
    apply(
        &client,
        NS,
        &inline_worker("third", &hello_script("third"), &["shared.example.com"]),
    )
    .await;
    wait_for_worker(
        &client,
        NS,
        "third",
        "to be refused every route",
        STEP,
        |w| has_condition(w, "Ready", "False", Some("RoutesConflicted")),
    )
    .await;

    // The older Worker goes away: the next oldest (newer) takes the route.
    delete_worker(&client, "older").await;
    wait_for_worker(
        &client,
        NS,
        "newer",
        "to take over the shared route",
        STEP,
        |w| has_condition(w, "RoutesAdmitted", "True", None),
    )
    .await;
    wait_for_bundle(&client, NS, "newer", "to carry both routes", STEP, |b| {
        b.routes.len() == 2
    })
    .await;
    // The third Worker is reconciled again (after `newer`, not with it):
    // wait for its condition to name the new holder.
    wait_for_worker(
        &client,
        NS,
        "third",
        "to name newer as the holder",
        STEP,
        |w| condition(w, "RoutesAdmitted").is_some_and(|c| c.message.contains("apps/newer")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_rejects_syntax_errors_and_conflicts_at_apply() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cert = certs::localhost_serving_cert(dir.path());
    let options = OperatorOptions {
        webhook: Some(cert.clone()),
        ..OperatorOptions::default()
    };
    let operator = Operator::start(&cp, dir.path(), &options);
    operator.wait_ready(STEP).await;
    let webhook = operator.webhook.expect("webhook address");
    register_webhook(
        &cp,
        &format!("https://{webhook}/validate-worker"),
        &cert.ca_pem,
    )
    .await;
    register_mutating_webhook(&cp, &format!("https://{webhook}/mutate"), &cert.ca_pem).await;

    let client = cp.client();
    apply(
        &client,
        NS,
        &inline_worker("owner", &hello_script("ok"), &["taken.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "owner", STEP).await;

    // A syntax error is refused by `kubectl apply`, with line:column.
    let broken = manifest(
        "broken",
        "export default {\n  fetch() {\n    return new Response('x'\n  }\n};",
        "free.example.com",
    );
    let output = kubectl_apply(&cp, &broken);
    assert!(
        !output.0,
        "apply of a broken script must fail: {}",
        output.1
    );
    assert!(
        output.1.contains("denied the request")
            && output.1.contains("spec.script: syntax error at 4:3:"),
        "{}",
        output.1
    );

    // A route held by another Worker is refused (the webhook's view may trail the
    // apply of "owner" by a moment, so retry until it answers).
    let conflicting = manifest("claimer", &hello_script("x"), "taken.example.com");
    let message = wait_until(
        "the webhook to refuse the conflicting route",
        STEP,
        || async {
            let (ok, text) = kubectl_apply(&cp, &conflicting);
            assert!(!ok || !text.contains("syntax"), "{text}");
            (!ok).then_some(text)
        },
    )
    .await;
    assert!(
        message.contains("route taken.example.com/ is already claimed by Worker apps/owner"),
        "{message}"
    );

    // A valid Worker passes the webhook.
    let (ok, text) = kubectl_apply(
        &cp,
        &manifest("fine", &hello_script("fine"), "free.example.com"),
    );
    assert!(ok, "{text}");
    wait_ready(&client, NS, "fine", STEP).await;

    // The finalizer comes in the creating write (the mutating webhook): the
    // object the create answers with has it, before any write of the
    // operator's.
    let created = Api::<Worker>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &inline_worker("early", &hello_script("early"), &["early.example.com"]),
        )
        .await
        .expect("create a Worker");
    assert_eq!(
        created.metadata.finalizers.as_deref(),
        Some(&["isolane.dev/bundle".to_owned()][..]),
        "the created object's finalizers"
    );
    wait_ready(&client, NS, "early", STEP).await;
    delete_worker(&client, "early").await;
    wait_worker_gone(&client, "early").await;
}

/// Hosts belong to one namespace: another namespace's claim on a held host
/// (a longer prefix, or a wildcard over it) is reported not admitted when it
/// got in before the webhook, and refused by `kubectl apply` once the webhook
/// answers, naming the owner; a host reserved for a namespace is refused to
/// the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_belong_to_one_namespace() {
    const THIEVES: &str = "thieves";
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS, THIEVES]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cert = certs::localhost_serving_cert(dir.path());
    let options = OperatorOptions {
        webhook: Some(cert.clone()),
        extra_args: vec!["--reserved-host=*.corp.example.com=apps".to_owned()],
        ..OperatorOptions::default()
    };
    let operator = Operator::start(&cp, dir.path(), &options);
    operator.wait_ready(STEP).await;
    let client = cp.client();
    apply(
        &client,
        NS,
        &inline_worker("owner", &hello_script("ok"), &["victim.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "owner", STEP).await;

    // Before the webhook is registered: the claims get in, and are reported.
    let mut thief = inline_worker("thief", &hello_script("gotcha"), &["victim.example.com"]);
    thief.spec.routes[0].path_prefix = "/login".to_owned();
    apply(&client, THIEVES, &thief).await;
    let refused = wait_for_worker(
        &client,
        THIEVES,
        "thief",
        "to be refused the host",
        STEP,
        |w| has_condition(w, "RoutesAdmitted", "False", None),
    )
    .await;
    let message = condition(&refused, "RoutesAdmitted")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("host victim.example.com belongs to namespace apps (Worker apps/owner)"),
        "{message}"
    );
    assert!(has_condition(&refused, "Ready", "False", None));
    assert!(has_condition(
        &wait_ready(&client, NS, "owner", STEP).await,
        "RoutesAdmitted",
        "True",
        None
    ));

    let webhook = operator.webhook.expect("webhook address");
    register_webhook(
        &cp,
        &format!("https://{webhook}/validate-worker"),
        &cert.ca_pem,
    )
    .await;
    let claim = |name: &str, host: &str, prefix: &str| {
        serde_json::to_string(&serde_json::json!({
            "apiVersion": "isolane.dev/v1alpha1",
            "kind": "Worker",
            "metadata": {"name": name, "namespace": THIEVES},
            "spec": {"script": hello_script("x"), "routes": [{"host": host, "pathPrefix": prefix}]},
        }))
        .expect("manifest")
    };
    for (name, host, prefix, owner) in [
        (
            "exact",
            "victim.example.com",
            "/admin",
            "host victim.example.com belongs to namespace apps (Worker apps/owner)",
        ),
        (
            "wildcard",
            "*.example.com",
            "/",
            "host victim.example.com belongs to namespace apps (Worker apps/owner)",
        ),
        (
            "reserved",
            "payroll.corp.example.com",
            "/",
            "host *.corp.example.com is reserved for namespace apps",
        ),
    ] {
        let manifest = claim(name, host, prefix);
        let message = wait_until("the webhook to refuse the claim", STEP, || async {
            let (ok, text) = kubectl_apply(&cp, &manifest);
            (!ok).then_some(text)
        })
        .await;
        assert!(
            message.contains("denied the request") && message.contains(owner),
            "{name}: {message}"
        );
    }
    // Its own hosts, and hosts nobody holds, are fine.
    let (ok, text) = kubectl_apply(&cp, &claim("fine", "thieves.example.net", "/"));
    assert!(ok, "{text}");
}

/// `promtool check metrics` on the exposition (names, units, help), when promtool
/// is installed (hack/install-deps.sh installs it).
fn promtool_check(metrics: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("promtool not installed; skipping the metrics lint");
        return;
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(metrics.as_bytes())
        .expect("write metrics");
    let output = child.wait_with_output().expect("promtool finishes");
    assert!(
        output.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placement_follows_live_runtime_node_leases() {
    use isolane_crds::ReplicaPlacement;
    use isolane_placement::{Node, NodeSet};
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};

    let (cp, _dir, _operator) = start().await;
    let client = cp.client();
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let write = |name: &str, threads: u32, draining: bool, renewed: Timestamp| {
        let leases = leases.clone();
        let lease = isolane_membership::node_lease(
            name,
            OPERATOR_NAMESPACE,
            &[format!("http://127.0.0.1:70{threads:02}")],
            threads,
            draining,
            Duration::from_secs(3600),
            renewed,
        );
        let name = name.to_owned();
        async move {
            leases
                .patch(
                    &name,
                    &PatchParams::apply("isolane-e2e").force(),
                    &Patch::Apply(&lease),
                )
                .await
                .expect("write the node Lease");
        }
    };
    let expected = |nodes: &[(&str, u32)], replicas: usize| -> Vec<ReplicaPlacement> {
        NodeSet::new(
            nodes
                .iter()
                .map(|(name, threads)| Node::new(*name, *threads))
                .collect(),
        )
        .place("apps/placed", replicas)
        .into_iter()
        .map(|a| ReplicaPlacement {
            node: a.node,
            thread: a.thread,
        })
        .collect()
    };
    let placement_is = |want: Vec<ReplicaPlacement>| {
        move |worker: &Worker| {
            has_condition(worker, "Ready", "True", None)
                && worker.status.as_ref().is_some_and(|s| s.placement == want)
        }
    };

    write("node-a", 4, false, Timestamp::now()).await;
    write("node-b", 2, false, Timestamp::now()).await;
    let mut worker = inline_worker("placed", &hello_script("placed"), &["placed.example.com"]);
    worker.spec.replicas = 2;
    apply(&client, NS, &worker).await;
    let want = expected(&[("node-a", 4), ("node-b", 2)], 2);
    assert_eq!(want.len(), 2);
    wait_for_worker(
        &client,
        NS,
        "placed",
        "to be placed on both nodes",
        STEP,
        placement_is(want),
    )
    .await;

    // node-b drains: it takes no Workers.
    write("node-b", 2, true, Timestamp::now()).await;
    let want = expected(&[("node-a", 4)], 2);
    wait_for_worker(
        &client,
        NS,
        "placed",
        "to leave the draining node",
        STEP,
        placement_is(want),
    )
    .await;

    // node-a's Lease lapses (renewed two hours ago, one-hour duration): no live node.
    let stale = Timestamp::now()
        .checked_sub(SignedDuration::from_hours(2))
        .expect("a time two hours ago");
    write("node-a", 4, false, stale).await;
    wait_for_worker(
        &client,
        NS,
        "placed",
        "to have no placement",
        STEP,
        placement_is(Vec::new()),
    )
    .await;
}

fn manifest(name: &str, script: &str, host: &str) -> String {
    let worker = serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"script": script, "routes": [{"host": host, "pathPrefix": "/"}]},
    });
    serde_json::to_string(&worker).expect("manifest")
}

/// `kubectl apply -f -` of `manifest`: (success, stdout + stderr).
fn kubectl_apply(cp: &ControlPlane, manifest: &str) -> (bool, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cp
        .kubectl(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(manifest.as_bytes())
        .expect("write the manifest");
    let output = child.wait_with_output().expect("kubectl finishes");
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}
