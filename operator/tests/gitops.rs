//! The Worker in GitOps tools. Argo CD's health check
//! (`deploy/gitops/argocd-health.lua`) run under a real Lua 5.1 interpreter,
//! as Argo CD runs it (a global `obj`, the script returns `hs`): over status
//! fixtures, then over the Workers a real kube-apiserver holds as the
//! operator's reconcile (in this process) writes them. Flux and every other
//! kstatus reader: `kubectl wait --for=condition=Ready` returns once a Worker
//! is Ready, and not while its status is for an older generation.
// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

use std::process::Output;
use std::time::Duration;

use isolane_crds::Worker;
use isolane_operator::config::Config;
use isolane_operator::lifecycle;
use isolane_testenv::{ControlPlane, wait_until};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use mlua::{LuaSerdeExt, SerializeOptions};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const SCRIPT: &str = include_str!("../../deploy/gitops/argocd-health.lua");
const SNIPPET: &str = include_str!("../../deploy/gitops/argocd-cm.yaml");
const KEY: &str = "resource.customizations.health.isolane.dev_Worker";
const APPS: &str = "apps";
const SYSTEM: &str = "isolane-system";
const WAIT: Duration = Duration::from_secs(30);
const GOOD: &str = "export default { fetch() { return new Response('one') } }";

/// `(hs.status, hs.message)` of the health check for `obj`, JSON nulls as nil
/// (as Argo CD hands them over).
fn health(obj: &Value) -> (String, String) {
    let lua = mlua::Lua::new();
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let obj = lua.to_value_with(obj, options).unwrap();
    lua.globals().set("obj", obj).unwrap();
    let hs: mlua::Table = lua
        .load(SCRIPT)
        .set_name("argocd-health.lua")
        .eval()
        .unwrap();
    (hs.get("status").unwrap(), hs.get("message").unwrap())
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, generation: i64) -> Value {
    json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z",
    })
}

/// A Worker of `generation` with `status` (none when null).
fn fixture(generation: i64, status: Value) -> Value {
    json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": "hello", "namespace": APPS, "generation": generation},
        "spec": {"script": GOOD},
        "status": status,
    })
}

fn ready_status(observed: i64) -> Value {
    json!({
        "observedGeneration": observed,
        "url": "http://hello.apps.test/",
        "conditions": [
            condition("Ready", "True", "BundleReady", "", observed),
            condition("ScriptValid", "True", "Parsed", "", observed),
            condition("RoutesAdmitted", "True", "Admitted", "", observed),
        ],
    })
}

#[test]
fn the_health_check_reports_progressing_healthy_and_degraded() {
    let (status, message) = health(&fixture(1, Value::Null));
    assert_eq!(status, "Progressing", "{message}");

    let (status, message) = health(&fixture(1, ready_status(1)));
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("Healthy", "Ready at http://hello.apps.test/")
    );

    let broken = json!({
        "observedGeneration": 3,
        "conditions": [
            condition("Ready", "False", "SyntaxError", "1:7: Unexpected token", 3),
            condition("ScriptValid", "False", "SyntaxError", "1:7: Unexpected token", 3),
        ],
    });
    let (status, message) = health(&fixture(3, broken));
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("Degraded", "Ready=False SyntaxError: 1:7: Unexpected token")
    );

    // Ready, but one route is an older Worker's: not what Git says.
    let mut partial = ready_status(1);
    partial["conditions"][2] = condition(
        "RoutesAdmitted",
        "False",
        "RouteConflict",
        "b.example.com/ is held by apps/older",
        1,
    );
    let (status, message) = health(&fixture(1, partial));
    assert_eq!(status, "Degraded", "{message}");
    assert!(message.contains("RouteConflict"), "{message}");

    let unknown = json!({
        "observedGeneration": 1,
        "conditions": [condition("Ready", "Unknown", "Pending", "pulling", 1)],
    });
    assert_eq!(health(&fixture(1, unknown)).0, "Progressing");
    assert_eq!(
        health(&fixture(1, json!({"observedGeneration": 1}))).0,
        "Progressing"
    );

    let mut deleting = fixture(1, ready_status(1));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(health(&deleting).0, "Progressing");
}

#[test]
fn a_stale_observed_generation_is_progressing() {
    // Ready=True, and Degraded before, for generation 1; the spec is at 2.
    let (status, message) = health(&fixture(2, ready_status(1)));
    assert_eq!(status, "Progressing");
    assert_eq!(
        message,
        "Waiting for the operator to observe generation 2 (status is for generation 1)"
    );
    let broken = json!({
        "observedGeneration": 1,
        "conditions": [condition("Ready", "False", "SyntaxError", "1:7", 1)],
    });
    assert_eq!(health(&fixture(2, broken)).0, "Progressing");
    // status.observedGeneration current but the Ready condition older.
    let mut mixed = ready_status(2);
    mixed["conditions"][0]["observedGeneration"] = json!(1);
    assert_eq!(health(&fixture(2, mixed)).0, "Progressing");
    // No observedGeneration at all: nothing observed yet.
    let mut none = ready_status(1);
    none.as_object_mut().unwrap().remove("observedGeneration");
    assert_eq!(health(&fixture(1, none)).0, "Progressing");
}

#[test]
fn the_argocd_cm_snippet_holds_the_script() {
    let config_map: Value = serde_yaml::from_str(SNIPPET).unwrap();
    let embedded = config_map["data"][KEY].as_str().expect("the health key");
    assert!(
        embedded == SCRIPT,
        "deploy/gitops/argocd-cm.yaml's {KEY} differs from deploy/gitops/argocd-health.lua: \
         indent the script by 4 spaces under the key"
    );
}

// === the real apiserver ===

