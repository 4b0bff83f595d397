//! Only the router talks to nodes (and nodes to each other, for Durable
//! Object calls only): a node serving mutual TLS refuses every gRPC client
//! that does not present the router's or a node's certificate from the
//! platform CA — `Execute` and `Stats` alike — on either listener shape, and
//! takes only object calls from a node's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use isolane_node::ListenerMode;
use isolane_proto::mtls::{self, MtlsFiles};
use isolane_proto::runtime::v1::StatsRequest;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_testenv::{GrpcPkiFiles, write_grpc_pki};
use rustls::pki_types::pem::PemObject;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::support::{Shape, TestNode, call, collect, connect, head, start};

struct Pki {
    _dir: tempfile::TempDir,
    files: GrpcPkiFiles,
}

fn new_pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let files = write_grpc_pki(dir.path()).unwrap();
    Pki { _dir: dir, files }
}

fn node_files(pki: &GrpcPkiFiles) -> MtlsFiles {
    MtlsFiles {
        cert: pki.node_cert.clone(),
        key: pki.node_key.clone(),
        ca: pki.ca_cert.clone(),
    }
}

/// The router's client configuration, as the router builds it.
fn router_tls(pki: &GrpcPkiFiles) -> Arc<rustls::ClientConfig> {
    mtls::client_config(&MtlsFiles {
        cert: pki.router_cert.clone(),
        key: pki.router_key.clone(),
        ca: pki.ca_cert.clone(),
    })
    .unwrap()
}

fn start_mtls(pki: &GrpcPkiFiles, listeners: ListenerMode) -> TestNode {
    start(Shape {
        listeners,
        tls: Some(mtls::server_config(&node_files(pki)).unwrap()),
        ..Shape::default()
    })
}

