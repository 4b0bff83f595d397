//! The nodes' pressure through the custom metrics API (issue 62): a real
//! kube-apiserver with the aggregation layer, the operator, two runtime
//! nodes whose warm sets hold one isolate each (one thread,
//! `--isolates-per-thread 1`) and the router with its aggregated API on
//! loopback, registered as the APIService `v1beta2.custom.metrics.k8s.io`
//! behind an ExternalName Service of `127.0.0.1`, read with
//! `kubectl get --raw` as an HPA controller reads it:
//! 1. discovery lists `pods/warm_set_evictions_per_second`;
//! 2. idle, each node's pod has a value, and every value is 0;
//! 3. requests cycling through more Workers than the warm sets hold make
//!    the nodes evict: the values rise above 1/s, every request answered;
//! 4. when the load stops the values fall back to 0.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use isolane_e2e::aggregated::AggregatedApi;
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions, RouterOptions};
use isolane_e2e::load::{Load, LoadOptions, Target};
use isolane_e2e::operator::OPERATOR_NAMESPACE;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, TestCa, free_port, wait_until};

const SETTLE: Duration = Duration::from_secs(120);
const API_NAMESPACE: &str = "metrics-api";
const API_SERVICE: &str = "isolane-metrics-api";
const METRICS_API: AggregatedApi = AggregatedApi {
    group: "custom.metrics.k8s.io",
    version: "v1beta2",
    group_priority_minimum: 100,
    version_priority: 200,
    namespace: API_NAMESPACE,
    service: API_SERVICE,
};
const BASE: &str = "/apis/custom.metrics.k8s.io/v1beta2";
const METRIC: &str = "warm_set_evictions_per_second";
/// More Workers than the two nodes' warm sets hold (one isolate each).
const WORKERS: usize = 6;

const HELLO: &str = "export default { fetch(request) {
    return new Response('hello from ' + new URL(request.url).hostname);
} };";

/// `kubectl get --raw path` with the admin kubeconfig: its stdout, or its
/// stderr.
fn get_raw(cp: &ControlPlane, path: &str) -> Result<String, String> {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["get", "--raw", path])
        .output()
        .map_err(|e| e.to_string())?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

/// Each item of the `MetricValueList` at `path`: (pod, value).
fn values(cp: &ControlPlane, path: &str) -> Result<Vec<(String, f64)>, String> {
    let text = get_raw(cp, path)?;
    let list: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if list["kind"] != "MetricValueList" {
        return Err(format!("not a MetricValueList: {text}"));
    }
    let items = list["items"].as_array().ok_or("no items")?;
    items
        .iter()
        .map(|item| {
            let described = &item["describedObject"];
            if described["kind"] != "Pod" || described["namespace"] != OPERATOR_NAMESPACE {
                return Err(format!("not a node's pod: {item}"));
            }
            let name = described["name"].as_str().ok_or("no name")?.to_owned();
            let value = quantity(item["value"].as_str().ok_or("no value")?)?;
            Ok((name, value))
        })
        .collect()
}

/// A quantity as the API writes it (`1500m`, `2`).
fn quantity(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.strip_suffix('m') {
        Some(milli) => (milli, 1000.0),
        None => (text, 1.0),
    };
    number
        .parse::<f64>()
        .map(|n| n / scale)
        .map_err(|e| format!("{text}: {e}"))
}

/// The path of `metric` for every pod of the nodes' namespace.
fn pods_path(metric: &str) -> String {
    format!("{BASE}/namespaces/{OPERATOR_NAMESPACE}/pods/*/{metric}")
}

/// Waits until both nodes have a value of [`METRIC`] and `accept` takes
/// them; returns them.
async fn wait_for_values(
    cp: &ControlPlane,
    what: &str,
    accept: impl Fn(&[(String, f64)]) -> bool,
) -> Vec<(String, f64)> {
    wait_until(what, SETTLE, || {
        let seen = values(cp, &pods_path(METRIC)).and_then(|values| {
            if values.len() == 2 && accept(&values) {
                Ok(values)
            } else {
                Err(format!("values: {values:?}"))
            }
        });
        async move { seen }
    })
    .await
}

