//! Automatic certificates (issue 61): cert-manager's controller (built from
//! its Go module) with an ACME ClusterIssuer against Pebble, the operator
//! asking for a Certificate per admitted host, the router answering the
//! HTTP-01 challenges on 127.0.0.61:80 (Pebble's DNS resolves every name
//! there) and serving the issued Secret over HTTPS:
//! 1. `demo`'s Worker gets its Certificate through an HTTP-01 challenge the
//!    router answered; its CertificateReady is Issued; HTTPS over HTTP/1.1
//!    and HTTP/2, trusting only Pebble's issuing root, reaches the Worker;
//!    a client trusting another root is told which chain was presented;
//! 2. a younger Worker of `squatter` claiming the same host gets no
//!    Certificate, and its condition names the holder;
//! 3. a renewal forced as `cmctl renew` does (the Issuing condition: what
//!    an operator does after a key's compromise; chart/acme.rs proves the
//!    renewal by lifetime) while 1,000+ HTTPS requests on new connections,
//!    and some on two kept open, run: none fails, and both the old and the
//!    new certificate are served;
//! 4. the Worker moved to another host: the old host's Certificate goes
//!    and the new one's comes; the Worker deleted: that one goes too.

// Shared with tls.rs, which uses the CA-based `open` this test does not.
#[allow(dead_code)]
#[path = "tls/client.rs"]
mod client;
#[path = "acme/https.rs"]
mod https;
#[path = "acme/issuer.rs"]
mod issuer;
// Shared with acme_wildcard.rs, which reads the DNS names this test does not.
#[allow(dead_code)]
#[path = "acme/cert_manager.rs"]
mod cert_manager;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use client::{H1, H2};
use https::{REQUESTS, across_renewal, fetch};
use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::operator::OperatorOptions;
use isolane_e2e::workers::{self, has_condition, inline_worker};
use isolane_testenv::{CertManager, ControlPlane, Pebble, free_port, wait_until};
use issuer::certificates;
use kube::Api;
use kube::api::DeleteParams;

const SETTLE: Duration = Duration::from_secs(180);
const DEMO: &str = "demo";
const SQUATTER: &str = "squatter";
const HOST: &str = "shop.acme.test";
/// The host the Worker moves to.
const OTHER_HOST: &str = "store.acme.test";
/// The router's HTTP listener: HTTP-01 is always port 80.
const HTTP_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 61);
const ISSUER: &str = "pebble";

const URL_ECHO: &str = "export default { fetch(request) { return new Response(request.url); } };";

fn options(https: SocketAddr) -> ClusterOptions {
    ClusterOptions {
        nodes: 1,
        router: RouterOptions {
            listen: Some((HTTP_IP, 80).into()),
            extra_args: vec![
                "--tls-listen-addr".to_owned(),
                https.to_string(),
                "--acme-http01".to_owned(),
            ],
            ..RouterOptions::default()
        },
        operator: OperatorOptions {
            extra_args: vec!["--certificates-issuer".to_owned(), ISSUER.to_owned()],
            ..OperatorOptions::default()
        },
        ..ClusterOptions::default()
    }
}

/// The parts: Pebble, cert-manager (its CRDs applied), the system, the issuer.
async fn start(
    cp: &ControlPlane,
    dir: &std::path::Path,
    https: SocketAddr,
) -> (Pebble, CertManager, Cluster) {
    let pebble = Pebble::start(HTTP_IP, Duration::from_secs(3600)).expect("Pebble starts");
    let cert_manager = cert_manager::start(cp, &pebble.dns_addr()).await;
    workers::prepare(cp, &[DEMO, SQUATTER]).await;
    let cluster = Cluster::start(cp, dir, options(https)).await;
    issuer::create(cp, ISSUER, &pebble).await;
    issuer::wait_ready(cp, ISSUER, SETTLE).await;
    (pebble, cert_manager, cluster)
}

