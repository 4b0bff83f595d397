//! What the tests of an installed chart share: a control plane with a
//! kubelet node holding the project's images, the values every install there
//! sets and the install itself, a pod's readiness, a Worker manifest of one script, the router
//! Service's address, and waiting for a Worker's first answer through it.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use isolane_testenv::{Config, ControlPlane, NodeConfig, wait_until};
use k8s_openapi::api::core::v1::{Pod, Service};

use crate::images::{self, PAUSE_IMAGE};
use crate::ingress::{Ingress, Reply};

/// A control plane with a kubelet node whose containerd holds the images
/// `make images` builds (their archives written under `image_dir`).
pub async fn kubelet_control_plane(image_dir: &Path) -> ControlPlane {
    let archives = images::build(image_dir);
    let config = Config {
        node: Some(NodeConfig {
            images: archives.iter().map(|(_, path)| path.clone()).collect(),
            pause_image: images::reference(PAUSE_IMAGE),
        }),
        ..Config::from_env()
    };
    ControlPlane::start_with(config)
        .await
        .expect("control plane with a node")
}

/// `helm --set` arguments every install on the test kubelet takes: the
/// images loaded there, never pulled, and the small requests and one engine
/// thread a shared 2-core machine holds.
pub fn kubelet_values() -> Vec<String> {
    [
        format!("image.registry={}", images::REGISTRY),
        format!("image.tag={}", images::TAG),
        "image.pullPolicy=Never".to_owned(),
        "node.resources.requests.cpu=100m".to_owned(),
        "node.resources.requests.memory=128Mi".to_owned(),
        "node.config.threads=1".to_owned(),
    ]
    .into_iter()
    .flat_map(|value| ["--set".to_owned(), value])
    .collect()
}

/// `helm install` of `chart` (the chart's folder, or `oci://…@sha256:…`) as
/// `release` into `namespace` (created) on the test kubelet, with
/// [`kubelet_values`], waiting up to 4 minutes for every pod to be Ready:
/// `helm` with these arguments added, for the caller's own `--set`s.
pub fn helm_install<'a>(
    helm: &'a mut Command,
    release: &str,
    chart: impl AsRef<OsStr>,
    kubeconfig: &Path,
    namespace: &str,
) -> &'a mut Command {
    helm.args(["install", release])
        .arg(chart)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--namespace", namespace, "--create-namespace"])
        .args(kubelet_values())
        .args(["--wait", "--timeout", "4m"])
}

/// Whether `pod` has the `Ready` condition.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A Worker `name` in namespace `default`, routed on `host`, of `script`.
pub fn worker_yaml(name: &str, host: &str, script: &str) -> String {
    let script: String = script.lines().map(|line| format!("    {line}\n")).collect();
    format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  routes:\n    - host: {host}\n  script: |\n{script}"
    )
}

/// The ClusterIP and port of release `release`'s router Service in
/// `namespace` (which only kube-proxy's rules send to the router pod).
pub async fn router_service(client: kube::Client, namespace: &str, release: &str) -> SocketAddr {
    let service = kube::Api::<Service>::namespaced(client, namespace)
        .get(&format!("{release}-router"))
        .await
        .expect("the router's Service");
    let spec = service.spec.expect("a Service spec");
    let ip = spec.cluster_ip.expect("a ClusterIP");
    let port = spec.ports.unwrap_or_default()[0].port;
    format!("{ip}:{port}").parse().expect("an address")
}

/// The first 200 of `GET /` on `host` through `ingress`, within 90 s.
pub async fn first_answer(ingress: &Ingress, host: &str) -> Reply {
    wait_until(
        "the Worker to answer through the Service",
        Duration::from_secs(90),
        || {
            let ingress = ingress.clone();
            let host = host.to_owned();
            async move {
                match ingress.get(&host, "/").await {
                    Ok(reply) if reply.status == 200 => Some(reply),
                    _ => None,
                }
            }
        },
    )
    .await
}
