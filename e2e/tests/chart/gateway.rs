//! The router behind an existing Gateway (`router.httpRoute.*`,
//! docs/tls.md#behind-a-gateway): the HTTPRoute the chart renders, installed
//! by Helm into an apiserver that serves the real Gateway API CRDs
//! (standard channel, `hack/fetch-gateway-api.sh`), so their schema and CEL
//! rules judge it. No Gateway implementation runs here; traffic through a
//! real one (Traefik) is gateway_traffic.rs's.

use std::path::PathBuf;
use std::time::Duration;

use isolane_testenv::{ControlPlane, wait_until};

use super::cluster::{control_plane, exists, helm_action, helm_at, kubectl_json};
use super::*;

const GATEWAY_NAMESPACE: &str = "gateways";

/// A GatewayClass no controller claims and a Gateway of it that takes routes
/// from every namespace: what a platform team's shared Gateway looks like.
const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: shared
spec:
  controllerName: example.com/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: public
  namespace: gateways
spec:
  gatewayClassName: shared
  listeners:
    - name: http
      protocol: HTTP
      port: 80
      allowedRoutes:
        namespaces:
          from: All
";

const ROUTE_VALUES: &[&str] = &[
    "--set",
    "router.httpRoute.enabled=true",
    "--set",
    "router.httpRoute.parentRefs[0].name=public",
    "--set",
    "router.httpRoute.parentRefs[0].namespace=gateways",
    "--set",
    "router.httpRoute.parentRefs[0].sectionName=http",
    "--set",
    "router.httpRoute.hostnames[0]=*.workers.example.com",
];

/// The cached folder of the Gateway API CRDs; the script fetches them the
/// first time (install-deps has already, on CI) and prints the folder.
pub(super) fn gateway_api_crds() -> PathBuf {
    let script = workspace_root().join("hack/fetch-gateway-api.sh");
    let folder = run_ok(&mut Command::new(script), None);
    PathBuf::from(folder.trim()).join("crds")
}

#[test]
fn no_httproute_by_default_and_none_without_a_gateway_to_attach_to() {
    let objects = documents(&template(&[]));
    assert!(
        !objects.iter().any(|object| kind(object) == "HTTPRoute"),
        "an HTTPRoute with default values"
    );
    let output = template_output(&["--set", "router.httpRoute.enabled=true"]);
    assert!(!output.status.success(), "rendered without parentRefs");
    assert!(
        text(&output).contains("router.httpRoute.enabled needs router.httpRoute.parentRefs"),
        "{}",
        text(&output)
    );
    let output = template_output(&[
        "--set",
        "router.httpRoute.enabled=true",
        "--set",
        "router.httpRoute.parentRefs[0].namespace=gateways",
    ]);
    assert!(!output.status.success(), "a parentRef without a name");
    assert!(text(&output).contains("name"), "{}", text(&output));
}

async fn gateway_control_plane() -> ControlPlane {
    let cp = control_plane().await;
    run_ok(
        cp.kubectl(["apply", "--server-side", "-f"])
            .arg(gateway_api_crds()),
        None,
    );
    run_ok(
        &mut cp.kubectl([
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ]),
        None,
    );
    cp.create_namespace(GATEWAY_NAMESPACE)
        .await
        .expect("namespace");
    run_ok(
        &mut cp.kubectl(["apply", "--server-side", "-f", "-"]),
        Some(GATEWAY),
    );
    cp
}

#[tokio::test]
async fn helm_attaches_the_router_to_an_existing_gateway() {
    let cp = gateway_control_plane().await;
    let installed = helm_action(&cp, "install", ROUTE_VALUES);
    assert!(installed.status.success(), "{}", text(&installed));

    let route = kubectl_json(
        &cp,
        &["get", "httproute", "isolane-router", "-n", NAMESPACE],
    );
    let service = kubectl_json(&cp, &["get", "service", "isolane-router", "-n", NAMESPACE]);
    let http_port = service["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|port| port["name"] == "http")
        .map(|port| port["port"].clone())
        .expect("the Service's http port");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    // The CRD's defaults filled group and kind: its schema was applied.
    assert_eq!(
        route["spec"]["parentRefs"],
        serde_json::json!([{
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "public",
            "namespace": "gateways",
            "sectionName": "http",
        }])
    );
    assert_eq!(
        route["spec"]["hostnames"],
        serde_json::json!(["*.workers.example.com"])
    );
    let backend = &route["spec"]["rules"][0]["backendRefs"][0];
    assert_eq!(backend["name"], "isolane-router");
    assert_eq!(backend["kind"], "Service");
    assert_eq!(backend["port"], http_port);

    refused_by_the_crd(&cp);
    uninstalled(&cp).await;
}

/// An upgrade to a hostname the CRD's pattern refuses fails at the apiserver
/// and leaves the route as it was.
fn refused_by_the_crd(cp: &ControlPlane) {
    let output = helm_action(
        cp,
        "upgrade",
        &[
            "--reuse-values",
            "--set",
            "router.httpRoute.hostnames[0]=Workers_Example",
        ],
    );
    assert!(!output.status.success(), "an invalid hostname was accepted");
    assert!(
        text(&output).contains("spec.hostnames[0]"),
        "{}",
        text(&output)
    );
    let route = kubectl_json(cp, &["get", "httproute", "isolane-router", "-n", NAMESPACE]);
    assert_eq!(
        route["spec"]["hostnames"],
        serde_json::json!(["*.workers.example.com"])
    );
}

async fn uninstalled(cp: &ControlPlane) {
    run_ok(
        &mut helm_at(cp, &["uninstall", RELEASE, "-n", NAMESPACE, "--wait"]),
        None,
    );
    wait_until(
        "the HTTPRoute to be gone",
        Duration::from_secs(60),
        || async {
            let present = exists(cp, "httproute", "isolane-router", Some(NAMESPACE));
            (!present).then_some(())
        },
    )
    .await;
    assert!(
        exists(cp, "gateway", "public", Some(GATEWAY_NAMESPACE)),
        "the uninstall took the Gateway it does not own"
    );
}
