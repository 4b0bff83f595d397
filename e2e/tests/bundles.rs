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
//!    and the node counts no isolate-cache miss during the shift; v1's
//!    lib/big.js (the same in v2) left its V8 code cache beside the bundles,
//!    and v2 compiles it from there;
//! 3. a bundle with a broken Wasm module, and one pulled without the pull
//!    secret, are refused by the operator (Ready=False, BundleInvalid, with
//!    the reason) while the served Worker keeps answering.
//!
//! One node, as in the traffic test. Timing is printed, never asserted.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_crds::{TrafficTarget, Worker};
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::operator::OperatorOptions;
use isolane_e2e::process::binary;
use isolane_e2e::workers::{self, has_condition, wait_for_worker, wait_ready};
use isolane_testenv::{ControlPlane, Registry, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

const NAMESPACE: &str = "apps";
const HOST: &str = "big.test";
const PULL_SECRET: &str = "registry-pull";
const SETTLE: Duration = Duration::from_secs(90);
const BLOB_BYTES: usize = 8 << 20;

/// A Worker folder: main.js answering `<version> <blob bytes> <greeting>`,
/// importing lib/big.js, a JavaScript module big enough for the code cache and
/// the same in every version.
fn write_bundle(dir: &Path, version: &str, blob: &[u8]) {
    std::fs::create_dir_all(dir).expect("bundle dir");
    std::fs::write(
        dir.join("main.js"),
        format!(
            "import blob from './blob.bin';\n\
             import greeting from './greeting.txt';\n\
             import {{ total }} from './lib/big.js';\n\
             total();\n\
             export default {{ fetch() {{ return new Response(`{version} ${{blob.byteLength}} ${{greeting}}`); }} }};\n"
        ),
    )
    .expect("main.js");
    let lib: String = (0..1000)
        .map(|i| format!("function f{i}(x) {{ let s = {i}; for (let j = 0; j < x; j++) s = (s * 31 + j) % 1000003; return s; }}\n"))
        .chain(["export const total = () => [f1, f500, f999].reduce((sum, f) => sum + f(3), 0);\n".to_owned()])
        .collect();
    // The engine caches modules of 32 KiB and more (MIN_SOURCE_BYTES).
    assert!(
        lib.len() >= 32 << 10,
        "lib/big.js is big enough to be cached"
    );
    std::fs::create_dir_all(dir.join("lib")).expect("lib dir");
    std::fs::write(dir.join("lib").join("big.js"), lib).expect("lib/big.js");
    std::fs::write(dir.join("blob.bin"), blob).expect("blob.bin");
    std::fs::write(dir.join("greeting.txt"), "hello from a text module").expect("greeting");
}

/// `isolane push` of `path`: the Worker it prints.
fn push(registry: &Registry, path: &Path, repository: &str, pull_secret: Option<&str>) -> Worker {
    let mut command = Command::new(binary("isolane", "ISOLANE_BIN"));
    command
        .arg("push")
        .arg(path)
        .args(["--repository", &format!("{}/{repository}", registry.host())])
        .args([
            "--name",
            "big",
            "-n",
            NAMESPACE,
            "--route",
            HOST,
            "--plain-http",
        ])
        .env("ISOLANE_REGISTRY_USERNAME", registry.username())
        .env("ISOLANE_REGISTRY_PASSWORD", registry.password());
    if let Some(secret) = pull_secret {
        command.args(["--pull-secret", secret]);
    }
    let started = Instant::now();
    let output = command.output().expect("isolane push runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "isolane push failed: {stderr}");
    println!(
        "isolane push {repository}: {:.0} ms: {}",
        started.elapsed().as_secs_f64() * 1000.0,
        stderr.trim()
    );
    serde_yaml::from_slice(&output.stdout).expect("isolane push prints a Worker")
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

/// Isolate-cache misses of the node so far (each a cold start).
async fn misses(cluster: &Cluster) -> f64 {
    cluster.nodes[0]
        .metric_sum(
            "isolane_node_isolate_cache_lookups_total",
            "result=\"miss\"",
        )
        .await
        .expect("node metrics")
}

fn revision_of(worker: &Worker) -> String {
    worker
        .status
        .as_ref()
        .and_then(|s| s.revision.clone())
        .expect("a revision")
}

async fn pull_secret(cp: &ControlPlane, registry: &Registry) {
    let secrets: Api<Secret> = Api::namespaced(cp.client(), NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(PULL_SECRET.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
        data: Some(
            [(
                ".dockerconfigjson".to_owned(),
                ByteString(registry.docker_config_json().into_bytes()),
            )]
            .into(),
        ),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the pull secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_8_mib_bundle_is_pushed_applied_served_and_switched_by_digest() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let registry = Registry::start("isolane", "pull-me").expect("registry starts");
    pull_secret(&cp, &registry).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let plain_http = format!("--plain-http-registry={}", registry.host());
    let allowed = format!("--bundle-registry={}", registry.host());
    let mut node = NodeOptions::named("node-1");
    node.extra_args = vec![
        plain_http.clone(),
        allowed.clone(),
        format!(
            "--bundle-cache-dir={}",
            dir.path().join("bundle-cache").display()
        ),
    ];
    let options = ClusterOptions {
        nodes: 1,
        node,
        operator: OperatorOptions {
            extra_args: vec![plain_http, allowed],
            ..OperatorOptions::default()
        },
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let client = cp.client();
    let ingress = Ingress::new(cluster.ingress());

    // === 1. push, apply, serve ===
    let mut rng = fastrand::Rng::with_seed(31);
    let blob: Vec<u8> = (0..BLOB_BYTES).map(|_| rng.u8(..)).collect();
    write_bundle(&dir.path().join("v1"), "v1", &blob);
    let v1_worker = push(
        &registry,
        &dir.path().join("v1"),
        "apps/big",
        Some(PULL_SECRET),
    );
    let v1_bundle = v1_worker.spec.bundle.clone().expect("spec.bundle");
    assert!(v1_bundle.contains("@sha256:"), "{v1_bundle}");
    let applied = Instant::now();
    workers::apply(&client, NAMESPACE, &v1_worker).await;
    let v1 = revision_of(&wait_ready(&client, NAMESPACE, "big", SETTLE).await);
    let expected_v1 = format!("v1 {BLOB_BYTES} hello from a text module");
    wait_until("v1 to answer through the router", SETTLE, || async {
        let reply = ingress.get(HOST, "/").await.ok()?;
        (reply.status == 200 && reply.body == expected_v1).then_some(())
    })
    .await;
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

    // === 2. v2 by another digest, prewarmed at 0 %, then shifted ===
    write_bundle(&dir.path().join("v2"), "v2", &blob);
    let mut v2_worker = push(
        &registry,
        &dir.path().join("v2"),
        "apps/big",
        Some(PULL_SECRET),
    );
    assert_ne!(v2_worker.spec.bundle.as_deref(), Some(v1_bundle.as_str()));
    let pinned = |revision: &str, percent| TrafficTarget {
        revision: Some(revision.to_owned()),
        latest_revision: None,
        percent,
        tag: None,
    };
    let latest = |percent| TrafficTarget {
        revision: None,
        latest_revision: Some(true),
        percent,
        tag: None,
    };
    let prewarms = || async {
        cluster
            .router
            .metric_sum("isolane_router_prewarms_total", "outcome=\"ok\"")
            .await
            .unwrap_or_default()
    };
    let prewarms_before = prewarms().await;
    v2_worker.spec.traffic = vec![pinned(&v1, 100)];
    workers::apply(&client, NAMESPACE, &v2_worker).await;
    let worker = wait_for_worker(
        &client,
        NAMESPACE,
        "big",
        "to hold v2 at 0 %",
        SETTLE,
        |w| {
            has_condition(w, "Ready", "True", None)
                && w.status.as_ref().is_some_and(|s| {
                    s.revisions.len() >= 2 && s.revision.as_deref() != Some(v1.as_str())
                })
        },
    )
    .await;
    let v2 = revision_of(&worker);
    let before = misses(&cluster).await;
    // The router takes the new split only once v2 is compiled where its
    // requests will go (its prewarm gate; the node pulls the bundle for it).
    v2_worker.spec.traffic = vec![latest(100)];
    workers::apply(&client, NAMESPACE, &v2_worker).await;
    let expected_v2 = format!("v2 {BLOB_BYTES} hello from a text module");
    let mut failures = Vec::new();
    let mut served = 0;
    let shifted = Instant::now();
    loop {
        let reply = ingress.get(HOST, "/").await;
        served += 1;
        match reply {
            Ok(reply) if reply.status == 200 && reply.body == expected_v2 => break,
            Ok(reply) if reply.status == 200 && reply.body == expected_v1 => {}
            other => failures.push(format!("{other:?}")),
        }
        assert!(shifted.elapsed() < SETTLE, "v2 never took the traffic");
    }
    println!(
        "shift v1 -> v2: {served} requests, {:.0} ms, misses before {before}, after {}",
        shifted.elapsed().as_secs_f64() * 1000.0,
        misses(&cluster).await
    );
    assert!(
        failures.is_empty(),
        "requests failed during the shift: {failures:?}"
    );
    assert_eq!(
        misses(&cluster).await,
        before,
        "the shift caused a cold start"
    );
    assert!(prewarms().await > prewarms_before, "v2 was not prewarmed");
    assert_ne!(v1, v2);
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
    let mut broken = push(&registry, &broken_dir, "apps/broken", Some(PULL_SECRET));
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
