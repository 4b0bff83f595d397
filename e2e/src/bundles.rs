//! Bundles named by digest as the e2e tests ship them (docs/bundles.md): a
//! Worker folder whose main module imports an 8 MiB Data module and a Text
//! module ([`write_bundle`]), `isolane push` to a test registry ([`push`]),
//! a namespace's pull secret ([`create_pull_secret`]), a wrangler project
//! deployed as a user deploys it ([`deploy`]), and the switch of all
//! traffic from one digest's revision to another's with no cold start
//! ([`switch_without_cold_start`]). `e2e/tests/bundles.rs` runs them
//! against processes, `e2e/tests/pods.rs` against the chart on a kubelet.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_crds::Worker;
use isolane_testenv::{Registry, wait_until};
use isolane_worker::TrafficTarget;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

use crate::cluster::{ClusterOptions, NodeOptions};
use crate::http;
use crate::ingress::Ingress;
use crate::operator::OperatorOptions;
use crate::process::binary;
use crate::workers::{self, has_condition, wait_for_worker};

/// The name of the pull secret the tests create ([`create_pull_secret`]).
pub const PULL_SECRET: &str = "registry-pull";
/// Bytes of the bundle's Data module.
pub const BLOB_BYTES: usize = 8 << 20;

/// [`BLOB_BYTES`] random bytes (seeded: the same every run), which gzip
/// cannot shrink: the artifact is as big compressed as uncompressed.
pub fn blob() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(31);
    (0..BLOB_BYTES).map(|_| rng.u8(..)).collect()
}

/// A Worker folder: main.js answering [`answer`]`(version, blob.len())`,
/// importing lib/big.js, a JavaScript module big enough for the engine's
/// code cache (32 KiB and more; `isolane_testenv::big_module`) and the
/// same in every version.
pub fn write_bundle(dir: &Path, version: &str, blob: &[u8]) {
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
    let lib = isolane_testenv::big_module::es_module(64 << 10, "");
    std::fs::create_dir_all(dir.join("lib")).expect("lib dir");
    std::fs::write(dir.join("lib").join("big.js"), lib).expect("lib/big.js");
    std::fs::write(dir.join("blob.bin"), blob).expect("blob.bin");
    std::fs::write(dir.join("greeting.txt"), "hello from a text module").expect("greeting");
}

/// What the Worker of [`write_bundle`] answers: its version, the Data
/// module's length (so the big module loaded whole) and the Text module.
pub fn answer(version: &str, blob_bytes: usize) -> String {
    format!("{version} {blob_bytes} hello from a text module")
}

/// Waits until `host` answers 200 with `expected` through `ingress`;
/// returns how long that took.
pub async fn wait_for_answer(
    ingress: &Ingress,
    host: &str,
    expected: &str,
    timeout: Duration,
) -> Duration {
    let started = Instant::now();
    wait_until(
        &format!("{host} to answer {expected:?}"),
        timeout,
        || async {
            let reply = ingress.get(host, "/").await.ok()?;
            (reply.status == 200 && reply.body == expected).then_some(())
        },
    )
    .await;
    started.elapsed()
}

/// Where [`push`] names the Worker: its name, namespace and route host,
/// and the pull secret it lists.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub host: &'a str,
    pub pull_secret: Option<&'a str>,
}

/// `isolane push` of `path` to `<registry>/<repository>` over plain HTTP,
/// as the registry's user: the Worker it prints.
pub fn push(registry: &Registry, path: &Path, repository: &str, target: Target<'_>) -> Worker {
    push_with(registry, path, repository, target, &["--plain-http"])
}

