//! Wildcard certificates per namespace (issue 61, `--certificates-mode
//! wildcard`): cert-manager's controller (built from its Go module) with a
//! CA ClusterIssuer signing with the test's own CA (DNS-01 against an ACME
//! server needs a DNS provider the tests do not have), the operator, a
//! node and the router (`--tls-listen-addr`) as processes, with
//! `*.team-a.wild.test` reserved for `team-a`:
//! 0. in per-host mode, `a`'s Worker gets a Certificate for its host; the
//!    operator restarted in wildcard mode makes the wildcard, and deletes
//!    the per-host Certificate once the wildcard is Ready: HTTPS requests
//!    for the host on new connections throughout all succeed, and the leaf
//!    served at the end names the wildcard;
//! 1. three Workers of `team-a`, on `a.` and `b.team-a.wild.test` and on
//!    the wildcard route `*.team-a.wild.test`, share one Certificate for
//!    `*.team-a.wild.test`, owned by each (none its controller); all show
//!    CertificateReady Issued (the message naming the wildcard), and HTTPS
//!    trusting only the CA reaches each through its own SNI;
//! 2. a Worker of `team-b` claiming `c.team-a.wild.test` is refused by the
//!    reservation: HostNotAdmitted, and no Certificate in `team-b`;
//! 3. a Worker of `team-a` on `shop.other.test` (not reserved) gets a
//!    Certificate of its own, which the same issuer signs;
//! 4. the wildcard-route Worker moved to `*.unreserved.test` is told
//!    WildcardNotCovered and leaves the owners; `a`'s Worker deleted: the
//!    wildcard stays, owned by `b`'s alone, and still serves it; `b`'s
//!    deleted: the wildcard goes;
//! 5. `d` on `d.team-a.wild.test` gets the wildcard again; the operator
//!    restarted in per-host mode keeps it until `d`'s own Certificate is
//!    Ready, then deletes it, HTTPS requests for the host throughout all
//!    succeeding.

