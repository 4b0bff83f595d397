//! HTTPS to a Worker's host trusting only Pebble's issuing root, and a
//! renewal of its certificate while such requests run: most on a new
//! connection each (so each handshake meets the certificate served then),
//! some on two connections opened before the renewal and kept open across
//! it. Shared by acme.rs (the router as a process, the renewal forced) and
//! chart/acme.rs (the router as a pod, the renewal due by the
//! certificate's lifetime).

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use isolane_testenv::ControlPlane;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::core::DynamicObject;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::client::{Connection, H1, H2, describe};
use super::issuer;

/// How many HTTPS requests, each on a new connection, run across the renewal.
pub const REQUESTS: usize = 1000;
/// How many handshakes must present the renewed certificate.
const RENEWED: usize = 200;
/// One request on a kept-open connection every this many new connections.
const KEEP_ALIVE_EVERY: usize = 10;

/// `GET /` for `host` over a new HTTPS connection to `https`, offering only
/// `alpn` and trusting only `root`: the body and the leaf served.
pub async fn fetch(
    https: SocketAddr,
    host: &str,
    root: &str,
    alpn: &[u8],
) -> Result<(String, Vec<u8>), String> {
    let mut connection = Connection::open_trusting(https, host, root, alpn).await?;
    if connection.alpn.as_deref() != Some(alpn) {
        return Err(format!("ALPN chose {:?}", connection.alpn));
    }
    let (status, body) = connection.get("/").await?;
    if status != 200 {
        return Err(format!("status {status}: {body}"));
    }
    Ok((body, connection.peer.clone()))
}

/// What [`across_renewal`] saw.
#[derive(Debug, Clone)]
pub struct Renewal {
    /// Requests sent, each on a new connection; none failed.
    pub requests: usize,
    /// Requests sent on the connections opened before the renewal; none
    /// failed.
    pub kept_alive: usize,
    /// Handshakes that presented the certificate served before the renewal.
    pub old: usize,
    /// Handshakes that presented another one.
    pub new: usize,
    /// The Certificate's `status.revision` before and after.
    pub revisions: (i64, i64),
    /// The serial numbers of the leaf served before and after.
    pub serials: (String, String),
    /// When the new leaf was first served: seconds after the old one's
    /// notBefore, and before its notAfter.
    pub renewed_at: Option<(i64, i64)>,
}

/// The Certificate's `status.revision` (0 before its first issuance).
async fn revision(api: &Api<DynamicObject>, name: &str) -> i64 {
    let certificate = api.get(name).await.expect("the Certificate");
    let revision = certificate.data.pointer("/status/revision");
    revision.and_then(serde_json::Value::as_i64).unwrap_or(0)
}

/// The serial number of `leaf` (DER), in hex, and its notBefore and
/// notAfter (Unix seconds).
fn serial(leaf: &[u8]) -> (String, i64, i64) {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).expect("an X.509 leaf");
    let validity = cert.validity();
    (
        cert.raw_serial_as_string(),
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    )
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |now| i64::try_from(now.as_secs()).unwrap_or(i64::MAX))
}

/// What Secret `namespace/name`'s `tls.crt` holds now, for a failure's
/// message.
async fn secret_chain(cp: &ControlPlane, namespace: &str, name: &str) -> String {
    let secrets: Api<Secret> = Api::namespaced(cp.client(), namespace);
    let secret = match secrets.get(name).await {
        Ok(secret) => secret,
        Err(error) => return format!("(the Secret cannot be read: {error})"),
    };
    let pem = secret.data.as_ref().and_then(|data| data.get("tls.crt"));
    let Some(pem) = pem else {
        return "(no tls.crt)".to_owned();
    };
    let chain: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem.0).collect();
    match chain {
        Ok(chain) => describe(&chain),
        Err(error) => format!("(tls.crt is not PEM: {error})"),
    }
}

impl Renewal {
    /// Counts a handshake that presented `leaf`, the first leaf being
    /// `first`, valid from `not_before` to `not_after`.
    fn count(&mut self, leaf: &[u8], first: &[u8], (not_before, not_after): (i64, i64)) {
        self.requests += 1;
        if leaf == first {
            self.old += 1;
            return;
        }
        self.new += 1;
        if self.renewed_at.is_none() {
            let now = unix_now();
            self.renewed_at = Some((now - not_before, not_after - now));
            self.serials.1 = serial(leaf).0;
        }
    }

