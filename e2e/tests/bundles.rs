//! Bundles named by digest as users ship them (issue 31): a real
//! kube-apiserver, a real OCI registry (CNCF Distribution with htpasswd
//! auth, isolane_testenv::Registry), and the operator, a runtime node and
//! the router as processes.
//!
//! [`an_8_mib_bundle_is_pushed_applied_served_and_switched_by_digest`]:
//! 1. `isolane push` packs a folder (main.js importing an 8 MiB `.bin`
//!    and a `.txt`), pushes it and prints the Worker naming it by digest
//!    with the namespace's pull secret; applied, it serves through the router;
//! 2. v2 is pushed (another digest) and applied with v1 pinned at 100 %,
//!    then shifted to 100 %: the router prewarms it first, no request fails
//!    and the node counts no isolate-cache miss during the shift; v2
//!    compiles lib/big.js from the code cache v1 left beside the bundles;
//! 3. a bundle with a broken Wasm module, and one pulled without the pull
//!    secret, are refused by the operator (Ready=False, BundleInvalid, with
//!    the reason) while the served Worker keeps answering.
//!
//! One node, as in the traffic test. Timing is printed, never asserted.

use std::time::{Duration, Instant};

use isolane_e2e::bundles::{
    self, BLOB_BYTES, PULL_SECRET, Serving, Target, answer, create_pull_secret, revision_of,
    wait_for_answer, write_bundle,
};
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::operator::OperatorOptions;
use isolane_e2e::workers::{self, has_condition, wait_for_worker, wait_ready};
use isolane_testenv::{ControlPlane, Registry, TestCa, wait_until};

const NAMESPACE: &str = "apps";
const HOST: &str = "big.test";
const SETTLE: Duration = Duration::from_secs(90);

/// `isolane push` of `path` as the Worker `big` (or another name later).
fn push(registry: &Registry, path: &std::path::Path, repository: &str) -> isolane_crds::Worker {
    let target = Target {
        name: "big",
        namespace: NAMESPACE,
        host: HOST,
        pull_secret: Some(PULL_SECRET),
    };
    bundles::push(registry, path, repository, target)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_8_mib_bundle_is_pushed_applied_served_and_switched_by_digest() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let registry = Registry::start("isolane", "pull-me").expect("registry starts");
    let client = cp.client();
    create_pull_secret(&client, NAMESPACE, &registry).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("bundle-cache");
    let cache = format!("--bundle-cache-dir={}", cache.display());
    let options = bundles::registry_cluster(&registry, vec![cache]);
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let ingress = Ingress::new(cluster.ingress());

    // === 1. push, apply, serve ===
    let blob = bundles::blob();
    write_bundle(&dir.path().join("v1"), "v1", &blob);
    let v1_worker = push(&registry, &dir.path().join("v1"), "apps/big");
    let v1_bundle = v1_worker.spec.bundle.clone().expect("spec.bundle");
    assert!(v1_bundle.contains("@sha256:"), "{v1_bundle}");
    let applied = Instant::now();
    workers::apply(&client, NAMESPACE, &v1_worker).await;
    let v1 = revision_of(&wait_ready(&client, NAMESPACE, "big", SETTLE).await);
    let expected_v1 = answer("v1", BLOB_BYTES);
    wait_for_answer(&ingress, HOST, &expected_v1, SETTLE).await;
    println!(
        "8 MiB bundle: applied to first answer {:.0} ms",
        applied.elapsed().as_secs_f64() * 1000.0
    );
    // lib/big.js's code cache is made after its first request, beside the
    // bundle; v2 below has the same lib/big.js, so it compiles from it.
    wait_until("lib/big.js's code cache to be written", SETTLE, || async {
        (code_cache(&cluster, "written").await >= 1.0).then_some(())
    })
    .await;
    assert!(
        std::fs::read_dir(dir.path().join("bundle-cache"))
            .expect("bundle cache")
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("code-")),
        "a code-*.bin file beside the bundles"
    );

    // === 2. v2 by another digest, prewarmed at 0 %, then switched ===
    write_bundle(&dir.path().join("v2"), "v2", &blob);
    let v2_worker = push(&registry, &dir.path().join("v2"), "apps/big");
    assert_ne!(v2_worker.spec.bundle.as_deref(), Some(v1_bundle.as_str()));
    let serving = Serving {
        ingress: ingress.clone(),
        node_admin: cluster.nodes[0].admin,
        router_admin: cluster.router.admin,
        settle: SETTLE,
    };
    let expected_v2 = answer("v2", BLOB_BYTES);
    bundles::switch_without_cold_start(
        &client,
        &serving,
        v2_worker,
        &v1,
        (&expected_v1, &expected_v2),
    )
    .await;
    assert!(
        code_cache(&cluster, "consumed").await >= 1.0,
        "v2 compiled lib/big.js from the code cache v1 made"
    );
    assert_eq!(code_cache(&cluster, "rejected").await, 0.0);
    assert_eq!(code_cache(&cluster, "invalid").await, 0.0);

    // === 3. broken bundles are refused with the reason; v2 keeps serving ===
    let broken_dir = dir.path().join("broken");
    std::fs::create_dir_all(&broken_dir).expect("dir");
    std::fs::write(
        broken_dir.join("main.js"),
        "import m from './bad.wasm'; export default { fetch() { return new Response('x'); } };",
    )
    .expect("main.js");
    std::fs::write(broken_dir.join("bad.wasm"), b"\0asm\x01\0\0\0garbage").expect("wasm");
    let mut broken = push(&registry, &broken_dir, "apps/broken");
    broken.metadata.name = Some("broken".to_owned());
    broken.spec.routes.clear();
    workers::apply(&client, NAMESPACE, &broken).await;
    let message = &refused_message(&client, "broken").await;
    assert!(message.contains("bad.wasm"), "{message}");

    let mut anonymous = v1_worker.clone();
    anonymous.metadata.name = Some("anonymous".to_owned());
    anonymous.spec.bundle_pull_secrets.clear();
    anonymous.spec.routes.clear();
    workers::apply(&client, NAMESPACE, &anonymous).await;
    let message = &refused_message(&client, "anonymous").await;
    assert!(message.contains("unauthorized"), "{message}");

    // === 4. a registry the cluster does not list is never contacted ===
    // (a tenant's spec.bundle would otherwise make the operator and nodes
    // connect wherever it says: the metadata service, the kubelet, etcd.)
    let (unlisted, connections) = counting_listener().await;
    let mut elsewhere = v1_worker.clone();
    elsewhere.metadata.name = Some("elsewhere".to_owned());
    elsewhere.spec.routes.clear();
    let digest = v1_bundle.split_once('@').expect("a digest").1;
    elsewhere.spec.bundle = Some(format!("{unlisted}/apps/big@{digest}"));
    workers::apply(&client, NAMESPACE, &elsewhere).await;
    let message = &refused_message(&client, "elsewhere").await;
    assert!(
        message.contains("is not one this cluster pulls bundles from"),
        "{message}"
    );
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the unlisted registry was contacted"
    );

    let reply = ingress.get(HOST, "/").await.expect("v2 still answers");
    assert_eq!(
        (reply.status, reply.body.as_str()),
        (200, expected_v2.as_str())
    );
}

