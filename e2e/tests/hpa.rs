//! Nodes that scale on isolate pressure, on a real kubelet (issue 62): the
//! chart installed with the nodes as a Deployment and
//! `node.autoscaling.enabled` (a HorizontalPodAutoscaler on
//! `warm_set_evictions_per_second`, the router's custom metrics API behind
//! the apiserver), one node of one thread whose warm set holds one isolate,
//! and kube-controller-manager's HPA controller (sync every 5 s in the test
//! environment) acting on it:
//! 1. requests cycling through six Workers overflow the node's warm set:
//!    the HPA scales the Deployment to 2 (after 30 s of it), the new node
//!    answers requests, and the evictions per node fall;
//! 2. the load stops (a light load on one Worker goes on, counted): the HPA
//!    scales back to 1, the removed node drains, and no request fails.
//!
//! Needs root (the node: containerd, a bridge, iptables); see docs/testing.md.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_e2e::ingress::Ingress;
use isolane_e2e::load::{Load, LoadOptions, Target};
use isolane_e2e::process::workspace_root;
use isolane_e2e::release::{
    first_answer, helm_install, is_ready, kubelet_control_plane, router_service, worker_yaml,
};
use isolane_e2e::tools::{run, text, tool};
use isolane_testenv::wait_until;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

const RELEASE: &str = "isolane";
const NAMESPACE: &str = "isolane-system";
const WORKERS: usize = 6;
const METRIC: &str = "warm_set_evictions_per_second";
const SCALE: Duration = Duration::from_secs(240);

const HELLO: &str = "export default { fetch(request) {
    return new Response('hello from ' + new URL(request.url).hostname);
} };";

fn host(i: usize) -> String {
    format!("w{i}.hpa.test")
}

/// `helm install --wait` with the nodes autoscaled between 1 and 2.
fn install(kubeconfig: &Path) {
    // Scale-up once the pressure held for 30 s (the rate's window then
    // holds only loaded seconds); scale-down at once.
    let behavior = r#"{"scaleUp":{"stabilizationWindowSeconds":30},"scaleDown":{"stabilizationWindowSeconds":0}}"#;
    let output = run(
        helm_install(
            &mut Command::new(tool("helm")),
            RELEASE,
            workspace_root().join("charts/isolane"),
            kubeconfig,
            NAMESPACE,
        )
        .args(["--set", "node.kind=Deployment"])
        .args(["--set", "node.autoscaling.enabled=true"])
        .args(["--set", "node.autoscaling.minReplicas=1"])
        .args(["--set", "node.autoscaling.maxReplicas=2"])
        .args(["--set", "node.autoscaling.targetAverageValue=5"])
        .args([
            "--set-json",
            &format!("node.autoscaling.behavior={behavior}"),
        ])
        .args(["--set", "node.config.isolatesPerThread=1"])
        .args(["--set", "router.replicas=1"])
        .args(["--set", "operator.replicas=1"]),
        None,
    );
    assert!(output.status.success(), "helm install: {}", text(&output));
}

/// `kubectl apply` of `manifest`, which must succeed.
fn apply(kubeconfig: &Path, manifest: &str) {
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["apply", "-f", "-"]),
        Some(manifest),
    );
    assert!(output.status.success(), "kubectl apply: {}", text(&output));
}

/// The node pods' values of [`METRIC`], as the HPA controller reads them.
fn metric_values(kubeconfig: &Path) -> Result<String, String> {
    let path =
        format!("/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}/pods/*/{METRIC}");
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["get", "--raw", &path]),
        None,
    );
    if !output.status.success() {
        return Err(text(&output));
    }
    let list: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
    let values: Vec<String> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| format!("{}={}", i["describedObject"]["name"], i["value"]))
                .collect()
        })
        .unwrap_or_default();
    Ok(values.join(" "))
}

/// The average of the node pods' values in `values` (`"pod"="12500m" …`),
/// when every pod of `pods` has one.
fn average(values: &str, pods: &[String]) -> Option<f64> {
    let mut sum = 0.0;
    for pod in pods {
        let (_, rest) = values.split_once(&format!("\"{pod}\"=\""))?;
        let (quantity, _) = rest.split_once('"')?;
        sum += match quantity.strip_suffix('m') {
            Some(milli) => milli.parse::<f64>().ok()? / 1000.0,
            None => quantity.parse::<f64>().ok()?,
        };
    }
    Some(sum / pods.len() as f64)
}

/// The Ready node pods' names, once there are `count` and no other.
async fn wait_for_node_pods(pods: &kube::Api<Pod>, count: usize, what: &str) -> Vec<String> {
    wait_until(what, SCALE, || async {
        let list = pods
            .list(&ListParams::default().labels("app.kubernetes.io/component=node"))
            .await
            .ok()?;
        let ready = list.items.iter().all(is_ready);
        (list.items.len() == count && ready).then(|| {
            list.items
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect()
        })
    })
    .await
}