/// The router's HTTP listener is the address Pebble's DNS gives every
/// name, and Pebble validated HOST there over HTTP-01.
fn assert_validated_by_the_router(pebble: &Pebble, cluster: &Cluster) {
    assert_eq!(cluster.ingress(), SocketAddr::from((HTTP_IP, 80)));
    issuer::assert_validated(pebble, HOST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_issued_through_http01_answered_by_the_router_and_renewed_live() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let https: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let (pebble, _cert_manager, cluster) = start(&cp, dir.path(), https).await;
    let client = cp.client();

    // === 1. issued through HTTP-01, served over HTTPS ===
    workers::apply(&client, DEMO, &inline_worker("shop", URL_ECHO, &[HOST])).await;
    workers::wait_for_worker(
        &client,
        DEMO,
        "shop",
        "to have its certificate",
        SETTLE,
        |w| has_condition(w, "CertificateReady", "True", Some("Issued")),
    )
    .await;
    let certs = certificates(&cp, DEMO).await;
    assert_eq!(certs.len(), 1, "one Certificate for the one host");
    assert_validated_by_the_router(&pebble, &cluster);
    // Anything else under the challenge path still reaches the Worker.
    let ingress = Ingress::new(cluster.ingress());
    let other = ingress
        .get(HOST, "/.well-known/acme-challenge/not-a-token")
        .await;
    let other = other.expect("a plain answer");
    assert_eq!(
        other.body,
        format!("http://{HOST}/.well-known/acme-challenge/not-a-token")
    );
    let root = issuer::issuing_root(&pebble).await;
    for alpn in [H1, H2] {
        let (body, _) = wait_until("HTTPS to answer with Pebble's certificate", SETTLE, || {
            fetch(https, HOST, &root, alpn)
        })
        .await;
        assert_eq!(body, format!("https://{HOST}/"));
    }
    // A client trusting another root is refused, and told which chain the
    // router presented (the leaf, then Pebble's intermediate).
    let refused = fetch(https, HOST, &pebble.api_ca_pem(), H1).await;
    let error = refused.expect_err("trusted without Pebble's root");
    let told = [
        "UnknownIssuer",
        "presented [serial ",
        "Pebble Intermediate CA ",
    ];
    assert!(told.iter().all(|part| error.contains(part)), "{error}");

    // === 2. the squatter's younger claim gets no certificate ===
    workers::apply(
        &client,
        SQUATTER,
        &inline_worker("squat", URL_ECHO, &[HOST]),
    )
    .await;
    let squat =
        workers::wait_for_worker(&client, SQUATTER, "squat", "to be told why", SETTLE, |w| {
            has_condition(w, "CertificateReady", "False", Some("HostNotAdmitted"))
        })
        .await;
    let message = &workers::condition(&squat, "CertificateReady")
        .expect("the condition")
        .message;
    assert!(
        message.contains(HOST) && message.contains(DEMO),
        "{message}"
    );
    assert!(
        certificates(&cp, SQUATTER).await.is_empty(),
        "no Certificate for the squatter"
    );

    // === 3. a renewal forced (as after a key's compromise) under load ===
    let name = certs[0].metadata.name.clone().expect("a name");
    issuer::new_account(&cp, ISSUER, SETTLE).await;
    let forced = issuer::renew(&cp, DEMO, &name);
    let target = (https, HOST, root.as_str());
    let seen = across_renewal(&cp, target, (DEMO, &name), forced, SETTLE).await;
    assert!(seen.requests >= REQUESTS, "{seen:?}");
    assert!(seen.old > 0 && seen.new > 0, "{seen:?}");
    // The renewal's order was validated through the router again.
    let validations = issuer::assert_validated(&pebble, HOST);
    assert!(validations >= 2, "{validations} validations");

    // === 4. the host lost, then the Worker deleted: its Certificates go ===
    let moved = inline_worker("shop", URL_ECHO, &[OTHER_HOST]);
    workers::apply(&client, DEMO, &moved).await;
    wait_until("only the new host's Certificate", SETTLE, || async {
        let hosts: Vec<String> = certificates(&cp, DEMO)
            .await
            .iter()
            .filter_map(|c| {
                c.data
                    .pointer("/spec/dnsNames/0")?
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        hosts == [OTHER_HOST]
    })
    .await;
    let api: Api<isolane_crds::Worker> = Api::namespaced(client.clone(), DEMO);
    api.delete("shop", &DeleteParams::default())
        .await
        .expect("delete the Worker");
    wait_until("the Certificate to be deleted", SETTLE, || async {
        certificates(&cp, DEMO).await.is_empty()
    })
    .await;
}
