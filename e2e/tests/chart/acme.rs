//! Automatic certificates through the chart on a real kubelet (issue 61):
//! the operator, router and node as pods from the project's images, the
//! chart installed with `certificates.enabled`, `certificates.issuer.name`
//! and `router.https.enabled`; cert-manager's controller (built from its Go
//! module) and Pebble as processes beside the apiserver, as in acme.rs.
//! Pebble's DNS resolves every name to the router Service's ClusterIP, so
//! its HTTP-01 validation (port 80) reaches the router pod through
//! kube-proxy's rules, and so does cert-manager's self-check:
//! 1. `shop-a`'s Worker gets its Certificate through an HTTP-01 challenge
//!    the router pod answered (Pebble's log, the Order valid, the Service's
//!    only endpoint the router pod); `CertificateReady` is Issued, in the
//!    status and in `kubectl get`'s Certificate column; HTTPS over HTTP/1.1
//!    and HTTP/2 through the Service's port 443, trusting only Pebble's
//!    root, reaches the Worker, from the Rust client and from
//!    `curl --cacert --resolve`;
//! 2. a Worker claiming the host in `shop-c`, which the webhook checks, is
//!    refused at apply; one in `shop-b`, which `webhook.namespaceSelector`
//!    exempts (as a Worker admitted while no webhook answered would be),
//!    is admitted, gets no Certificate, and its condition names the holder;
//! 3. the renewal by lifetime: Pebble issues certificates valid for
//!    [`LIFETIME`], so cert-manager renews at two thirds of it, a new key
//!    each time (ordered from a new ACME account, so Pebble validates it
//!    through the router pod again), while 1,000+ HTTPS requests on new
//!    connections, and some on two kept open, run through the Service:
//!    none fails, the leaf's serial changes and the Certificate's
//!    revision goes up; the kept connections keep the old certificate;
//! 4. the Worker deleted: its Certificate goes (the operator), and the
//!    Secret with it (cert-manager, started with
//!    `--enable-certificate-owner-ref`, made the Certificate its owner;
//!    the garbage collector of the kubelet's kube-controller-manager).
//!
//! Needs root (the node: containerd, a bridge, iptables); see docs/testing.md.

#[path = "../acme/https.rs"]
mod https;
// Shared with acme.rs, which forces a renewal this test lets come.
#[allow(dead_code)]
#[path = "../acme/issuer.rs"]
mod issuer;
// Shared with acme_wildcard.rs, which reads the DNS names this test does not.
#[allow(dead_code)]
#[path = "../acme/cert_manager.rs"]
mod cert_manager;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::client::{self, H1, H2};
use https::{REQUESTS, across_renewal, fetch};
use isolane_crds::Worker;
use isolane_e2e::release::kubelet_control_plane;
use isolane_e2e::workers::{self, has_condition, inline_worker};
use isolane_testenv::{CertManager, ControlPlane, ENV_TEST_KUBECONFIG, Pebble, wait_until};
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use super::cluster::install_on_kubelet;
use super::{Command, NAMESPACE, RELEASE, run_ok};

const SETTLE: Duration = Duration::from_secs(180);
/// The lifetime of the certificates Pebble issues: cert-manager renews at
/// two thirds of it (60 s), and the run across it ends soon after.
const LIFETIME: Duration = Duration::from_secs(90);
/// The host's owner.
const OWNER: &str = "shop-a";
/// A namespace the webhook does not check.
const EXEMPT: &str = "shop-b";
/// A namespace the webhook checks.
const CHECKED: &str = "shop-c";
const HOST: &str = "shop.pods-acme.test";
const ISSUER: &str = "pebble";
const WORKER: &str = "shop";

const URL_ECHO: &str = "export default { fetch(request) { return new Response(request.url); } };";

/// The parts beside the chart, and the router Service's HTTPS address.
struct Parts {
    pebble: Pebble,
    _cert_manager: CertManager,
    https: SocketAddr,
}

