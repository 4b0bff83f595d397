//! Traffic through a real Gateway API implementation to the chart's router
//! on a kubelet (docs/tls.md#behind-a-gateway): Traefik (built from its Go
//! module, `hack/build-traefik.sh`) runs as a process beside the apiserver
//! and claims a GatewayClass; its Gateway has an HTTP listener and an HTTPS
//! one whose `certificateRefs` is a TLS Secret of the test's CA. `helm
//! install` with `router.httpRoute.parentRefs` naming the Gateway, the
//! router's HTTPS redirect on and `router.config.trustedProxies` set to the
//! address Traefik connects to the router pod from (the node's, on its
//! bridge). Then, from Traefik itself: the Gateway Accepted and Programmed,
//! each listener's refs resolved, the HTTPRoute Accepted with its refs
//! resolved. Through Traefik's ports: plain HTTP reaches the Worker (which
//! sees `http://` and the client's address); HTTP for a host with a
//! certificate at the router is redirected to HTTPS by the router; HTTPS
//! over HTTP/1.1 and HTTP/2, terminated by Traefik with the listener's
//! certificate, reaches the Worker, which sees `https://` and is not
//! redirected; a WebSocket over the HTTPS listener echoes. A route moved to
//! a Gateway that does not exist is dropped: Traefik answers 404 itself.
//!
//! Needs root (the node: containerd, a bridge, iptables); see docs/testing.md.

use std::time::Duration;

use isolane_crds::Worker;
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::release::kubelet_control_plane;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{
    ControlPlane, ENV_TEST_KUBECONFIG, Leaf, NODE_IP, TRAEFIK_CONTROLLER, TestCa, TestCert,
    Traefik, wait_until,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};

use super::client::{self, Connection, H1, H2};
use super::cluster::{helm_action, install_on_kubelet, kubectl_json};
use super::gateway::gateway_api_crds;
use super::{NAMESPACE, run_ok, text};

const SETTLE: Duration = Duration::from_secs(180);
const GATEWAY_NAMESPACE: &str = "gateways";
const GATEWAY: &str = "public";
/// The Workers' namespace.
const TEAM: &str = "shop";
const WORKER: &str = "shop";
/// A host with a certificate at the router too: plain HTTP to it is
/// redirected by the router.
const HOST: &str = "shop.gateway.test";
/// A host without one: plain HTTP to it is served.
const PLAIN_HOST: &str = "plain.gateway.test";
/// The hosts the Gateway's HTTPS listener and the route take.
const WILDCARD: &str = "*.gateway.test";
/// What Traefik's own 404 says (no route for the request).
const TRAEFIK_NOT_FOUND: &str = "404 page not found\n";

/// Answers with its URL and the client address it was told; a WebSocket's
/// messages with the same and the message.
const SEEN: &str = r#"export default { fetch(request) {
  const seen = `${request.url} for ${request.headers.get("x-forwarded-for")}`;
  if (request.headers.get("upgrade") !== "websocket") return new Response(seen);
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  server.addEventListener("message", (event) => server.send(`${seen}: ${event.data}`));
  return new Response(null, { status: 101, webSocket: client });
} };"#;

/// What [`SEEN`] answers for `url` through Traefik: the client's address
/// (Traefik's peer, 127.0.0.1) as Traefik sent it in `X-Forwarded-For`,
/// then the router's peer, Traefik's address on the node's bridge.
fn seen(url: &str) -> String {
    format!("{url} for 127.0.0.1, {NODE_IP}")
}

/// The GatewayClass Traefik claims and a Gateway of it with an HTTP and an
/// HTTPS listener on Traefik's entry points, taking routes from every
/// namespace.
fn gateway_yaml(traefik: &Traefik) -> String {
    let (http, https) = (traefik.http_addr().port(), traefik.https_addr().port());
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: traefik
spec:
  controllerName: {TRAEFIK_CONTROLLER}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: {GATEWAY}
  namespace: {GATEWAY_NAMESPACE}
spec:
  gatewayClassName: traefik
  listeners:
    - name: http
      protocol: HTTP
      port: {http}
      allowedRoutes:
        namespaces:
          from: All
    - name: https
      protocol: HTTPS
      port: {https}
      hostname: \"{WILDCARD}\"
      tls:
        mode: Terminate
        certificateRefs:
          - name: gateway-tls
      allowedRoutes:
        namespaces:
          from: All
"
    )
}