/// Two nodes of one thread and one warm isolate, and the router with its
/// aggregated API on `addr` serving a certificate of `ca`.
async fn start_system(cp: &ControlPlane, dir: &Path, addr: SocketAddr, ca: &TestCa) -> Cluster {
    let options = ClusterOptions {
        nodes: 2,
        node: NodeOptions {
            threads: 1,
            isolates_per_thread: 1,
            ..NodeOptions::default()
        },
        router: RouterOptions {
            extra_args: METRICS_API.router_args(ca, dir, addr),
            ..RouterOptions::default()
        },
        ..ClusterOptions::default()
    };
    Cluster::start(cp, dir, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_pressure_is_served_as_custom_metrics_and_moves_with_evictions() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &["tenant-a"]).await;
    cp.create_namespace(API_NAMESPACE).await.expect("namespace");
    let dir = tempfile::tempdir().expect("temp dir");
    let api_addr: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let ca = TestCa::new("isolane-metrics-api-ca").expect("a CA");
    let cluster = start_system(&cp, dir.path(), api_addr, &ca).await;
    let client = cp.client();
    for i in 0..WORKERS {
        let host = format!("w{i}.test");
        let worker = inline_worker(&format!("w{i}"), HELLO, &[host.as_str()]);
        workers::apply(&client, "tenant-a", &worker).await;
    }
    for i in 0..WORKERS {
        workers::wait_ready(&client, "tenant-a", &format!("w{i}"), SETTLE).await;
    }
    METRICS_API
        .register(&cp, api_addr.port(), &ca.cert_pem())
        .await;

    // === 1. discovery ===
    wait_until("the APIService to be served", SETTLE, || {
        let listed = get_raw(&cp, BASE).and_then(|list| {
            if list.contains(&format!("pods/{METRIC}")) {
                Ok(())
            } else {
                Err(format!("discovery without pods/{METRIC}: {list}"))
            }
        });
        async move { listed }
    })
    .await;

    // === 2. idle: a value per node pod, all 0 ===
    let idle = wait_for_values(&cp, "both nodes idle", |v| v.iter().all(|(_, x)| *x == 0.0)).await;
    let mut pods: Vec<&str> = idle.iter().map(|(pod, _)| pod.as_str()).collect();
    pods.sort_unstable();
    let mut nodes = cluster.node_names();
    nodes.sort();
    assert_eq!(pods, nodes, "one value per node, naming its pod");
    let in_flight = values(&cp, &pods_path("in_flight_requests_per_thread")).expect("in flight");
    assert_eq!(in_flight.len(), 2, "{in_flight:?}");
    let one = format!(
        "{BASE}/namespaces/{OPERATOR_NAMESPACE}/pods/{}/{METRIC}",
        nodes[0]
    );
    assert_eq!(values(&cp, &one).expect("one pod's value").len(), 1);
    println!("idle: {idle:?}");

    // === 3. load over more Workers than the warm sets hold ===
    let targets = (0..WORKERS)
        .map(|i| Target::host(&format!("w{i}.test")))
        .collect();
    let load = Load::start(cluster.ingress(), targets, LoadOptions::default());
    let started = Instant::now();
    let loaded = wait_for_values(&cp, "evictions under load", |v| {
        v.iter().map(|(_, x)| x).sum::<f64>() > 1.0
    })
    .await;
    println!(
        "under load (after {:?}, {} requests sent): {loaded:?}",
        started.elapsed(),
        load.sent()
    );
    let tally = load.stop().await;
    println!("load: {}", tally.summary());
    assert!(!tally.samples.is_empty());
    assert_eq!(
        tally.failures().len(),
        0,
        "every request answered: {}",
        tally.describe_failures(started)
    );

    // === 4. the load stops: back to 0 ===
    let stopped = Instant::now();
    let after = wait_for_values(&cp, "evictions to stop", |v| {
        v.iter().all(|(_, x)| *x == 0.0)
    })
    .await;
    println!("idle again after {:?}: {after:?}", stopped.elapsed());
    cluster.shutdown();
}