/// The chart's values beside the kubelet's: certificates from the Pebble
/// issuer, HTTPS at the router, one replica each, the webhook skipping
/// [`EXEMPT`].
fn values() -> Vec<String> {
    let mut values = Vec::new();
    for set in [
        "certificates.enabled=true",
        "certificates.issuer.name=pebble",
        "router.https.enabled=true",
        "router.replicas=1",
        "operator.replicas=1",
    ] {
        values.extend(["--set".to_owned(), set.to_owned()]);
    }
    let selector = serde_json::json!({"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [EXEMPT],
    }]});
    values.extend([
        "--set-json".to_owned(),
        format!("webhook.namespaceSelector={selector}"),
    ]);
    values
}

/// The router Service's ClusterIP with its `http` and `https` ports.
async fn router_addresses(cp: &ControlPlane) -> (SocketAddr, SocketAddr) {
    let service = Api::<Service>::namespaced(cp.client(), NAMESPACE)
        .get(&format!("{RELEASE}-router"))
        .await
        .expect("the router's Service");
    let spec = service.spec.expect("a Service spec");
    let ip: IpAddr = spec
        .cluster_ip
        .expect("a ClusterIP")
        .parse()
        .expect("an IP");
    let ports = spec.ports.unwrap_or_default();
    let port = |name: &str| {
        let port = ports.iter().find(|p| p.name.as_deref() == Some(name));
        let port = port.unwrap_or_else(|| panic!("no {name} port: {ports:?}"));
        u16::try_from(port.port).expect("a port")
    };
    ((ip, port("http")).into(), (ip, port("https")).into())
}

/// cert-manager's CRDs and the namespaces, the chart installed with
/// [`values`], then Pebble resolving every name to the router Service,
/// cert-manager, and the ClusterIssuer, Ready.
async fn start(cp: &ControlPlane) -> Parts {
    cert_manager::install(cp).await;
    for namespace in [OWNER, EXEMPT, CHECKED] {
        cp.create_namespace(namespace).await.expect("a namespace");
    }
    install_on_kubelet(cp, values());
    let (http, https) = router_addresses(cp).await;
    // HTTP-01 is port 80, HTTPS at 443 keeps the Worker's URL portless.
    assert_eq!((http.port(), https.port()), (80, 443));
    let IpAddr::V4(ip) = http.ip() else {
        panic!("an IPv4 ClusterIP: {http}")
    };
    let pebble = Pebble::start(ip, LIFETIME).expect("Pebble starts");
    let cert_manager = cert_manager::start_controller(cp, &pebble.dns_addr());
    issuer::create(cp, ISSUER, &pebble).await;
    issuer::wait_ready(cp, ISSUER, SETTLE).await;
    Parts {
        pebble,
        _cert_manager: cert_manager,
        https,
    }
}

/// One server-side apply of the URL-echo Worker on [`HOST`] in `namespace`.
async fn apply(cp: &ControlPlane, namespace: &str) -> Result<Worker, String> {
    let api: Api<Worker> = Api::namespaced(cp.client(), namespace);
    let params = PatchParams::apply(workers::TEST_MANAGER).force();
    let worker = inline_worker(WORKER, URL_ECHO, &[HOST]);
    api.patch(WORKER, &params, &Patch::Apply(&worker))
        .await
        .map_err(|error| error.to_string())
}