/// The chart's values beside the kubelet's: the route to the Gateway, the
/// router trusting the node's address (where Traefik connects from), its
/// HTTPS redirect on, one replica each.
fn values() -> Vec<String> {
    let trusted = format!("router.config.trustedProxies={NODE_IP}/32");
    let sets = [
        "router.httpRoute.enabled=true",
        "router.httpRoute.parentRefs[0].name=public",
        "router.httpRoute.parentRefs[0].namespace=gateways",
        "router.httpRoute.hostnames[0]=*.gateway.test",
        trusted.as_str(),
        "router.https.enabled=true",
        "router.https.redirect=true",
        "router.replicas=1",
        "operator.replicas=1",
    ];
    sets.iter()
        .flat_map(|set| ["--set".to_owned(), (*set).to_owned()])
        .collect()
}

/// Secret `name` of type `kubernetes.io/tls` in `namespace` holding `cert`.
async fn create_tls_secret(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
    cert: &TestCert,
    labels: &[(&str, &str)],
) {
    let data = [("tls.crt", &cert.cert_pem), ("tls.key", &cert.key_pem)];
    let labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels.collect()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        string_data: Some(data.map(|(k, v)| (k.to_owned(), v.clone())).into()),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(cp.client(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap_or_else(|error| panic!("create Secret {namespace}/{name}: {error}"));
}

/// The Gateway API CRDs, the namespaces, the Gateway's certificate, Traefik
/// started and its Gateway created; `helm install` with [`values`]; the
/// Worker (once the webhook answers) and its certificate at the router.
/// Returns Traefik and the listener's certificate.
async fn start(cp: &ControlPlane, ca: &TestCa) -> (Traefik, TestCert) {
    run_ok(
        cp.kubectl(["apply", "--server-side", "-f"])
            .arg(gateway_api_crds()),
        None,
    );
    let established = ["wait", "--for=condition=Established", "crd", "--all"];
    run_ok(cp.kubectl(established).arg("--timeout=60s"), None);
    for namespace in [GATEWAY_NAMESPACE, TEAM] {
        cp.create_namespace(namespace).await.expect("a namespace");
    }
    let listener = ca
        .issue(Leaf::server("gateway", &[WILDCARD]))
        .expect("the listener's certificate");
    create_tls_secret(cp, GATEWAY_NAMESPACE, "gateway-tls", &listener, &[]).await;
    let traefik = Traefik::start(cp.kubeconfig_path()).expect("Traefik starts");
    let gateway = gateway_yaml(&traefik);
    run_ok(
        &mut cp.kubectl(["apply", "--server-side", "-f", "-"]),
        Some(&gateway),
    );
    install_on_kubelet(cp, values());
    wait_until("the webhook to admit the Worker", SETTLE, || apply(cp)).await;
    let own = ca
        .issue(Leaf::server(HOST, &[HOST]))
        .expect("the router's certificate");
    create_tls_secret(cp, TEAM, "shop-tls", &own, &[("isolane.dev/tls", "true")]).await;
    (traefik, listener)
}

/// One server-side apply of [`SEEN`] on both hosts in [`TEAM`].
async fn apply(cp: &ControlPlane) -> Result<Worker, String> {
    let api: Api<Worker> = Api::namespaced(cp.client(), TEAM);
    let params = PatchParams::apply(workers::TEST_MANAGER).force();
    let worker = inline_worker(WORKER, SEEN, &[HOST, PLAIN_HOST]);
    api.patch(WORKER, &params, &Patch::Apply(&worker))
        .await
        .map_err(|error| error.to_string())
}

/// Whether `conditions` (a status's list) has `type_` with status True.
fn is_true(conditions: &serde_json::Value, type_: &str) -> bool {
    conditions.as_array().is_some_and(|all| {
        all.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// Traefik's status on the Gateway (Accepted, Programmed, its address,
/// each listener's refs resolved) and on the HTTPRoute (Accepted with its
/// backend resolved, written by Traefik's controller).
async fn assert_status_from_traefik(cp: &ControlPlane) {
    let gateway = wait_until("Traefik to program the Gateway", SETTLE, || async {
        let gateway = kubectl_json(cp, &["get", "gateway", GATEWAY, "-n", GATEWAY_NAMESPACE]);
        let status = &gateway["status"];
        let listeners = status["listeners"].as_array().cloned().unwrap_or_default();
        let ready = is_true(&status["conditions"], "Accepted")
            && is_true(&status["conditions"], "Programmed")
            && listeners.len() == 2
            && listeners
                .iter()
                .all(|l| is_true(&l["conditions"], "ResolvedRefs"));
        ready.then_some(gateway)
    })
    .await;
    assert_eq!(
        gateway["status"]["addresses"][0]["value"], "127.0.0.1",
        "{gateway}"
    );
    let route = wait_until("Traefik to accept the HTTPRoute", SETTLE, || async {
        let route = kubectl_json(cp, &["get", "httproute", "isolane-router", "-n", NAMESPACE]);
        let parents = route["status"]["parents"].as_array().cloned();
        let parent = parents.and_then(|parents| parents.into_iter().next())?;
        let conditions = &parent["conditions"];
        (is_true(conditions, "Accepted") && is_true(conditions, "ResolvedRefs")).then_some(parent)
    })
    .await;
    assert_eq!(route["controllerName"], TRAEFIK_CONTROLLER, "{route}");
    assert_eq!(route["parentRef"]["name"], GATEWAY, "{route}");
}

/// `GET path` for `host` through Traefik's HTTP entry point until it
/// answers `status`.
async fn through_http(ingress: &Ingress, host: &str, path: &str, status: u16) -> Reply {
    let what = format!("{status} for http://{host}{path} through Traefik");
    wait_until(&what, SETTLE, || async {
        let reply = ingress.get(host, path).await?;
        if reply.status == status {
            Ok(reply)
        } else {
            Err(format!("{}: {}", reply.status, reply.body))
        }
    })
    .await
}

/// HTTPS through Traefik's HTTPS entry point, trusting only `ca`, over
/// HTTP/1.1 and HTTP/2: the listener's certificate, and the Worker saw
/// `https://` and the client's address, with no redirect.
async fn assert_https_served(traefik: &Traefik, ca: &TestCa, listener: &TestCert) {
    for alpn in [H1, H2] {
        let what = "HTTPS through Traefik to reach the Worker";
        let (status, body, leaf) = wait_until(what, SETTLE, || async {
            let mut connection = Connection::open(traefik.https_addr(), HOST, ca, alpn).await?;
            let (status, body) = connection.get("/a?b=c").await?;
            Ok::<_, String>((status, body, connection.peer))
        })
        .await;
        let expected = seen(&format!("https://{HOST}/a?b=c"));
        let protocol = String::from_utf8_lossy(alpn);
        assert_eq!(
            (status, body.as_str()),
            (200, expected.as_str()),
            "{protocol}"
        );
        assert!(leaf == listener.cert_der, "not the listener's certificate");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_https_and_websockets_through_traefik_reach_the_router_pod() {
    if std::env::var_os(ENV_TEST_KUBECONFIG).is_some() {
        // An existing cluster has its own nodes, which cannot load these images.
        return;
    }
    let image_dir = tempfile::tempdir().expect("tempdir");
    let cp = kubelet_control_plane(image_dir.path()).await;
    let ca = TestCa::new("gateway test CA").expect("a CA");
    let (traefik, listener) = start(&cp, &ca).await;
    assert_status_from_traefik(&cp).await;

    let ingress = Ingress::new(traefik.http_addr());
    let plain = through_http(&ingress, PLAIN_HOST, "/p", 200).await;
    assert_eq!(plain.body, seen(&format!("http://{PLAIN_HOST}/p")));
    let moved = through_http(&ingress, HOST, "/x?y=1", 308).await;
    assert_eq!(moved.header("location"), format!("https://{HOST}/x?y=1"));

    assert_https_served(&traefik, &ca, &listener).await;
    let echo = client::websocket_echo(traefik.https_addr(), HOST, &ca, "/ws", "hi").await;
    let expected = seen(&format!("https://{HOST}/ws")) + ": hi";
    assert_eq!(echo, Ok(expected), "a WebSocket through the Gateway");

    // A route attached to a Gateway that does not exist gets no traffic.
    let elsewhere = r#"router.httpRoute.parentRefs=[{"name":"elsewhere","namespace":"gateways"}]"#;
    let moved_away = helm_action(&cp, "upgrade", &["--reuse-values", "--set-json", elsewhere]);
    assert!(moved_away.status.success(), "{}", text(&moved_away));
    let gone = through_http(&ingress, PLAIN_HOST, "/p", 404).await;
    assert_eq!(gone.body, TRAEFIK_NOT_FOUND, "Traefik's own 404");
    assert_eq!(gone.reason, None, "not the router's 404");
    drop(traefik);
}
