//! An HTTPS client of the router's HTTPS ingress: one TLS connection (SNI
//! and ALPN as given, the tests' CA as the only root) carrying HTTP/1.1 or
//! HTTP/2, with the certificate the server presented and the protocol it
//! chose, kept open for as many requests as the test sends. A handshake
//! that fails says which chain the server presented.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use isolane_testenv::TestCa;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long a handshake or an exchange may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// ALPN: HTTP/1.1 only.
pub const H1: &[u8] = b"http/1.1";
/// ALPN: HTTP/2 only.
pub const H2: &[u8] = b"h2";

/// The request sender of a connection, by protocol.
enum Sender {
    One(http1::SendRequest<Empty<Bytes>>),
    Two(http2::SendRequest<Empty<Bytes>>),
}

/// One open HTTPS connection to the router.
pub struct Connection {
    sender: Sender,
    host: String,
    /// The leaf certificate the server presented (DER).
    pub peer: Vec<u8>,
    /// The protocol ALPN chose.
    pub alpn: Option<Vec<u8>>,
}

/// The chain (leaf first) the server presented in the last handshake.
type Presented = Arc<Mutex<Vec<CertificateDer<'static>>>>;

/// The webpki verifier of the tests' root, keeping what the server
/// presented whether or not it verifies.
#[derive(Debug)]
struct Recording {
    webpki: Arc<WebPkiServerVerifier>,
    presented: Presented,
}

impl ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain = std::iter::once(end_entity).chain(intermediates);
        let chain = chain.map(|cert| cert.clone().into_owned()).collect();
        *self.presented.lock().expect("the chain's lock") = chain;
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// A client config trusting only `ca`, offering `alpn`, keeping the chain
/// presented in `presented`.
fn config(root_pem: &str, alpn: &[u8], presented: Presented) -> rustls::ClientConfig {
    let mut roots = RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(root_pem.as_bytes()).expect("the CA's PEM");
    roots.add(ca).expect("the CA as a root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .expect("a verifier of the CA");
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Recording { webpki, presented }))
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config
}

/// One line per certificate of `chain` (DER, leaf first): serial,
/// subject, issuer and validity, for a failure's message.
pub fn describe(chain: &[CertificateDer<'_>]) -> String {
    let line = |der: &CertificateDer<'_>| match x509_parser::parse_x509_certificate(der) {
        Ok((_, cert)) => format!(
            "serial {} subject {:?} issuer {:?} valid {} .. {}",
            cert.raw_serial_as_string(),
            cert.subject().to_string(),
            cert.issuer().to_string(),
            cert.validity().not_before,
            cert.validity().not_after,
        ),
        Err(error) => format!("not X.509 ({error}), {} bytes", der.len()),
    };
    let lines: Vec<String> = chain.iter().map(line).collect();
    format!("[{}]", lines.join("; "))
}

impl Connection {
    /// Connects to `addr` for `host` (SNI), offering only `alpn`; `Err`
    /// when the handshake fails (the server refused the name, say).
    pub async fn open(
        addr: SocketAddr,
        host: &str,
        ca: &TestCa,
        alpn: &[u8],
    ) -> Result<Self, String> {
        Self::open_trusting(addr, host, &ca.cert_pem(), alpn).await
    }

    /// [`Connection::open`] trusting only the root `root_pem` (PEM).
    pub async fn open_trusting(
        addr: SocketAddr,
        host: &str,
        root_pem: &str,
        alpn: &[u8],
    ) -> Result<Self, String> {
        let presented = Presented::default();
        let config = config(root_pem, alpn, presented.clone());
        let connector = TlsConnector::from(Arc::new(config));
        let name = ServerName::try_from(host.to_owned()).map_err(|e| e.to_string())?;
        let handshake = async {
            let tcp = TcpStream::connect(addr).await?;
            connector.connect(name, tcp).await
        };
        let stream = tokio::time::timeout(TIMEOUT, handshake)
            .await
            .map_err(|_| "handshake timed out".to_owned())?
            .map_err(|error| {
                let chain = presented.lock().expect("the chain's lock");
                format!("handshake: {error}; presented {}", describe(&chain))
            })?;
        let (_, session) = stream.get_ref();
        let peer = session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|leaf| leaf.as_ref().to_vec())
            .ok_or("no peer certificate")?;
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        let io = TokioIo::new(stream);
        let sender = if alpn.as_deref() == Some(H2) {
            let (sender, connection) = http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|error| format!("h2 handshake: {error}"))?;
            tokio::spawn(connection);
            Sender::Two(sender)
        } else {
            let (sender, connection) = http1::handshake(io)
                .await
                .map_err(|error| format!("http/1.1 handshake: {error}"))?;
            tokio::spawn(connection);
            Sender::One(sender)
        };
        Ok(Self {
            sender,
            host: host.to_owned(),
            peer,
            alpn,
        })
    }

    /// `GET path` on this connection: status and body.
    pub async fn get(&mut self, path: &str) -> Result<(u16, String), String> {
        let exchange = async {
            let response = match &mut self.sender {
                Sender::One(sender) => {
                    let request = http::Request::get(path)
                        .header(http::header::HOST, &self.host)
                        .body(Empty::new())
                        .map_err(|e| e.to_string())?;
                    sender.send_request(request).await
                }
                Sender::Two(sender) => {
                    let request = http::Request::get(format!("https://{}{path}", self.host))
                        .body(Empty::new())
                        .map_err(|e| e.to_string())?;
                    sender.send_request(request).await
                }
            }
            .map_err(|error| format!("send: {error}"))?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|error| format!("body: {error}"))?
                .to_bytes();
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| "no answer in time".to_owned())?
    }
}

/// One text message over a WebSocket to `addr` for `host`
/// (`wss://host/path`, HTTP/1.1 over TLS trusting only `ca`): the first
/// text the Worker sends back.
pub async fn websocket_echo(
    addr: SocketAddr,
    host: &str,
    ca: &TestCa,
    path: &str,
    message: &str,
) -> Result<String, String> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let config = config(&ca.cert_pem(), H1, Presented::default());
    let connector = TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from(host.to_owned()).map_err(|e| e.to_string())?;
    let exchange = async {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let url = format!("wss://{host}{path}");
        let (mut socket, _) = tokio_tungstenite::client_async(url, tls)
            .await
            .map_err(|e| format!("upgrade: {e}"))?;
        socket
            .send(Message::text(message))
            .await
            .map_err(|e| e.to_string())?;
        match socket.next().await {
            Some(Ok(Message::Text(text))) => Ok(text.to_string()),
            other => Err(format!("no text back: {other:?}")),
        }
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .map_err(|_| "the WebSocket exchange timed out".to_owned())?
}
