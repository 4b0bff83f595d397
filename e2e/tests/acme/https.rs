//! HTTPS to a Worker's host trusting only Pebble's issuing root, each
//! request on a new connection, and a renewal forced while such requests
//! run. Shared by acme.rs (the router as a process) and chart/acme.rs (the
//! router as a pod on the kubelet).

use std::net::SocketAddr;
use std::time::Duration;

use isolane_testenv::ControlPlane;

use super::client::{Connection, H1, H2};
use super::issuer;

/// How many HTTPS requests, each on a new connection, run across the renewal.
pub const REQUESTS: usize = 1000;

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

/// What [`renew_under_load`] saw.
#[derive(Debug, Clone, Copy)]
pub struct Renewal {
    /// Requests sent, each on a new connection; none failed.
    pub requests: usize,
    /// Handshakes that presented the certificate from before the renewal.
    pub old: usize,
    /// Handshakes that presented another one.
    pub new: usize,
}

/// Certificate `namespace/name` for `host` (whose Worker answers its URL),
/// served at `https`, whose leaf was `first`: a renewal forced while HTTPS
/// requests on new connections run, alternating HTTP/1.1 and HTTP/2, at
/// least [`REQUESTS`] and until the new certificate was served 50 times
/// (within `timeout`). Any failed request fails the test.
pub async fn renew_under_load(
    cp: &ControlPlane,
    (https, host, root): (SocketAddr, &str, &str),
    (namespace, name): (&str, &str),
    first: &[u8],
    timeout: Duration,
) -> Renewal {
    let mut seen = Renewal {
        requests: 0,
        old: 0,
        new: 0,
    };
    let started = std::time::Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    issuer::renew(cp, namespace, name).await;
    while seen.requests < REQUESTS || seen.new < 50 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "renewal not seen: {seen:?}"
        );
        let alpn = [H1, H2][seen.requests % 2];
        let (body, leaf) = fetch(https, host, root, alpn)
            .await
            .unwrap_or_else(|error| panic!("request {} failed: {error}", seen.requests));
        assert_eq!(body, format!("https://{host}/"));
        seen.requests += 1;
        if leaf == first {
            seen.old += 1;
        } else {
            seen.new += 1;
        }
    }
    println!(
        "renewal under load: {} HTTPS requests on new connections in {:?}, 0 failed; \
         old certificate served {} times, new {}",
        seen.requests,
        started.elapsed(),
        seen.old,
        seen.new
    );
    seen
}