/// The node's code cache files with `event` so far.
async fn code_cache(cluster: &Cluster, event: &str) -> f64 {
    cluster.nodes[0]
        .metric_sum(
            "isolane_node_code_cache_total",
            &format!("event=\"{event}\""),
        )
        .await
        .unwrap_or_default()
}

/// The `Ready` message of Worker `name` once it is refused `BundleInvalid`.
async fn refused_message(client: &kube::Client, name: &str) -> String {
    let refused = wait_for_worker(client, NAMESPACE, name, "to be refused", SETTLE, |w| {
        has_condition(w, "Ready", "False", Some("BundleInvalid"))
    })
    .await;
    workers::condition(&refused, "Ready")
        .expect("Ready")
        .message
        .clone()
}

/// A loopback listener that counts the connections it gets (and closes
/// them): its `host:port`, and the count.
async fn counting_listener() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("its address");
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    (addr.to_string(), count)
}

/// A registry on HTTPS whose certificate a private CA signs: `isolane push
/// --registry-ca`, then the operator and the node, both given the CA with
/// `--bundle-registry-ca` (and no plain HTTP), check, pull and serve the
/// bundle through the router. (Without the CA the registry is refused:
/// `crates/artifact/tests/registry.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_from_a_registry_signed_by_a_private_ca_is_served_with_the_ca() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let ca = TestCa::new("isolane-e2e-registry-ca").expect("a test CA");
    let registry = Registry::start_tls("isolane", "pull-me", &ca).expect("registry starts");
    let client = cp.client();
    create_pull_secret(&client, NAMESPACE, &registry).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let ca_file = dir.path().join("registry-ca.crt");
    std::fs::write(&ca_file, ca.cert_pem()).expect("write the CA");
    let trust = format!("--bundle-registry-ca={}", ca_file.display());
    let allowed = format!("--bundle-registry={}", registry.host());
    let mut node = NodeOptions::named("node-1");
    node.extra_args = vec![
        allowed.clone(),
        trust.clone(),
        format!(
            "--bundle-cache-dir={}",
            dir.path().join("bundle-cache").display()
        ),
    ];
    let options = ClusterOptions {
        nodes: 1,
        node,
        operator: OperatorOptions {
            extra_args: vec![allowed, trust],
            ..OperatorOptions::default()
        },
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let ingress = Ingress::new(cluster.ingress());

    let blob = vec![7_u8; 4096];
    write_bundle(&dir.path().join("v1"), "v1", &blob);
    let target = Target {
        name: "private",
        namespace: NAMESPACE,
        host: "private.test",
        pull_secret: Some(PULL_SECRET),
    };
    let ca_path = ca_file.display().to_string();
    let worker = bundles::push_with(
        &registry,
        &dir.path().join("v1"),
        "apps/private",
        target,
        &["--registry-ca", &ca_path],
    );
    workers::apply(&client, NAMESPACE, &worker).await;
    wait_ready(&client, NAMESPACE, "private", SETTLE).await;
    wait_for_answer(&ingress, "private.test", &answer("v1", blob.len()), SETTLE).await;
    drop(cluster);
}