/// The node Deployment's replicas as the HPA set them.
async fn replicas(deployments: &kube::Api<Deployment>) -> Option<i32> {
    deployments
        .get(&format!("{RELEASE}-node"))
        .await
        .ok()?
        .spec?
        .replicas
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hpa_adds_a_node_under_warm_set_pressure_and_removes_it_after() {
    if std::env::var_os(isolane_testenv::ENV_TEST_KUBECONFIG).is_some() {
        return;
    }
    let image_dir = tempfile::tempdir().expect("tempdir");
    let cp = kubelet_control_plane(image_dir.path()).await;
    let kubeconfig = cp.kubeconfig_path().to_owned();
    install(&kubeconfig);
    let pods = kube::Api::<Pod>::namespaced(cp.client(), NAMESPACE);
    let deployments = kube::Api::<Deployment>::namespaced(cp.client(), NAMESPACE);
    let first = wait_for_node_pods(&pods, 1, "one node pod, Ready").await;
    for i in 0..WORKERS {
        apply(&kubeconfig, &worker_yaml(&format!("w{i}"), &host(i), HELLO));
    }
    let address = router_service(cp.client(), NAMESPACE, RELEASE).await;
    let ingress = Ingress::new(address);
    for i in 0..WORKERS {
        first_answer(&ingress, &host(i)).await;
    }
    let idle = wait_until("the node's value through the apiserver", SCALE, || {
        let values = metric_values(&kubeconfig)
            .ok()
            .filter(|v| v.contains(&first[0]));
        async move { values }
    })
    .await;
    eprintln!("idle: {idle}");

    // === 1. pressure: the HPA adds a node, which takes requests ===
    let targets = (0..WORKERS).map(|i| Target::host(&host(i))).collect();
    // Open loop: at most 40 requests a second in all, which one node keeps
    // up with, so that two nodes share the same evictions.
    let offered = LoadOptions {
        concurrency: 4,
        pause: Duration::from_millis(100),
    };
    let load = Load::start(address, targets, offered);
    let loaded = Instant::now();
    wait_until("the HPA to scale the nodes to 2", SCALE, || async {
        (replicas(&deployments).await == Some(2)).then_some(())
    })
    .await;
    let scaled_up = loaded.elapsed();
    let one_node = metric_values(&kubeconfig).unwrap_or_default();
    let one_node_rate = average(&one_node, &first).expect("the first node's value");
    eprintln!("scaled to 2 after {scaled_up:?} of load; values: {one_node}");
    let both = wait_for_node_pods(&pods, 2, "two node pods, Ready").await;
    let added = both
        .iter()
        .find(|name| !first.contains(name))
        .expect("a new node pod")
        .clone();
    load.wait_for("the new node to answer requests", 1, SCALE, |sample| {
        sample.node() == Some(added.as_str())
    })
    .await;
    eprintln!(
        "{added} answered after {:?}; values: {}",
        loaded.elapsed(),
        metric_values(&kubeconfig).unwrap_or_default()
    );
    // The same load over two nodes: the HPA's average falls (to about half
    // once the first node's window holds only shared seconds).
    let shared = wait_until("the evictions per node to fall", SCALE, || {
        let values = metric_values(&kubeconfig).unwrap_or_default();
        let fell = average(&values, &both).is_some_and(|a| a < 0.75 * one_node_rate);
        async move { fell.then_some(values) }
    })
    .await;
    eprintln!(
        "evictions per node fell from {one_node_rate:.1}/s after {:?}: {shared}",
        loaded.elapsed()
    );
    let heavy = load.stop().await;
    eprintln!("heavy load: {}", heavy.summary());

    // === 2. the load stops: back to one node, no request failed ===
    let light = Load::start(
        address,
        vec![Target::host(&host(0))],
        LoadOptions {
            concurrency: 1,
            pause: Duration::from_millis(20),
        },
    );
    let stopped = Instant::now();
    wait_until("the HPA to scale the nodes to 1", SCALE, || async {
        (replicas(&deployments).await == Some(1)).then_some(())
    })
    .await;
    let scaled_down = stopped.elapsed();
    wait_for_node_pods(&pods, 1, "one node pod left").await;
    eprintln!(
        "scaled to 1 after {scaled_down:?} without the load, one pod after {:?}",
        stopped.elapsed()
    );
    let light = light.stop().await;
    eprintln!("light load: {}", light.summary());
    assert_eq!(
        heavy.failures().len(),
        0,
        "{}",
        heavy.describe_failures(loaded)
    );
    assert_eq!(
        light.failures().len(),
        0,
        "{}",
        light.describe_failures(stopped)
    );
}
