//! `isolane tail` as a tenant runs it (issue 34): a real kube-apiserver with
//! RBAC, the operator, two runtime nodes and the router (with its tail
//! endpoint) as processes, the `isolane` binary with a kubeconfig whose user
//! is a ServiceAccount token.
//!
//! The identity has `get` on `workers/tail` only in namespace `tenant-a`
//! (a RoleBinding to the ClusterRole `isolane-worker-tail`):
//! 1. it tails `tenant-a`'s Worker and sees its invocations and console
//!    lines, from both nodes (the Worker moves to the second node when the
//!    first drains), each invocation exactly once;
//! 2. tailing `tenant-b`'s Worker is refused, with a message naming the
//!    namespace and the permission.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::process;
use isolane_e2e::tenant;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Process, free_port, wait_until};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

const SETTLE: Duration = Duration::from_secs(90);

/// Environment variable naming a prebuilt `isolane` binary.
const CLI_BIN_ENV: &str = "ISOLANE_BIN";

const TALKER: &str = "export default { fetch(request) {
    const path = new URL(request.url).pathname;
    console.log('tail me', path);
    return new Response('ok ' + path);
} };";

/// The chart's ClusterRole (charts/isolane/templates/rbac.yaml).
fn tail_role() -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some("isolane-worker-tail".to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["isolane.dev".to_owned()]),
            resources: Some(vec!["workers/tail".to_owned()]),
            verbs: vec!["get".to_owned()],
            ..PolicyRule::default()
        }]),
        ..ClusterRole::default()
    }
}

/// A ServiceAccount `reader` in `namespace`, bound to the tail role there;
/// returns its token.
async fn reader(cp: &ControlPlane, namespace: &str) -> String {
    tenant::account_token(cp, namespace, "reader", "isolane-worker-tail").await
}

fn tail_args(worker: &str, namespace: &str, endpoint: SocketAddr) -> Vec<String> {
    [
        "tail",
        worker,
        "-n",
        namespace,
        "--endpoint",
        &format!("http://{endpoint}"),
        "--format",
        "json",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The tail's JSON events so far: url → nodes it was seen on (once each).
fn seen(log: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(url), Some(node)) = (event["url"].as_str(), event["node"].as_str()) else {
            continue;
        };
        let logs = event["logs"].to_string();
        assert!(logs.contains(&format!("tail me {url}")), "{line}");
        seen.entry(url.to_owned())
            .or_default()
            .push(node.to_owned());
    }
    seen
}

/// `GET /{name}/0` … `/{name}/9` of tenant-a's Worker, each sent until it
/// is answered 200 (a node may be draining); the nodes that served them.
async fn batch(ingress: &Ingress, name: &str) -> Vec<String> {
    let mut nodes = Vec::new();
    for i in 0..10 {
        let path = format!("/{name}/{i}");
        let node = wait_until("a request to be served", SETTLE, || {
            let (ingress, path) = (ingress.clone(), path.clone());
            async move {
                let reply = ingress.get("a.test", &path).await.ok()?;
                (reply.status == 200).then_some(reply.node)
            }
        })
        .await;
        nodes.extend(node);
    }
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_tails_its_own_worker_across_nodes_and_not_another_namespaces() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &["tenant-a", "tenant-b"]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tail_addr: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let options = ClusterOptions {
        nodes: 2,
        router: RouterOptions {
            extra_args: vec!["--tail-addr".to_owned(), tail_addr.to_string()],
            ..RouterOptions::default()
        },
        ..ClusterOptions::default()
    };
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;
    let client = cp.client();
    workers::apply(
        &client,
        "tenant-a",
        &inline_worker("talker", TALKER, &["a.test"]),
    )
    .await;
    workers::apply(
        &client,
        "tenant-b",
        &inline_worker("talker", TALKER, &["b.test"]),
    )
    .await;
    workers::wait_ready(&client, "tenant-a", "talker", SETTLE).await;
    workers::wait_ready(&client, "tenant-b", "talker", SETTLE).await;
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &tail_role())
        .await
        .expect("create the tail ClusterRole");
    let token = reader(&cp, "tenant-a").await;
    let kubeconfig: PathBuf = dir.path().join("tenant-a.kubeconfig");
    tenant::kubeconfig_with(&cp, &token, &kubeconfig);
    let env: [(&str, &OsStr); 1] = [("KUBECONFIG", kubeconfig.as_os_str())];
    let cli = process::binary("isolane", CLI_BIN_ENV);
    let ingress = Ingress::new(cluster.ingress());

    // === 2. another namespace's Worker: refused, clearly ===
    let refused = std::process::Command::new(&cli)
        .args(tail_args("talker", "tenant-b", tail_addr))
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("run isolane tail");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("403")
            && stderr.contains("may not tail workers in namespace tenant-b")
            && stderr.contains("workers/tail"),
        "{stderr}"
    );

    // === 1. its own Worker: every invocation once, from both nodes ===
    let log = dir.path().join("tail-a.log");
    let mut tail = Process::spawn(
        "isolane tail",
        &cli,
        tail_args("talker", "tenant-a", tail_addr),
        &env,
        &log,
    )
    .expect("start isolane tail");
    // The tail is open once an invocation shows.
    wait_until("the tail to show an invocation", SETTLE, || {
        let (ingress, log) = (ingress.clone(), log.clone());
        async move {
            let _ = ingress.get("a.test", "/warmup").await;
            (!seen(&log).is_empty()).then_some(())
        }
    })
    .await;
    let first = batch(&ingress, "first").await;
    // The node serving it drains: the Worker moves to the other node, and
    // the tail (open on both) shows those invocations too.
    let serving = first.first().cloned().expect("the first batch was served");
    cluster.node_mut(&serving).drain_and_wait(SETTLE).await;
    let second = batch(&ingress, "second").await;
    // A node joins while the tail is open: the router tails it too (it
    // looks for new nodes every 2 s), and once the serving node drains,
    // the Worker's invocations there show.
    let joined = cluster.add_node(&cp).await;
    wait_until("the open tail to reach the new node", SETTLE, || {
        let log = cluster.node_mut(&joined).process.log();
        async move { log.contains("tail opened").then_some(()) }
    })
    .await;
    let serving = second
        .first()
        .cloned()
        .expect("the second batch was served");
    cluster.node_mut(&serving).drain_and_wait(SETTLE).await;
    let third = batch(&ingress, "third").await;
    let want: Vec<String> = ["first", "second", "third"]
        .iter()
        .flat_map(|batch| (0..10).map(move |i| format!("/{batch}/{i}")))
        .collect();
    let seen = wait_until("every invocation in the tail", SETTLE, || {
        let (log, want) = (log.clone(), want.clone());
        async move {
            let seen = seen(&log);
            want.iter()
                .all(|url| seen.contains_key(url))
                .then_some(seen)
        }
    })
    .await;
    let nodes: BTreeSet<&String> = want.iter().flat_map(|url| &seen[url]).collect();
    println!(
        "tail: {} invocations from nodes {nodes:?} (served by {first:?}, then {second:?}, then {third:?})",
        want.len()
    );
    for url in &want {
        assert_eq!(seen[url].len(), 1, "{url} appeared {:?}", seen[url]);
    }
    assert_eq!(
        nodes.len(),
        3,
        "the tail shows every node's invocations: {nodes:?}"
    );
    assert!(nodes.contains(&joined), "{nodes:?}");
    tail.kill();
    cluster.shutdown();
}
