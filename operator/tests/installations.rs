//! Two installations of Isolane in one cluster (two operators in their own
//! namespaces, each with its runtime nodes) against one real kube-apiserver
//! (isolane-testenv), the operator library in this process:
//!
//! - of two classes (a default and a `staging` one): each reconciles only
//!   the Workers of its class, so a Worker's status names its own
//!   installation's node and never the other's, while both keep
//!   re-reconciling (a one-second resync), and its bundles are only in its
//!   installation's namespace; a Worker's class cannot change;
//! - of one class: the second stands by while the first holds the class
//!   (the claim on the CRD), with a Warning Event saying so, and writes
//!   no status and no bundle; it stays ready (its webhook keeps serving).
//!
//! Without classes every operator reconciled every Worker, each placing it
//! on its own nodes: the status's placement flipped between the two
//! installations' nodes at each resync, and both wrote bundles.
// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use isolane_crds::{Worker, WorkerClass};
use isolane_operator::bundle::bundle_owner;
use isolane_operator::class_claim::{self, Claim};
use isolane_operator::config::Config;
use isolane_operator::lifecycle;
use isolane_testenv::{ControlPlane, wait_until};
use isolane_worker::BUNDLE_LABEL;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const APPS: &str = "apps";
const WAIT: Duration = Duration::from_secs(30);
/// How long the status is watched for a flip: several resyncs of both.
const WATCH_FOR: Duration = Duration::from_secs(6);

/// An installation: its namespace, class and node, and its operator.
struct Installation {
    namespace: &'static str,
    node: &'static str,
    admin: std::net::SocketAddr,
    shutdown: CancellationToken,
    running: JoinHandle<()>,
}

impl Installation {
    /// Creates `namespace` with a live node Lease named `node`, and starts
    /// an operator there serving `class`, re-reconciling every second.
    async fn start(
        cp: &ControlPlane,
        namespace: &'static str,
        class: &str,
        node: &'static str,
    ) -> Self {
        cp.create_namespace(namespace).await.unwrap();
        let client = cp.client();
        let lease = isolane_membership::node_lease(
            node,
            namespace,
            &["http://127.0.0.1:1".to_owned()],
            2,
            false,
            Duration::from_secs(600),
            Timestamp::now(),
        );
        Api::<Lease>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &lease)
            .await
            .unwrap();
        let config = Config {
            namespace: namespace.to_owned(),
            worker_class: class.parse().unwrap(),
            admin_addr: "127.0.0.1:0".parse().unwrap(),
            webhook: None,
            leader: None,
            concurrency: 4,
            membership_interval: Duration::from_secs(1),
            missing_reference_retry: Duration::from_secs(60),
            resync: Duration::from_secs(1),
            backlog_interval: None,
            reserved_hosts: Vec::new(),
            host_release_grace: Duration::from_secs(24 * 3600),
            certificates: None,
            plain_http_registries: Vec::new(),
            bundle_registries: isolane_artifact::AllowedRegistries::Listed(Vec::new()),
            registry_ca: None,
            storage: None,
            r2: false,
        };
        let operator = lifecycle::bind(config).await.unwrap();
        let admin = operator.admin_addr();
        let shutdown = CancellationToken::new();
        let running = tokio::spawn(operator.run(client, shutdown.clone()));
        Self {
            namespace,
            node,
            admin,
            shutdown,
            running,
        }
    }

    /// The names of the bundle Secrets in the installation's namespace
    /// written for Worker `name`.
    async fn bundles_of(&self, client: &Client, name: &str) -> Vec<String> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), self.namespace);
        let listed = secrets
            .list(&ListParams::default().labels(&format!("{BUNDLE_LABEL}=true")))
            .await
            .unwrap();
        listed
            .items
            .into_iter()
            .filter(|secret| bundle_owner(&secret.metadata).is_some_and(|owner| owner.name == name))
            .filter_map(|secret| secret.metadata.name)
            .collect()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(WAIT, self.running)
            .await
            .expect("the operator stops on shutdown")
            .unwrap();
    }
}