/// The router Service's endpoints are the router pod's address alone.
async fn assert_only_the_router_pod_behind_the_service(cp: &ControlPlane) {
    let pods = Api::<Pod>::namespaced(cp.client(), NAMESPACE)
        .list(&ListParams::default().labels("app.kubernetes.io/component=router"))
        .await
        .expect("the router pods");
    let pod_ips: BTreeSet<String> = pods
        .items
        .iter()
        .filter_map(|pod| pod.status.as_ref()?.pod_ip.clone())
        .collect();
    let selector = format!("kubernetes.io/service-name={RELEASE}-router");
    let slices = Api::<EndpointSlice>::namespaced(cp.client(), NAMESPACE)
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("the router Service's EndpointSlices");
    let addresses: BTreeSet<String> = slices
        .items
        .iter()
        .flat_map(|slice| &slice.endpoints)
        .flat_map(|endpoint| endpoint.addresses.clone())
        .collect();
    assert_eq!(pod_ips.len(), 1, "one router pod: {pod_ips:?}");
    assert_eq!(addresses, pod_ips, "the Service's endpoints");
}

/// The states of `namespace`'s ACME Orders for [`HOST`].
async fn order_states(cp: &ControlPlane) -> Vec<String> {
    let gvk = GroupVersionKind::gvk("acme.cert-manager.io", "v1", "Order");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "orders");
    let api: Api<DynamicObject> = Api::namespaced_with(cp.client(), OWNER, &resource);
    let orders = api.list(&ListParams::default()).await.expect("the Orders");
    orders
        .items
        .iter()
        .filter(|order| order.data.pointer("/spec/dnsNames/0") == Some(&HOST.into()))
        .filter_map(|order| order.data.pointer("/status/state")?.as_str())
        .map(str::to_owned)
        .collect()
}

/// Step 1 up to the condition: the Worker applied (once the webhook's
/// Service answers), its Certificate issued through the router pod.
/// Returns the Certificate's name.
async fn issued(cp: &ControlPlane, parts: &Parts) -> String {
    wait_until("the webhook to admit the Worker", SETTLE, || {
        apply(cp, OWNER)
    })
    .await;
    let applied = std::time::Instant::now();
    workers::wait_for_worker(
        &cp.client(),
        OWNER,
        WORKER,
        "to have its certificate",
        SETTLE,
        |w| has_condition(w, "CertificateReady", "True", Some("Issued")),
    )
    .await;
    eprintln!(
        "CertificateReady Issued {:?} after the Worker was applied",
        applied.elapsed()
    );
    let certificates = issuer::certificates(cp, OWNER).await;
    assert_eq!(certificates.len(), 1, "one Certificate for the one host");
    issuer::assert_validated(&parts.pebble, HOST);
    assert_eq!(order_states(cp).await, ["valid"], "the Order");
    assert_only_the_router_pod_behind_the_service(cp).await;
    let table = run_ok(&mut cp.kubectl(["get", "workers", "-n", OWNER]), None);
    let header = table.lines().next().unwrap_or_default();
    let row = table.lines().find(|line| line.starts_with(WORKER));
    assert!(header.contains("CERTIFICATE"), "{table}");
    assert!(row.is_some_and(|row| row.contains("Issued")), "{table}");
    certificates[0].metadata.name.clone().expect("a name")
}

/// `curl --cacert <root> --resolve HOST:443:<ClusterIP>` over `version`
/// (`--http1.1`, `--http2`): the body, and the HTTP version curl used.
fn curl(https: SocketAddr, root: &std::path::Path, version: &str) -> String {
    let resolve = format!("{HOST}:{}:{}", https.port(), https.ip());
    let mut command = Command::new("curl");
    command
        .args(["--silent", "--show-error", "--fail", "--max-time", "20"])
        .arg("--cacert")
        .arg(root)
        .args(["--resolve", &resolve, version])
        .args(["--write-out", "\n%{http_version}"])
        .arg(format!("https://{HOST}/"));
    run_ok(&mut command, None)
}

/// HTTPS over both protocols, trusting only Pebble's `root`, reaches the
/// Worker.
async fn served(parts: &Parts, root: &str) {
    for alpn in [H1, H2] {
        let what = "HTTPS to answer with Pebble's certificate";
        let (body, _) = wait_until(what, SETTLE, || fetch(parts.https, HOST, root, alpn)).await;
        assert_eq!(body, format!("https://{HOST}/"));
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("pebble-root.pem");
    std::fs::write(&path, root).expect("write Pebble's root");
    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let out = curl(parts.https, &path, flag);
        assert_eq!(out, format!("https://{HOST}/\n{version}"), "curl {flag}");
    }
}

