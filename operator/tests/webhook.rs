//! The admission webhook's edge: served over TLS through the shared accept
//! loop, it drops a client that stays silent (before or after the TLS
//! handshake) once the header-read timeout has passed, and answers one that
//! speaks.
// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isolane_edge::Edge;
use isolane_operator::index::WorkerIndex;
use isolane_operator::webhook;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const HEADER_READ_TIMEOUT: Duration = Duration::from_millis(400);
/// Far longer than the timeout: a connection still open then was not dropped.
const DEADLINE: Duration = Duration::from_secs(10);

struct Webhook {
    addr: SocketAddr,
    tls: tokio_rustls::TlsConnector,
    _dir: tempfile::TempDir,
    stop: CancellationToken,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The webhook on a free port with a test certificate for `isolane-node`,
/// and a TLS client that trusts it.
async fn webhook() -> Webhook {
    let dir = tempfile::tempdir().unwrap();
    let pki = isolane_testenv::write_grpc_pki(dir.path()).unwrap();
    let acceptor = webhook::load_tls(&pki.node_cert, &pki.node_key).unwrap();
    let listener = webhook::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let edge =
        Edge::new("webhook", Duration::from_secs(1)).with_header_read_timeout(HEADER_READ_TIMEOUT);
    let stop = CancellationToken::new();
    let index = Arc::new(Mutex::new(WorkerIndex::default()));
    tokio::spawn(webhook::serve(
        listener,
        acceptor,
        index,
        webhook::Stores::default(),
        edge,
        stop.clone(),
    ));

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&pki.ca_cert).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Webhook {
        addr,
        tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        _dir: dir,
        stop,
    }
}

impl Webhook {
    async fn tls_client(&self) -> tokio_rustls::client::TlsStream<TcpStream> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("isolane-node").unwrap();
        self.tls.connect(name, tcp).await.unwrap()
    }
}

/// How long the server took to close `stream` (reading what it sends until
/// then); `None` if it was still open at [`DEADLINE`].
async fn closed_after(stream: &mut (impl AsyncRead + Unpin)) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(started + DEADLINE, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn a_silent_client_is_dropped_after_the_header_read_timeout() {
    let webhook = webhook().await;

    // Silent from the start: not even a TLS ClientHello.
    let mut tcp = TcpStream::connect(webhook.addr).await.unwrap();
    let took = closed_after(&mut tcp)
        .await
        .expect("a silent client is dropped");
    assert!(
        took >= HEADER_READ_TIMEOUT,
        "dropped after {took:?}, before the timeout"
    );

    // Silent after the TLS handshake.
    let mut tls = webhook.tls_client().await;
    let took = closed_after(&mut tls)
        .await
        .expect("a silent TLS client is dropped");
    assert!(took < DEADLINE);

    // A client that speaks is answered on the same server.
    let mut tls = webhook.tls_client().await;
    tls.write_all(b"GET /validate-worker HTTP/1.1\r\nhost: webhook\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
}
