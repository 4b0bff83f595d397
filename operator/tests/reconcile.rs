//! The operator's reconcile in this process against a real kube-apiserver
//! (isolane-testenv), no operator binary: the library's lifecycle (acting
//! alone, no leader election) turns a Worker into its bundle Secret and its
//! status (Ready, revision, revisions, URL, routes, placement from a node
//! Lease); a new script is a new revision with its own Secret, the old one
//! kept in the history; deleting the Worker removes its bundles and its
//! Durable Object alarms (in a real PostgreSQL).
// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use isolane_crds::{Worker, WorkerStatus};
use isolane_operator::config::Config;
use isolane_operator::lifecycle;
use isolane_storage::ObjectScope;
use isolane_testenv::wait_until;
use isolane_worker::{BUNDLE_KEY, BUNDLE_LABEL, Bundle};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

const APPS: &str = "apps";
const SYSTEM: &str = "isolane-system";
const HOST: &str = "hello.apps.test";
const WAIT: Duration = Duration::from_secs(30);

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
        host_release_grace: std::time::Duration::from_secs(24 * 3600),
        certificates: None,
        plain_http_registries: Vec::new(),
        bundle_registries: isolane_artifact::AllowedRegistries::Listed(Vec::new()),
        registry_ca: None,
        storage: None,
        r2: false,
    }
}

fn worker(script: &str) -> Worker {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": "hello", "namespace": APPS},
        "spec": {
            "script": script,
            "routes": [{"host": HOST, "pathPrefix": "/"}],
        },
    }))
    .unwrap()
}

/// The status once it is Ready for a revision other than `not`.
fn ready_status(worker: &Worker, not: Option<&str>) -> Option<WorkerStatus> {
    let status = worker.status.as_ref()?;
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    (ready && status.revision.is_some() && status.revision.as_deref() != not)
        .then(|| status.clone())
}

/// The bundle in the Secret of `revision`, if it exists.
async fn bundle(secrets: &Api<Secret>, revision: &str) -> Option<Bundle> {
    let name = Bundle::revision_secret_name(APPS, "hello", revision);
    let secret = secrets.get_opt(&name).await.unwrap()?;
    let labels = secret.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get(BUNDLE_LABEL).map(String::as_str), Some("true"));
    let data = secret.data.unwrap_or_default();
    Some(serde_json::from_slice(&data.get(BUNDLE_KEY)?.0).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_becomes_a_bundle_and_a_ready_status_and_a_new_script_a_new_revision() {
    let cp = isolane_testenv::ControlPlane::start().await.unwrap();
    cp.apply_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/worker.yaml"))
        .await
        .unwrap();
    cp.create_namespace(APPS).await.unwrap();
    cp.create_namespace(SYSTEM).await.unwrap();
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), APPS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM);
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
    Api::<Lease>::namespaced(client.clone(), SYSTEM)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();

    // The durable store, with alarms of this Worker's objects and of
    // others' (a Worker whose name starts with this one's, a Worker of the
    // same name in another namespace).
    let postgres = isolane_testenv::Postgres::start().unwrap();
    let settings = isolane_storage::PostgresSettings::new(postgres.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = isolane_storage::Store::postgres(&settings).unwrap();
    let scopes = [
        ObjectScope::new(APPS, "hello/Counter", "1"),
        ObjectScope::new(APPS, "hello/Timer", "2"),
        ObjectScope::new(APPS, "hello-2/Counter", "1"),
        ObjectScope::new("other", "hello/Counter", "1"),
    ];
    for scope in &scopes {
        store
            .set_object_alarm(scope.clone(), Some(4_102_444_800_000))
            .await
            .unwrap();
    }
    let config = Config {
        storage: Some(settings),
        ..config()
    };
    let operator = lifecycle::bind(config).await.unwrap();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(operator.run(client.clone(), shutdown.clone()));

    // A Worker: its bundle Secret, then a Ready status that names it.
    let first = "export default { fetch() { return new Response('one') } }";
    workers
        .create(&PostParams::default(), &worker(first))
        .await
        .unwrap();
    let status = wait_until("the Worker to be Ready", WAIT, || async {
        ready_status(&workers.get("hello").await.unwrap(), None)
    })
    .await;
    let r1 = status.revision.clone().unwrap();
    assert_eq!(status.url.as_deref(), Some(&*format!("http://{HOST}/")));
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "RoutesAdmitted" && c.status == "True"),
        "{:?}",
        status.conditions
    );
    assert_eq!(
        status
            .revisions
            .iter()
            .map(|r| &r.revision)
            .collect::<Vec<_>>(),
        [&r1]
    );
    assert_eq!(status.placement.len(), 1);
    assert_eq!(status.placement[0].node, "node-1");
    let written = bundle(&secrets, &r1)
        .await
        .expect("the bundle Secret of r1");
    assert_eq!(written.script, first);
    assert_eq!(written.revision, r1);
    assert_eq!(written.worker_id, "apps/hello");
    assert_eq!(written.routes.len(), 1);
    assert_eq!(written.routes[0].host, HOST);

    // A new script: a new revision with its own Secret; the old one is kept.
    let second = "export default { fetch() { return new Response('two') } }";
    workers
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"script": second}})),
        )
        .await
        .unwrap();
    let status = wait_until("the new revision", WAIT, || async {
        ready_status(&workers.get("hello").await.unwrap(), Some(&r1))
    })
    .await;
    let r2 = status.revision.clone().unwrap();
    let written = bundle(&secrets, &r2)
        .await
        .expect("the bundle Secret of r2");
    assert_eq!(written.script, second);
    assert!(
        bundle(&secrets, &r1).await.is_some(),
        "r1 stays in the history"
    );
    let revisions: Vec<&str> = status
        .revisions
        .iter()
        .map(|r| r.revision.as_str())
        .collect();
    assert!(
        revisions.contains(&r1.as_str()) && revisions.contains(&r2.as_str()),
        "{revisions:?}"
    );

    // Deleting the Worker deletes its bundles and its objects' alarms
    // (through the finalizer); other Workers' alarms stay.
    workers
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    wait_until("the Worker and its bundles to go", WAIT, || async {
        let gone = workers.get_opt("hello").await.unwrap().is_none();
        let bundles = secrets
            .list(&ListParams::default().labels(&format!("{BUNDLE_LABEL}=true")))
            .await
            .unwrap();
        (gone && bundles.items.is_empty()).then_some(())
    })
    .await;
    let mut left = Vec::new();
    for scope in &scopes {
        left.push(store.object_alarm(scope.clone()).await.unwrap().is_some());
    }
    assert_eq!(left, [false, false, true, true]);

    shutdown.cancel();
    tokio::time::timeout(WAIT, running)
        .await
        .expect("the operator stops on shutdown")
        .unwrap();
}
