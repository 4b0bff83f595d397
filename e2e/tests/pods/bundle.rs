//! An 8 MiB bundle on the kubelet (issue 31): the test registry listens on
//! the node's bridge address, which pods reach as they reach the apiserver;
//! the chart lists it (`bundleRegistries`, and `plainHttpRegistries`: it
//! speaks plain HTTP) for the operator and the node; `isolane push` packs and
//! pushes a folder with an 8 MiB Data module; the Worker naming it by digest,
//! with the namespace's pull secret, is applied and answers through the
//! router's Service; a second digest then takes all traffic with no cold
//! start on the node pod, as `e2e/tests/bundles.rs` checks it for processes.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use isolane_e2e::bundles::{
    self, BLOB_BYTES, PULL_SECRET, Serving, Target, answer, create_pull_secret, revision_of,
    wait_for_answer, write_bundle,
};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::workers::{self, wait_ready};
use isolane_testenv::{NODE_IP, Registry};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

const NAMESPACE: &str = "default";
const HOST: &str = "big.pods.test";
const SETTLE: Duration = Duration::from_secs(120);

/// The registry, on the node's address (the pods' gateway).
pub fn start_registry() -> Registry {
    let ip: IpAddr = NODE_IP.parse().expect("the node's address");
    Registry::start_on(ip, "isolane", "pull-me").expect("the registry starts")
}

/// `helm --set` arguments listing `registry` for the operator and the node.
pub fn helm_values(registry: &Registry) -> Vec<String> {
    ["operator", "node"]
        .into_iter()
        .flat_map(|component| {
            ["bundleRegistries", "plainHttpRegistries"]
                .map(|key| format!("{component}.config.{key}={}", registry.host()))
        })
        .flat_map(|value| ["--set".to_owned(), value])
        .collect()
}

/// The admin address (`/metrics`) of the only Ready pod of `component`.
async fn admin_of(pods: &kube::Api<Pod>, component: &str) -> SocketAddr {
    let list = pods
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/component={component}")))
        .await
        .expect("list pods");
    let [pod] = list.items.as_slice() else {
        panic!("one {component} pod, not {}", list.items.len());
    };
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .expect("a pod IP");
    let port = pod
        .spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .flat_map(|container| container.ports.iter().flatten())
        .find(|port| port.name.as_deref() == Some("admin"))
        .expect("an admin port")
        .container_port;
    format!("{ip}:{port}").parse().expect("an address")
}

/// Pushes v1, applies it, waits for its answer through the router's Service
/// (at `ingress`), then switches all traffic to v2 (another digest).
pub async fn pushed_served_and_switched(
    client: &kube::Client,
    pods: &kube::Api<Pod>,
    registry: &Registry,
    ingress: &Ingress,
    dir: &Path,
) {
    create_pull_secret(client, NAMESPACE, registry).await;
    let target = Target {
        name: "big",
        namespace: NAMESPACE,
        host: HOST,
        pull_secret: Some(PULL_SECRET),
    };
    let blob = bundles::blob();
    write_bundle(&dir.join("v1"), "v1", &blob);
    let v1_worker = bundles::push(registry, &dir.join("v1"), "pods/big", target);
    let applied = Instant::now();
    workers::apply(client, NAMESPACE, &v1_worker).await;
    let v1 = revision_of(&wait_ready(client, NAMESPACE, "big", SETTLE).await);
    let expected_v1 = answer("v1", BLOB_BYTES);
    wait_for_answer(ingress, HOST, &expected_v1, SETTLE).await;
    eprintln!(
        "8 MiB bundle on the kubelet: applied to first answer through the Service {:.0} ms",
        applied.elapsed().as_secs_f64() * 1000.0
    );

    write_bundle(&dir.join("v2"), "v2", &blob);
    let v2_worker = bundles::push(registry, &dir.join("v2"), "pods/big", target);
    assert_ne!(v2_worker.spec.bundle, v1_worker.spec.bundle);
    let serving = Serving {
        ingress: ingress.clone(),
        node_admin: admin_of(pods, "node").await,
        router_admin: admin_of(pods, "router").await,
        settle: SETTLE,
    };
    let expected_v2 = answer("v2", BLOB_BYTES);
    bundles::switch_without_cold_start(
        client,
        &serving,
        v2_worker,
        &v1,
        (&expected_v1, &expected_v2),
    )
    .await;
}
