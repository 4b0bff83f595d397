//! What the tests of an installed chart share: a pod's readiness, a Worker
//! manifest of one script, the router Service's address, and waiting for a
//! Worker's first answer through it.

use std::net::SocketAddr;
use std::time::Duration;

use isolane_testenv::wait_until;
use k8s_openapi::api::core::v1::{Pod, Service};

use crate::ingress::{Ingress, Reply};

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