/// A cluster with the Worker CRD served and the apps namespace.
async fn cluster() -> ControlPlane {
    let cp = ControlPlane::start().await.unwrap();
    cp.apply_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/worker.yaml"))
        .await
        .unwrap();
    cp.create_namespace(APPS).await.unwrap();
    let workers: Api<Worker> = Api::namespaced(cp.client(), APPS);
    wait_until("the Worker CRD to be served", WAIT, || async {
        workers.list(&ListParams::default().limit(1)).await.ok()
    })
    .await;
    cp
}

/// Worker `name` on host `<name>.apps.test`, naming `class` if any.
fn worker(name: &str, class: Option<&str>) -> Worker {
    let mut spec = serde_json::json!({
        "script": "export default { fetch() { return new Response('hi') } }",
        "routes": [{"host": format!("{name}.apps.test"), "pathPrefix": "/"}],
    });
    if let Some(class) = class {
        spec["workerClass"] = class.into();
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": name, "namespace": APPS},
        "spec": spec,
    }))
    .unwrap()
}

/// The node of the Worker's first replica once it is Ready.
fn ready_on(worker: &Worker) -> Option<String> {
    let status = worker.status.as_ref()?;
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    ready
        .then(|| status.placement.first().map(|p| p.node.clone()))
        .flatten()
}

/// Reads each Worker of `expected` (name, node) for [`WATCH_FOR`]; panics
/// at the first read whose status is not Ready on its node.
async fn status_stays(workers: &Api<Worker>, expected: &[(&str, &str)]) {
    let started = Instant::now();
    let mut reads = 0;
    while started.elapsed() < WATCH_FOR {
        for (name, node) in expected {
            let worker = workers.get(name).await.unwrap();
            let on = ready_on(&worker);
            assert_eq!(
                on.as_deref(),
                Some(*node),
                "{name}'s status after {:?} ({reads} reads): {:?}",
                started.elapsed(),
                worker.status
            );
        }
        reads += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The class claims on the CRD, by class.
async fn claims(client: &Client) -> Vec<(String, Claim)> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get_metadata(class_claim::CRD_NAME).await.unwrap();
    crd.metadata
        .annotations
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, value)| {
            let class = key.strip_prefix(class_claim::ANNOTATION_PREFIX)?;
            Some((class.to_owned(), serde_json::from_str(&value).unwrap()))
        })
        .collect()
}