    /// Prints what was seen in `took`.
    fn print(&self, took: Duration) {
        println!(
            "renewal under load: {} HTTPS requests on new connections and {} on two kept \
             open in {took:?}, 0 failed; the new certificate first served (s after the old \
             one's notBefore, s before its notAfter) {:?}; old certificate served {} times, \
             new {}; revision {} -> {}; serial {} -> {}",
            self.requests,
            self.kept_alive,
            self.renewed_at,
            self.old,
            self.new,
            self.revisions.0,
            self.revisions.1,
            self.serials.0,
            self.serials.1,
        );
    }
}

/// [`fetch`] over `alpn`, the body the Worker's answer: the leaf served.
/// A failure fails the test, saying what the server presented and what
/// Secret `namespace/name` holds now.
async fn fetch_or_fail(
    cp: &ControlPlane,
    (https, host, root): (SocketAddr, &str, &str),
    (namespace, name): (&str, &str),
    alpn: &[u8],
    started: Instant,
) -> Vec<u8> {
    match fetch(https, host, root, alpn).await {
        Ok((body, leaf)) => {
            assert_eq!(body, format!("https://{host}/"));
            leaf
        }
        Err(error) => panic!(
            "a request failed {:?} into the run: {error}; the Secret holds {}",
            started.elapsed(),
            secret_chain(cp, namespace, name).await
        ),
    }
}

/// Certificate `namespace/name` (its Secret of the same name) for `host`,
/// whose Worker answers its URL, served at `https`: HTTPS requests run
/// while `renewal` (which may do nothing: the renewal comes when the
/// certificate's lifetime says) is awaited and after, alternating
/// HTTP/1.1 and HTTP/2 on new connections, with one every
/// [`KEEP_ALIVE_EVERY`] on the two connections opened first, until at
/// least [`REQUESTS`] ran, another leaf was served [`RENEWED`] times and
/// the Certificate's revision went up, within `timeout`. Any failed
/// request fails the test ([`fetch_or_fail`]).
pub async fn across_renewal(
    cp: &ControlPlane,
    target: (SocketAddr, &str, &str),
    (namespace, name): (&str, &str),
    renewal: impl Future<Output = ()>,
    timeout: Duration,
) -> Renewal {
    let (https, host, root) = target;
    let api: Api<DynamicObject> =
        Api::namespaced_with(cp.client(), namespace, &issuer::certificate_resource());
    let before = revision(&api, name).await;
    let mut kept = Vec::new();
    for alpn in [H1, H2] {
        let connection = Connection::open_trusting(https, host, root, alpn).await;
        kept.push(connection.expect("a connection to keep open"));
    }
    let first = kept[0].peer.clone();
    let (first_serial, not_before, not_after) = serial(&first);
    let mut seen = Renewal {
        requests: 0,
        kept_alive: 0,
        old: 0,
        new: 0,
        revisions: (before, before),
        serials: (first_serial, String::new()),
        renewed_at: None,
    };
    let started = Instant::now();
    renewal.await;
    while seen.requests < REQUESTS || seen.new < RENEWED || seen.revisions.1 <= before {
        assert!(
            started.elapsed() < timeout,
            "the renewal was not reached in {timeout:?}: {seen:?}"
        );
        let alpn = [H1, H2][seen.requests % 2];
        let leaf = fetch_or_fail(cp, target, (namespace, name), alpn, started).await;
        seen.count(&leaf, &first, (not_before, not_after));
        if seen.requests.is_multiple_of(KEEP_ALIVE_EVERY) {
            let connection = &mut kept[(seen.requests / KEEP_ALIVE_EVERY) % 2];
            let answer = connection.get("/").await;
            let answer = answer.unwrap_or_else(|e| panic!("a kept-open connection failed: {e}"));
            assert_eq!(answer, (200, format!("https://{host}/")));
            seen.kept_alive += 1;
        }
        if seen.new >= RENEWED && seen.revisions.1 <= before {
            seen.revisions.1 = revision(&api, name).await;
        }
    }
    for connection in &kept {
        assert_eq!(connection.peer, first, "a kept connection's certificate");
    }
    seen.print(started.elapsed());
    seen
}