/// [`push`] with `how` (`--plain-http`, or `--registry-ca FILE` for a
/// registry over HTTPS) rather than plain HTTP.
pub fn push_with(
    registry: &Registry,
    path: &Path,
    repository: &str,
    target: Target<'_>,
    how: &[&str],
) -> Worker {
    let mut command = Command::new(binary("isolane", "ISOLANE_BIN"));
    command
        .arg("push")
        .arg(path)
        .args(["--repository", &format!("{}/{repository}", registry.host())])
        .args(["--name", target.name, "-n", target.namespace])
        .args(["--route", target.host])
        .args(how)
        .env("ISOLANE_REGISTRY_USERNAME", registry.username())
        .env("ISOLANE_REGISTRY_PASSWORD", registry.password());
    if let Some(secret) = target.pull_secret {
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

/// One node's cluster whose operator and node pull bundles from
/// `registry` over plain HTTP; `node_args` are the node's other flags.
pub fn registry_cluster(registry: &Registry, node_args: Vec<String>) -> ClusterOptions {
    let plain_http = format!("--plain-http-registry={}", registry.host());
    let allowed = format!("--bundle-registry={}", registry.host());
    let mut node = NodeOptions::named("node-1");
    node.extra_args = [plain_http.clone(), allowed.clone()]
        .into_iter()
        .chain(node_args)
        .collect();
    ClusterOptions {
        nodes: 1,
        node,
        operator: OperatorOptions {
            extra_args: vec![plain_http, allowed],
            ..OperatorOptions::default()
        },
        ..ClusterOptions::default()
    }
}

/// Creates the `kubernetes.io/dockerconfigjson` Secret [`PULL_SECRET`] in
/// `namespace` holding the registry user's credentials.
pub async fn create_pull_secret(client: &kube::Client, namespace: &str, registry: &Registry) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets
        .create(&PostParams::default(), &registry.pull_secret(PULL_SECRET))
        .await
        .expect("create the pull secret");
}

/// `isolane deploy` of the wrangler project in `dir` with `cp`'s
/// kubeconfig into `namespace`, its code and assets pushed to
/// `<registry>/<namespace>/<repository>` and pulled with [`PULL_SECRET`];
/// what it printed on stderr (what it pushed).
pub fn deploy(
    cp: &isolane_testenv::ControlPlane,
    registry: &Registry,
    (dir, namespace): (&Path, &str),
    repository: &str,
) -> String {
    deploy_with(cp, registry, (dir, namespace), repository, &[])
}

/// [`deploy`] with more environment variables (`ISOLANE_NODE` for a
/// project that wrangler builds).
pub fn deploy_with(
    cp: &isolane_testenv::ControlPlane,
    registry: &Registry,
    (dir, namespace): (&Path, &str),
    repository: &str,
    envs: &[(&str, &std::ffi::OsStr)],
) -> String {
    let output = Command::new(binary("isolane", "ISOLANE_BIN"))
        .envs(envs.iter().copied())
        .current_dir(dir)
        .args(["deploy", "-n", namespace, "--plain-http"])
        .args([
            "--repository",
            &format!("{}/{namespace}/{repository}", registry.host()),
        ])
        .args(["--pull-secret", PULL_SECRET])
        .env("KUBECONFIG", cp.kubeconfig_path())
        .env("ISOLANE_REGISTRY_USERNAME", registry.username())
        .env("ISOLANE_REGISTRY_PASSWORD", registry.password())
        .output()
        .expect("isolane deploy runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "isolane deploy in {} failed: {stderr}",
        dir.display()
    );
    stderr
}

/// The Worker's current revision.
pub fn revision_of(worker: &Worker) -> String {
    worker
        .status
        .as_ref()
        .and_then(|s| s.revision.clone())
        .expect("a revision")
}

/// Where [`switch_without_cold_start`] sends requests and reads metrics.
#[derive(Debug, Clone)]
pub struct Serving {
    pub ingress: Ingress,
    /// The only node's admin address (isolate-cache misses).
    pub node_admin: SocketAddr,
    /// The only router's admin address (prewarms).
    pub router_admin: SocketAddr,
    /// How long each step may take.
    pub settle: Duration,
}

/// Moves all traffic of the Worker `next` names (already serving the
/// revision `current`, answering `current_answer`) to `next`'s bundle,
/// which answers `next_answer`: `next` is applied with `current` pinned at
/// 100 %, then with the latest revision at 100 %. Asserts that every
/// request during the switch is answered by one revision or the other, that
/// the node counts no isolate-cache miss (no cold start: the router prewarms
/// the new revision before it takes the split) and that a prewarm happened.
/// Returns the new revision.
pub async fn switch_without_cold_start(
    client: &kube::Client,
    serving: &Serving,
    mut next: Worker,
    current: &str,
    (current_answer, next_answer): (&str, &str),
) -> String {
    let namespace = next.metadata.namespace.clone().expect("a namespace");
    let name = next.metadata.name.clone().expect("a name");
    let host = next.spec.routes[0].host.clone();
    let traffic = |revision: Option<&str>, percent| TrafficTarget {
        revision: revision.map(str::to_owned),
        latest_revision: revision.is_none().then_some(true),
        percent,
        tag: None,
    };
    // A count; `abs` turns an empty sum's -0 into 0 for the printout.
    let metric = |admin, name, label| async move {
        http::metric_sum(admin, name, label)
            .await
            .expect("metrics answer")
            .abs()
    };
    let misses = || {
        metric(
            serving.node_admin,
            "isolane_node_isolate_cache_lookups_total",
            "result=\"miss\"",
        )
    };
    let prewarms = || {
        metric(
            serving.router_admin,
            "isolane_router_prewarms_total",
            "outcome=\"ok\"",
        )
    };
    let prewarms_before = prewarms().await;
    next.spec.traffic = vec![traffic(Some(current), 100)];
    workers::apply(client, &namespace, &next).await;
    let held = wait_for_worker(
        client,
        &namespace,
        &name,
        "to hold the new revision at 0 %",
        serving.settle,
        |w| {
            has_condition(w, "Ready", "True", None)
                && w.status.as_ref().is_some_and(|s| {
                    s.revisions.len() >= 2 && s.revision.as_deref() != Some(current)
                })
        },
    )
    .await;
    let revision = revision_of(&held);
    let before = misses().await;
    // The router takes the new split only once the new revision is compiled
    // where its requests will go (its prewarm gate; the node pulls the
    // bundle for it).
    next.spec.traffic = vec![traffic(None, 100)];
    workers::apply(client, &namespace, &next).await;
    let mut failures = Vec::new();
    let mut served = 0;
    let switched = Instant::now();
    loop {
        let reply = serving.ingress.get(&host, "/").await;
        served += 1;
        match reply {
            Ok(reply) if reply.status == 200 && reply.body == next_answer => break,
            Ok(reply) if reply.status == 200 && reply.body == current_answer => {}
            other => failures.push(format!("{other:?}")),
        }
        assert!(
            switched.elapsed() < serving.settle,
            "the new revision never took the traffic"
        );
    }
    let after = misses().await;
    println!(
        "switch {current} -> {revision}: {served} requests, {:.0} ms, misses before {before}, after {after}; \
         router prewarms failed {}, node prewarms compiled {}",
        switched.elapsed().as_secs_f64() * 1000.0,
        metric(
            serving.router_admin,
            "isolane_router_prewarms_total",
            "outcome=\"failed\""
        )
        .await,
        metric(
            serving.node_admin,
            "isolane_node_prewarms_total",
            "result=\"compiled\""
        )
        .await,
    );
    assert!(
        failures.is_empty(),
        "requests failed during the switch: {failures:?}"
    );
    assert_eq!(after, before, "the switch caused a cold start");
    assert!(
        prewarms().await > prewarms_before,
        "the new revision was not prewarmed"
    );
    assert_ne!(revision, current);
    revision
}