/// Step 2: refused where the webhook checks; admitted where it does not,
/// with no Certificate and a condition naming the holder.
async fn squatters_get_no_certificate(cp: &ControlPlane) {
    let refused = apply(cp, CHECKED).await;
    let error = refused.expect_err("the webhook admitted a taken host");
    let says = format!("host {HOST} belongs to namespace {OWNER}");
    assert!(error.contains(&says), "{error}");
    apply(cp, EXEMPT)
        .await
        .expect("admitted without the webhook");
    let client = cp.client();
    let predicate =
        |w: &Worker| has_condition(w, "CertificateReady", "False", Some("HostNotAdmitted"));
    let squat =
        workers::wait_for_worker(&client, EXEMPT, WORKER, "to be told why", SETTLE, predicate)
            .await;
    let message = &workers::condition(&squat, "CertificateReady")
        .expect("the condition")
        .message;
    assert!(
        message.contains(HOST) && message.contains(OWNER),
        "{message}"
    );
    let none = issuer::certificates(cp, EXEMPT).await;
    assert!(none.is_empty(), "a Certificate for the squatter: {none:?}");
}

/// Step 4: Secret `name` is owned by its Certificate; the Worker deleted,
/// the Certificate goes and the garbage collector deletes the Secret.
async fn secret_goes_with_its_worker(cp: &ControlPlane, name: &str) {
    let secrets: Api<Secret> = Api::namespaced(cp.client(), OWNER);
    let secret = secrets.get(name).await.expect("the Certificate's Secret");
    let owners = secret.metadata.owner_references.unwrap_or_default();
    let owned = owners
        .iter()
        .any(|owner| owner.kind == "Certificate" && owner.name == name);
    assert!(owned, "the Secret's owners: {owners:?}");
    let workers: Api<Worker> = Api::namespaced(cp.client(), OWNER);
    workers
        .delete(WORKER, &DeleteParams::default())
        .await
        .expect("delete the Worker");
    wait_until("the Certificate and its Secret to go", SETTLE, || async {
        let certificates = issuer::certificates(cp, OWNER).await;
        let secret = secrets.get_opt(name).await;
        certificates.is_empty() && matches!(secret, Ok(None))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_on_a_kubelet_gets_certificates_through_http01_at_the_router_pod_renewed_by_lifetime()
{
    if std::env::var_os(ENV_TEST_KUBECONFIG).is_some() {
        // An existing cluster has its own nodes, which cannot load these images.
        return;
    }
    let image_dir = tempfile::tempdir().expect("tempdir");
    let cp = kubelet_control_plane(image_dir.path()).await;
    let parts = start(&cp).await;

    let name = issued(&cp, &parts).await;
    let root = issuer::issuing_root(&parts.pebble).await;
    served(&parts, &root).await;

    squatters_get_no_certificate(&cp).await;

    let target = (parts.https, HOST, root.as_str());
    issuer::new_account(&cp, ISSUER, SETTLE).await;
    // Nothing forces it: the renewal comes when the lifetime says.
    let seen = across_renewal(&cp, target, (OWNER, &name), async {}, SETTLE).await;
    assert!(seen.requests >= REQUESTS, "{seen:?}");
    assert!(seen.old > 0 && seen.new > 0, "{seen:?}");
    assert!(seen.revisions.1 > seen.revisions.0, "{seen:?}");
    assert_ne!(seen.serials.0, seen.serials.1, "{seen:?}");
    // The renewal's order was validated through the router pod again.
    let validations = issuer::assert_validated(&parts.pebble, HOST);
    assert!(validations >= 2, "{validations} validations");

    secret_goes_with_its_worker(&cp, &name).await;
}