fn config() -> Config {
    Config {
        namespace: SYSTEM.to_owned(),
        worker_class: Default::default(),
        admin_addr: "127.0.0.1:0".parse().unwrap(),
        webhook: None,
        leader: None,
        concurrency: 4,
        membership_interval: Duration::from_secs(1),
        missing_reference_retry: Duration::from_secs(60),
        resync: Duration::from_secs(600),
        backlog_interval: None,
        reserved_hosts: Vec::new(),
        host_release_grace: Duration::from_secs(24 * 3600),
        certificates: None,
        plain_http_registries: Vec::new(),
        bundle_registries: isolane_artifact::AllowedRegistries::Listed(Vec::new()),
        registry_ca: None,
        storage: None,
        r2: false,
    }
}

fn worker(name: &str, script: &str) -> Worker {
    serde_json::from_value(json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": name, "namespace": APPS},
        "spec": {
            "script": script,
            "routes": [{"host": format!("{name}.apps.test"), "pathPrefix": "/"}],
        },
    }))
    .unwrap()
}

/// The operator's reconcile, running until the token is cancelled.
struct Operator {
    shutdown: CancellationToken,
    running: JoinHandle<()>,
}

impl Operator {
    async fn start(client: kube::Client) -> Self {
        let operator = lifecycle::bind(config()).await.unwrap();
        let shutdown = CancellationToken::new();
        let running = tokio::spawn(operator.run(client, shutdown.clone()));
        Self { shutdown, running }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(WAIT, self.running)
            .await
            .expect("the operator stops on shutdown")
            .unwrap();
    }
}

/// `kubectl wait --for=condition=Ready worker/<name>` with a timeout.
async fn kubectl_wait_ready(cp: &ControlPlane, name: &str, timeout: &str) -> Output {
    let mut command = cp.kubectl([
        "wait",
        "--for=condition=Ready",
        &format!("worker/{name}"),
        "-n",
        APPS,
        &format!("--timeout={timeout}"),
    ]);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// `kubectl wait` gave up at its timeout (not on some other error).
fn assert_timed_out(waited: &Output) {
    let stderr = String::from_utf8_lossy(&waited.stderr);
    assert!(
        !waited.status.success() && stderr.contains("timed out"),
        "kubectl wait should time out: {waited:?}"
    );
}

/// The health check over the Worker as the apiserver holds it.
async fn live_health(workers: &Api<Worker>, name: &str) -> (String, String) {
    let live = serde_json::to_value(workers.get(name).await.unwrap()).unwrap();
    health(&live)
}

async fn control_plane() -> ControlPlane {
    let cp = ControlPlane::start().await.unwrap();
    cp.apply_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/worker.yaml"))
        .await
        .unwrap();
    cp.create_namespace(APPS).await.unwrap();
    cp.create_namespace(SYSTEM).await.unwrap();
    let workers: Api<Worker> = Api::namespaced(cp.client(), APPS);
    wait_until("the Worker CRD to be served", WAIT, || async {
        workers.list(&ListParams::default().limit(1)).await.ok()
    })
    .await;
    let lease = isolane_membership::node_lease(
        "node-1",
        SYSTEM,
        &["http://127.0.0.1:1".to_owned()],
        2,
        false,
        Duration::from_secs(600),
        Timestamp::now(),
    );
    Api::<Lease>::namespaced(cp.client(), SYSTEM)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    cp
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_wait_and_the_health_check_follow_the_operator() {
    let cp = control_plane().await;
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), APPS);
    let operator = Operator::start(client.clone()).await;

    // Ready: `kubectl wait` returns, Argo CD sees Healthy.
    workers
        .create(&PostParams::default(), &worker("hello", GOOD))
        .await
        .unwrap();
    let waited = kubectl_wait_ready(&cp, "hello", "60s").await;
    assert!(waited.status.success(), "kubectl wait: {waited:?}");
    let (status, message) = live_health(&workers, "hello").await;
    assert_eq!(status, "Healthy", "{message}");

    // A broken script: Degraded, and `kubectl wait` does not return.
    workers
        .create(
            &PostParams::default(),
            &worker("broken", "export default {"),
        )
        .await
        .unwrap();
    let (status, message) = wait_until("the broken Worker to be reconciled", WAIT, || async {
        let health = live_health(&workers, "broken").await;
        (health.0 != "Progressing").then_some(health)
    })
    .await;
    assert_eq!(status, "Degraded", "{message}");
    assert!(message.contains("SyntaxError"), "{message}");
    let waited = kubectl_wait_ready(&cp, "broken", "2s").await;
    assert_timed_out(&waited);

    // The operator stopped, the spec changed: the status is for generation 1,
    // Ready=True there. Progressing, and `kubectl wait` does not take the
    // old Ready for the new generation.
    operator.stop().await;
    let second = "export default { fetch() { return new Response('two') } }";
    workers
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"script": second}})),
        )
        .await
        .unwrap();
    let (status, message) = live_health(&workers, "hello").await;
    assert_eq!(status, "Progressing", "{message}");
    assert!(message.contains("generation 2"), "{message}");
    let waited = kubectl_wait_ready(&cp, "hello", "2s").await;
    assert_timed_out(&waited);

    // The operator back: Ready for generation 2.
    let operator = Operator::start(client.clone()).await;
    let waited = kubectl_wait_ready(&cp, "hello", "60s").await;
    assert!(waited.status.success(), "kubectl wait: {waited:?}");
    let live = workers.get("hello").await.unwrap();
    assert_eq!(
        live.status.as_ref().and_then(|s| s.observed_generation),
        Some(2)
    );
    assert_eq!(live_health(&workers, "hello").await.0, "Healthy");
    operator.stop().await;
}