// Shared with tls.rs, which uses the CA-based `open` this test does not.
#[allow(dead_code)]
#[path = "tls/client.rs"]
mod client;
// Shared with acme.rs: the ACME issuer's parts are not used here.
#[path = "acme/ca_issuer.rs"]
mod ca_issuer;
#[path = "acme/cert_manager.rs"]
mod cert_manager;
#[allow(dead_code)]
#[path = "acme/issuer.rs"]
mod issuer;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use client::{Connection, H1, H2};
use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::operator::{Operator, OperatorOptions};
use isolane_e2e::workers::{self, has_condition, inline_worker};
use isolane_testenv::{CertManager, ControlPlane, TestCa, free_port, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::DeleteParams;
use kube::core::DynamicObject;

const SETTLE: Duration = Duration::from_secs(180);
const TEAM_A: &str = "team-a";
const TEAM_B: &str = "team-b";
const WILDCARD: &str = "*.team-a.wild.test";
const RESERVATION: &str = "--reserved-host=*.team-a.wild.test=team-a";
const HOST_A: &str = "a.team-a.wild.test";
const HOST_B: &str = "b.team-a.wild.test";
const HOST_C: &str = "c.team-a.wild.test";
/// The host of the Worker across the switch back to per-host mode.
const HOST_D: &str = "d.team-a.wild.test";
/// A host `star`'s wildcard route takes.
const UNDER_STAR: &str = "z.team-a.wild.test";
/// A wildcard route no reservation covers.
const UNRESERVED_WILDCARD: &str = "*.unreserved.test";
/// A host of `team-a` no reservation covers.
const SHOP: &str = "shop.other.test";
const ISSUER: &str = "test-ca";

const URL_ECHO: &str = "export default { fetch(request) { return new Response(request.url); } };";

/// The operator's flags, in `mode`.
fn operator(mode: &str) -> OperatorOptions {
    let args = [
        "--certificates-issuer",
        ISSUER,
        "--certificates-mode",
        mode,
        RESERVATION,
    ];
    OperatorOptions {
        identity: format!("operator-{mode}"),
        extra_args: args.map(str::to_owned).to_vec(),
        ..OperatorOptions::default()
    }
}

fn options(https: SocketAddr) -> ClusterOptions {
    ClusterOptions {
        nodes: 1,
        router: RouterOptions {
            extra_args: vec![
                "--tls-listen-addr".to_owned(),
                https.to_string(),
                RESERVATION.to_owned(),
            ],
            ..RouterOptions::default()
        },
        operator: operator("per-host"),
        ..ClusterOptions::default()
    }
}

/// cert-manager with the CA ClusterIssuer Ready, then the system.
async fn start(
    cp: &ControlPlane,
    dir: &Path,
    ca: &TestCa,
    https: SocketAddr,
) -> (CertManager, Cluster) {
    // The CA issuer resolves nothing; no ACME self-check runs.
    let nameserver = format!("127.0.0.1:{}", free_port().expect("a free port"));
    let cert_manager = cert_manager::start(cp, &nameserver).await;
    ca_issuer::create(cp, ISSUER, ca).await;
    issuer::wait_ready(cp, ISSUER, SETTLE).await;
    workers::prepare(cp, &[TEAM_A, TEAM_B]).await;
    let cluster = Cluster::start(cp, dir, options(https)).await;
    (cert_manager, cluster)
}

/// `GET /` for `host` over a new HTTPS connection trusting only `ca`:
/// the body and the leaf served (DER).
async fn fetch(
    https: SocketAddr,
    ca: &TestCa,
    host: &str,
    alpn: &[u8],
) -> Result<(String, Vec<u8>), String> {
    let mut connection = Connection::open_trusting(https, host, &ca.cert_pem(), alpn).await?;
    let (status, body) = connection.get("/").await?;
    if status != 200 {
        return Err(format!("status {status}: {body}"));
    }
    Ok((body, connection.peer.clone()))
}

/// Waits until HTTPS for `host` (HTTP/1.1 and HTTP/2) reaches its Worker.
async fn wait_served(https: SocketAddr, ca: &TestCa, host: &str) {
    for alpn in [H1, H2] {
        let (body, _) = wait_until("HTTPS to reach the Worker", SETTLE, || {
            fetch(https, ca, host, alpn)
        })
        .await;
        assert_eq!(body, format!("https://{host}/"));
    }
}

/// Waits until `namespace`'s Worker `name` says CertificateReady Issued.
async fn wait_issued(cp: &ControlPlane, namespace: &str, name: &str) {
    workers::wait_for_worker(
        &cp.client(),
        namespace,
        name,
        "to have its certificate",
        SETTLE,
        |w| has_condition(w, "CertificateReady", "True", Some("Issued")),
    )
    .await;
}

/// `team-a`'s Certificates for [`WILDCARD`].
async fn wildcards(cp: &ControlPlane) -> Vec<DynamicObject> {
    let all = issuer::certificates(cp, TEAM_A).await;
    all.into_iter()
        .filter(|c| cert_manager::dns_names(c) == [WILDCARD])
        .collect()
}

/// The Workers owning `certificate` (by name, sorted); panics on a
/// controller reference.
fn owners(certificate: &DynamicObject) -> Vec<String> {
    let references = certificate
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert!(
        references
            .iter()
            .all(|r| r.controller != Some(true) && r.kind == "Worker"),
        "{references:?}"
    );
    let mut names: Vec<String> = references.into_iter().map(|r| r.name).collect();
    names.sort();
    names
}

/// Waits until the one wildcard Certificate of `team-a` is owned by `expected`.
async fn wait_owned_by(cp: &ControlPlane, expected: &[&str]) -> DynamicObject {
    wait_until("the wildcard Certificate's owners", SETTLE, || async {
        let found = wildcards(cp).await;
        match found.as_slice() {
            [one] if owners(one) == expected => Ok(one.clone()),
            _ => Err(format!(
                "{:?}",
                found.iter().map(owners).collect::<Vec<_>>()
            )),
        }
    })
    .await
}

/// Whether `certificate` says Ready.
fn is_ready(certificate: &DynamicObject) -> bool {
    let conditions = certificate.data.pointer("/status/conditions");
    let conditions = conditions.and_then(|c| c.as_array());
    conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// What a switch of mode has come to, read from the namespace's
/// Certificates for one host.
enum Seen {
    /// The new mode's Certificate is Ready, the old one gone.
    Done,
    /// The new one is pending, and the old one still there (`true`) or not.
    Pending(bool),
    /// Anything else (the new one not made yet).
    Other,
}

/// Restarts the operator in `mode` while HTTPS requests for `host` run on
/// new connections until `seen` says Done of `team-a`'s Certificates; none
/// may fail, and while the new Certificate is pending the old one must
/// stay. Returns (requests, lists that saw the new one pending).
async fn switch_mode(
    cp: &ControlPlane,
    (dir, cluster): (&Path, &mut Cluster),
    (https, ca): (SocketAddr, &TestCa),
    (mode, host): (&str, &str),
    seen: impl Fn(&[DynamicObject]) -> Seen,
) -> (usize, usize) {
    cluster.operator = Operator::start(cp, dir, &operator(mode));
    let deadline = tokio::time::Instant::now() + SETTLE;
    let (mut requests, mut pending) = (0, 0);
    loop {
        let (body, _) = fetch(https, ca, host, H1)
            .await
            .unwrap_or_else(|error| panic!("request {requests} failed: {error}"));
        assert_eq!(body, format!("https://{host}/"));
        requests += 1;
        let all = issuer::certificates(cp, TEAM_A).await;
        let names: Vec<Vec<String>> = all.iter().map(cert_manager::dns_names).collect();
        match seen(&all) {
            Seen::Done => break,
            Seen::Pending(old_kept) => {
                pending += 1;
                assert!(old_kept, "the old Certificate went first: {names:?}");
            }
            Seen::Other => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no switch to {mode} after {requests} requests: {names:?}"
        );
    }
    println!(
        "switched to {mode} under {requests} HTTPS requests on new connections, none failed; \
         {pending} saw the new Certificate pending beside the old"
    );
    (requests, pending)
}

/// Whether `certificates` hold one for exactly `names`, and whether Ready.
fn find(certificates: &[DynamicObject], names: &[&str]) -> Option<bool> {
    let found = certificates
        .iter()
        .find(|c| cert_manager::dns_names(c) == names)?;
    Some(is_ready(found))
}

/// Restarts the operator in wildcard mode (see [`switch_mode`]) for
/// [`HOST_A`]. Then deletes the per-host Secret (`secret`), as cert-manager
/// does with `--enable-certificate-owner-ref`, which its build here lacks:
/// the router serves the wildcard for the host.
async fn switch_to_wildcard(
    cp: &ControlPlane,
    run: (&Path, &mut Cluster),
    (https, ca): (SocketAddr, &TestCa),
    secret: &str,
) {
    switch_mode(cp, run, (https, ca), ("wildcard", HOST_A), |all| {
        match (find(all, &[WILDCARD]), find(all, &[HOST_A])) {
            (Some(true), None) => Seen::Done,
            (Some(false), own) => Seen::Pending(own.is_some()),
            _ => Seen::Other,
        }
    })
    .await;
    let secrets: Api<Secret> = Api::namespaced(cp.client(), TEAM_A);
    secrets
        .delete(secret, &DeleteParams::default())
        .await
        .expect("delete the per-host Secret");
    wait_until("the wildcard to be served", SETTLE, || async {
        let (_, leaf) = fetch(https, ca, HOST_A, H1).await?;
        let named = leaf
            .windows(WILDCARD.len())
            .any(|w| w == WILDCARD.as_bytes());
        named.then_some(()).ok_or("the per-host leaf".to_owned())
    })
    .await;
}

/// Step 5: `d` on `d.team-a.wild.test` under the wildcard, then the
/// operator back in per-host mode: the wildcard stays until `d`'s own
/// Certificate is Ready, then goes.
async fn back_to_per_host(
    cp: &ControlPlane,
    run: (&Path, &mut Cluster),
    (https, ca): (SocketAddr, &TestCa),
) {
    workers::apply(
        &cp.client(),
        TEAM_A,
        &inline_worker("d", URL_ECHO, &[HOST_D]),
    )
    .await;
    wait_issued(cp, TEAM_A, "d").await;
    wait_owned_by(cp, &["d"]).await;
    wait_served(https, ca, HOST_D).await;
    switch_mode(cp, run, (https, ca), ("per-host", HOST_D), |all| {
        match (find(all, &[HOST_D]), find(all, &[WILDCARD])) {
            (Some(true), None) => Seen::Done,
            (Some(false) | None, wildcard) => Seen::Pending(wildcard.is_some()),
            _ => Seen::Other,
        }
    })
    .await;
    wait_issued(cp, TEAM_A, "d").await;
}

async fn delete_worker(cp: &ControlPlane, namespace: &str, name: &str) {
    let api: Api<isolane_crds::Worker> = Api::namespaced(cp.client(), namespace);
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete the Worker");
}

/// Step 0: per-host first, then the switch to wildcard mode.
async fn per_host_then_wildcard(
    cp: &ControlPlane,
    dir: &Path,
    cluster: &mut Cluster,
    (https, ca): (SocketAddr, &TestCa),
) {
    workers::apply(
        &cp.client(),
        TEAM_A,
        &inline_worker("a", URL_ECHO, &[HOST_A]),
    )
    .await;
    wait_issued(cp, TEAM_A, "a").await;
    let own = issuer::certificates(cp, TEAM_A).await;
    let names: Vec<Vec<String>> = own.iter().map(cert_manager::dns_names).collect();
    assert_eq!(names, [[HOST_A]]);
    wait_served(https, ca, HOST_A).await;
    let secret = own[0].metadata.name.clone().expect("a name");
    switch_to_wildcard(cp, (dir, cluster), (https, ca), &secret).await;
}

/// Step 1: `a`, `b` and `star` (the wildcard route) share the wildcard.
async fn shared(cp: &ControlPlane, https: SocketAddr, ca: &TestCa) {
    let client = cp.client();
    for (name, host) in [("a", HOST_A), ("b", HOST_B), ("star", WILDCARD)] {
        workers::apply(&client, TEAM_A, &inline_worker(name, URL_ECHO, &[host])).await;
    }
    for name in ["a", "b", "star"] {
        wait_issued(cp, TEAM_A, name).await;
    }
    let shared = wait_owned_by(cp, &["a", "b", "star"]).await;
    let all = issuer::certificates(cp, TEAM_A).await;
    assert_eq!(all.len(), 1, "no Certificate per host beside the wildcard");
    let labels = shared
        .data
        .pointer("/spec/secretTemplate/labels/isolane.dev~1tls");
    assert_eq!(labels.and_then(|l| l.as_str()), Some("true"));
    for host in [HOST_A, HOST_B, UNDER_STAR] {
        wait_served(https, ca, host).await;
    }
    let a = workers::wait_ready(&client, TEAM_A, "a", SETTLE).await;
    let message = &workers::condition(&a, "CertificateReady")
        .expect("the condition")
        .message;
    assert!(
        message.contains(&format!("{HOST_A} ({WILDCARD})")),
        "{message}"
    );
}

/// Step 2: another namespace's claim under the domain is refused.
async fn refused(cp: &ControlPlane) {
    let client = cp.client();
    workers::apply(&client, TEAM_B, &inline_worker("c", URL_ECHO, &[HOST_C])).await;
    let refused = workers::wait_for_worker(&client, TEAM_B, "c", "to be refused", SETTLE, |w| {
        has_condition(w, "CertificateReady", "False", Some("HostNotAdmitted"))
    })
    .await;
    let condition = workers::condition(&refused, "CertificateReady").expect("the condition");
    let message = &condition.message;
    assert!(
        message.contains("reserved for namespace team-a"),
        "{message}"
    );
    assert!(issuer::certificates(cp, TEAM_B).await.is_empty());
}

/// Step 3: a host no reservation covers gets a Certificate of its own.
async fn own_certificate(cp: &ControlPlane, https: SocketAddr, ca: &TestCa) {
    workers::apply(
        &cp.client(),
        TEAM_A,
        &inline_worker("shop", URL_ECHO, &[SHOP]),
    )
    .await;
    wait_issued(cp, TEAM_A, "shop").await;
    let all = issuer::certificates(cp, TEAM_A).await;
    let names: Vec<Vec<String>> = all.iter().map(cert_manager::dns_names).collect();
    assert_eq!(all.len(), 2, "{names:?}");
    assert!(names.contains(&vec![SHOP.to_owned()]), "{names:?}");
    wait_served(https, ca, SHOP).await;
}

/// Step 4: `star` moves off the domain (to a wildcard no reservation
/// covers: told so), `a` is deleted, then `b`: the wildcard goes with the
/// last of them.
async fn lifecycle(cp: &ControlPlane, https: SocketAddr, ca: &TestCa) {
    let client = cp.client();
    let moved = inline_worker("star", URL_ECHO, &[UNRESERVED_WILDCARD]);
    workers::apply(&client, TEAM_A, &moved).await;
    let star = workers::wait_for_worker(&client, TEAM_A, "star", "to be told", SETTLE, |w| {
        has_condition(w, "CertificateReady", "False", Some("WildcardNotCovered"))
    })
    .await;
    let condition = workers::condition(&star, "CertificateReady").expect("the condition");
    assert!(
        condition.message.contains(UNRESERVED_WILDCARD),
        "{}",
        condition.message
    );
    wait_owned_by(cp, &["a", "b"]).await;
    delete_worker(cp, TEAM_A, "a").await;
    wait_owned_by(cp, &["b"]).await;
    wait_served(https, ca, HOST_B).await;
    wait_issued(cp, TEAM_A, "b").await;
    delete_worker(cp, TEAM_A, "b").await;
    wait_until("the wildcard Certificate to be deleted", SETTLE, || async {
        wildcards(cp).await.is_empty()
    })
    .await;
    let left = issuer::certificates(cp, TEAM_A).await;
    assert_eq!(left.len(), 1, "the shop's Certificate stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_shares_one_wildcard_certificate_for_the_domain_it_holds() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let https: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let ca = TestCa::new("isolane-e2e-wildcard-ca").expect("a test CA");
    let (_cert_manager, mut cluster) = start(&cp, dir.path(), &ca, https).await;
    per_host_then_wildcard(&cp, dir.path(), &mut cluster, (https, &ca)).await;
    shared(&cp, https, &ca).await;
    refused(&cp).await;
    own_certificate(&cp, https, &ca).await;
    lifecycle(&cp, https, &ca).await;
    back_to_per_host(&cp, (dir.path(), &mut cluster), (https, &ca)).await;
}