/// A gRPC client over TLS with `tls`, verifying the node as `isolane-node`.
async fn tls_client(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
) -> Result<RuntimeClient<Channel>, tonic::transport::Error> {
    let connector = tokio_rustls::TlsConnector::from(tls);
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .connect_with_connector(tower::service_fn(move |uri: Uri| {
            let connector = connector.clone();
            async move {
                let host = uri.host().unwrap_or_default().to_owned();
                let port = uri.port_u16().unwrap_or(80);
                let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
                let name = mtls::node_server_name().map_err(std::io::Error::other)?;
                let tls = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        }))
        .await?;
    Ok(RuntimeClient::new(channel))
}

/// `Stats` over TLS with `tls`: the node's answer, or why there was none.
async fn stats_with(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) -> Result<String, String> {
    let mut client = tls_client(addr, tls).await.map_err(|e| format!("{e:?}"))?;
    let stats = client
        .stats(StatsRequest {})
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(stats.into_inner().node)
}

/// A client that trusts the node's CA but presents no certificate.
fn no_client_cert(pki: &GrpcPkiFiles) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(&pki.ca_cert).unwrap();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

#[tokio::test]
async fn only_the_routers_certificate_reaches_the_node() {
    let pki = new_pki();
    let other = new_pki();
    for listeners in [ListenerMode::Single, ListenerMode::PerThread] {
        let node = start_mtls(&pki.files, listeners);
        node.deploy(
            "demo/hello",
            "r1",
            "export default { fetch() { return new Response('hi') } }",
        );
        let addr = node.addrs[0];

        // The router's certificate: served.
        assert_eq!(
            stats_with(addr, router_tls(&pki.files)).await.unwrap(),
            "test-node"
        );
        let mut router = tls_client(addr, router_tls(&pki.files)).await.unwrap();
        let answer = call(&mut router, head("GET", "demo/hello", "r1", 0), &[])
            .await
            .unwrap();
        assert_eq!(answer.text(), "hi");

        // No client certificate, one from another CA, or one from the right
        // CA under another name: no Stats, no Execute.
        let impostor = mtls::client_config(&MtlsFiles {
            cert: pki.files.impostor_cert.clone(),
            key: pki.files.impostor_key.clone(),
            ca: pki.files.ca_cert.clone(),
        })
        .unwrap();
        let foreign = mtls::client_config(&MtlsFiles {
            cert: other.files.router_cert.clone(),
            key: other.files.router_key.clone(),
            ca: pki.files.ca_cert.clone(),
        })
        .unwrap();
        for (what, tls) in [
            ("no client certificate", no_client_cert(&pki.files)),
            ("another CA", foreign),
            ("not the router's name", impostor),
        ] {
            let refused = stats_with(addr, tls.clone()).await;
            assert!(refused.is_err(), "{listeners}: {what}: {refused:?}");
            if let Ok(mut client) = tls_client(addr, tls).await {
                let run = call(&mut client, head("GET", "demo/hello", "r1", 0), &[]).await;
                assert!(run.is_err(), "{listeners}: {what}: {run:?}");
            }
        }

        // Plaintext gRPC: refused.
        let plain = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await;
        if let Ok(channel) = plain {
            let stats = RuntimeClient::new(channel).stats(StatsRequest {}).await;
            assert!(stats.is_err(), "{listeners}: plaintext: {stats:?}");
        }

        // The node still serves the router after the refusals.
        assert_eq!(
            stats_with(addr, router_tls(&pki.files)).await.unwrap(),
            "test-node"
        );
    }
}

/// The other direction: the router's configuration refuses a node whose
/// certificate is from another CA (an impostor node).
#[tokio::test]
async fn the_router_refuses_a_node_from_another_ca() {
    let pki = new_pki();
    let other = new_pki();
    let node = start_mtls(&other.files, ListenerMode::Single);
    let refused = stats_with(node.addrs[0], router_tls(&pki.files)).await;
    assert!(refused.is_err(), "{refused:?}");
}

/// The node's own certificate as a client (a peer node's).
fn node_tls(pki: &GrpcPkiFiles) -> Arc<rustls::ClientConfig> {
    mtls::client_config(&node_files(pki)).unwrap()
}

/// An `Execute` of `demo/hello` naming Durable Object `object` (a JSON
/// `[class, id, method]`) in the metadata peers use, or naming none.
async fn object_call(
    client: &mut RuntimeClient<Channel>,
    object: Option<&str>,
) -> Result<crate::support::Answer, tonic::Status> {
    let frames = vec![
        isolane_proto::runtime::v1::ExecuteRequest::head(head("POST", "demo/hello", "r1", 0)),
        isolane_proto::runtime::v1::ExecuteRequest::end(),
    ];
    let mut request = tonic::Request::new(tokio_stream::iter(frames));
    if let Some(object) = object {
        let value = tonic::metadata::MetadataValue::from_bytes(object.as_bytes());
        request
            .metadata_mut()
            .insert_bin(isolane_node::OBJECT_METADATA, value);
    }
    collect(client.execute(request).await?.into_inner()).await
}

/// A node's certificate (a peer calling one of this node's Durable
/// Objects) reaches `Execute` only for a call naming an object; the
/// router's certificate may not name one; an impostor's is refused at the
/// handshake whatever it names.
#[tokio::test]
async fn a_nodes_certificate_makes_object_calls_only() {
    let pki = new_pki();
    let node = start_mtls(&pki.files, ListenerMode::Single);
    node.deploy(
        "demo/hello",
        "r1",
        "export default { fetch() { return new Response('hi') } }",
    );
    let addr = node.addrs[0];
    let id = "ab".repeat(32);
    let object = format!(r#"["Counter","{id}",null]"#);
    let mut peer = tls_client(addr, node_tls(&pki.files)).await.unwrap();
    // Stats, and a call naming no object: refused.
    let stats = stats_with(addr, node_tls(&pki.files)).await;
    assert!(
        stats
            .as_ref()
            .is_err_and(|e| e.contains("PermissionDenied")),
        "{stats:?}"
    );
    let plain = object_call(&mut peer, None).await;
    assert_eq!(plain.unwrap_err().code(), tonic::Code::PermissionDenied);
    // A bad object entry: refused as such.
    let bad = object_call(&mut peer, Some(r#"["Counter","not hex",null]"#)).await;
    assert_eq!(bad.unwrap_err().code(), tonic::Code::InvalidArgument);
    // An object call reaches the Worker's isolate, which answers that it
    // binds no such class (the error an object call carries back).
    let answer = object_call(&mut peer, Some(&object)).await.unwrap();
    assert_eq!(answer.head.status, 500, "{answer:?}");
    assert_eq!(answer.header("isolane-object-threw").as_deref(), Some("1"));
    // The router's certificate may not name an object; it still runs
    // the Worker.
    let mut router = tls_client(addr, router_tls(&pki.files)).await.unwrap();
    let named = object_call(&mut router, Some(&object)).await;
    assert_eq!(named.unwrap_err().code(), tonic::Code::PermissionDenied);
    assert_eq!(object_call(&mut router, None).await.unwrap().text(), "hi");
    // An impostor naming an object does not get past the handshake.
    let impostor = mtls::client_config(&MtlsFiles {
        cert: pki.files.impostor_cert.clone(),
        key: pki.files.impostor_key.clone(),
        ca: pki.files.ca_cert.clone(),
    })
    .unwrap();
    if let Ok(mut client) = tls_client(addr, impostor).await {
        let run = object_call(&mut client, Some(&object)).await;
        assert!(run.is_err(), "{run:?}");
    }
}

/// A node serving plaintext still works with a plaintext client (tests,
/// `isolane dev`).
#[tokio::test]
async fn an_insecure_node_serves_plaintext() {
    let node = start(Shape::default());
    let mut client = connect(&format!("http://{}", node.addrs[0])).await;
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.node, "test-node");
}

/// The binary refuses to start (exit 64, before binding anything) without
/// TLS files or an explicit `--insecure-grpc`, and with unreadable files.
#[test]
fn the_binary_refuses_to_start_without_tls() {
    let pki = new_pki();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_isolane-node"))
            .args(["--node-name", "n", "--grpc-addr", "127.0.0.1:0"])
            .args(args)
            .env_remove(mtls::INSECURE_ENV)
            .env_remove(mtls::TLS_CERT_ENV)
            .env_remove(mtls::TLS_KEY_ENV)
            .env_remove(mtls::TLS_CA_ENV)
            .output()
            .unwrap()
    };
    let missing = run(&[]);
    assert_eq!(missing.status.code(), Some(64), "{missing:?}");
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("--insecure-grpc"),
        "{missing:?}"
    );
    let ca = pki.files.ca_cert.to_str().unwrap();
    // A key that is not the certificate's.
    let mismatched = run(&[
        "--grpc-tls-cert",
        pki.files.node_cert.to_str().unwrap(),
        "--grpc-tls-key",
        pki.files.router_key.to_str().unwrap(),
        "--grpc-tls-ca",
        ca,
    ]);
    assert_eq!(mismatched.status.code(), Some(64), "{mismatched:?}");
}