/// Removes the class claims from the CRD (so that a test on an existing
/// cluster leaves none behind for the next).
async fn release_claims(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let released: serde_json::Map<String, serde_json::Value> = claims(client)
        .await
        .into_iter()
        .map(|(class, _)| {
            let class: WorkerClass = class.parse().unwrap();
            (class_claim::annotation(&class), serde_json::Value::Null)
        })
        .collect();
    let patch = serde_json::json!({"metadata": {"annotations": released}});
    crds.patch_metadata(
        class_claim::CRD_NAME,
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_installations_each_reconcile_only_the_workers_of_their_class() {
    let cp = cluster().await;
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), APPS);
    let prod = Installation::start(&cp, "isolane-prod", "default", "prod-node").await;
    let staging = Installation::start(&cp, "isolane-staging", "staging", "staging-node").await;

    // A Worker naming no class is the default installation's; one naming
    // `staging` is the staging installation's.
    for worker in [worker("plain", None), worker("staged", Some("staging"))] {
        workers
            .create(&PostParams::default(), &worker)
            .await
            .unwrap();
    }
    for (name, node) in [("plain", prod.node), ("staged", staging.node)] {
        wait_until(&format!("{name} to be Ready on {node}"), WAIT, || async {
            let worker = workers.get(name).await.unwrap();
            (ready_on(&worker).as_deref() == Some(node)).then_some(())
        })
        .await;
    }
    // Both operators keep reconciling (every second): the status stays each
    // Worker's own installation's.
    status_stays(&workers, &[("plain", prod.node), ("staged", staging.node)]).await;
    // Bundles only where the Worker's nodes read them.
    assert!(!prod.bundles_of(&client, "plain").await.is_empty());
    assert!(staging.bundles_of(&client, "plain").await.is_empty());
    assert!(!staging.bundles_of(&client, "staged").await.is_empty());
    assert!(prod.bundles_of(&client, "staged").await.is_empty());
    // Each installation holds its class.
    let mut held: Vec<(String, String)> = claims(&client)
        .await
        .into_iter()
        .map(|(class, claim)| (class, claim.namespace))
        .collect();
    held.sort();
    assert_eq!(
        held,
        [
            ("default".to_owned(), prod.namespace.to_owned()),
            ("staging".to_owned(), staging.namespace.to_owned())
        ]
    );

    // A Worker cannot move to another installation.
    let moved = workers
        .patch(
            "staged",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"workerClass": null}})),
        )
        .await
        .unwrap_err();
    assert!(
        moved.to_string().contains("spec.workerClass cannot change"),
        "{moved}"
    );
    // Naming the class a Worker has already is no move.
    workers
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"workerClass": "default"}})),
        )
        .await
        .unwrap();

    // Deleting it: its installation removes its bundles and its finalizer.
    workers
        .delete("staged", &DeleteParams::default())
        .await
        .unwrap();
    wait_until("staged and its bundles to go", WAIT, || async {
        let gone = workers.get_opt("staged").await.unwrap().is_none();
        (gone && staging.bundles_of(&client, "staged").await.is_empty()).then_some(())
    })
    .await;
    assert!(ready_on(&workers.get("plain").await.unwrap()).as_deref() == Some(prod.node));

    prod.stop().await;
    staging.stop().await;
    release_claims(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_installation_of_the_same_class_stands_by() {
    const CLASS: &str = "shared";
    let cp = cluster().await;
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), APPS);
    let first = Installation::start(&cp, "isolane-first", CLASS, "first-node").await;
    workers
        .create(&PostParams::default(), &worker("hello", Some(CLASS)))
        .await
        .unwrap();
    wait_until("hello to be Ready on the first's node", WAIT, || async {
        let worker = workers.get("hello").await.unwrap();
        (ready_on(&worker).as_deref() == Some(first.node)).then_some(())
    })
    .await;

    // A second installation of the same class: it finds the class held,
    // reconciles nothing, and says so. It is ready all the same (once its
    // caches have listed and it has read the claim): its webhook would keep
    // answering.
    let second = Installation::start(&cp, "isolane-second", CLASS, "second-node").await;
    wait_until("the second operator to be ready", WAIT, || async {
        let ready = isolane_testenv::http_probe::get(second.admin, "/readyz").await;
        ready.filter(|response| response.status == 200)
    })
    .await;
    status_stays(&workers, &[("hello", first.node)]).await;
    assert!(second.bundles_of(&client, "hello").await.is_empty());
    assert!(!first.bundles_of(&client, "hello").await.is_empty());
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let note = wait_until("the WorkerClassTaken event", WAIT, || async {
        let listed = events.list(&ListParams::default()).await.unwrap();
        listed.items.into_iter().find_map(|event| {
            let regarding = event.regarding.as_ref()?;
            (event.reason.as_deref() == Some("WorkerClassTaken")
                && regarding.name.as_deref() == Some(class_claim::CRD_NAME))
            .then_some(event.note)
            .flatten()
        })
    })
    .await;
    assert!(
        note.contains("namespace isolane-second reconciles nothing")
            && note.contains("served by the installation in namespace isolane-first"),
        "{note}"
    );
    let held: Vec<(String, String)> = claims(&client)
        .await
        .into_iter()
        .map(|(class, claim)| (class, claim.namespace))
        .collect();
    assert_eq!(held, [(CLASS.to_owned(), first.namespace.to_owned())]);

    second.stop().await;
    first.stop().await;
    release_claims(&client).await;
}
