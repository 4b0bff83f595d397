//! Mutual TLS between the router and runtime nodes: only the router talks to
//! nodes.
//!
//! One dedicated CA signs two kinds of certificate:
//!
//! - each node's serving certificate, with the DNS name [`NODE_NAME`]
//!   (`isolane-node`) and the `serverAuth` usage;
//! - the router's client certificate, with the DNS name [`ROUTER_NAME`]
//!   (`isolane-router`) and the `clientAuth` usage.
//!
//! A node ([`server_config`]) requires a client certificate that chains to the
//! CA *and* names `isolane-router` or `isolane-node` ([`RouterOrNode`]); the
//! connection's [`PeerRole`] says which, and a node's certificate (a peer
//! node's Durable Object call, `isolane-node`'s `peers.rs`) is accepted for
//! object calls only: the node's service refuses anything else from it. The
//! router ([`client_config`]) verifies a node against the CA under the fixed
//! name `isolane-node` rather than the address it dials: nodes are reached at
//! pod IPs read from their Leases, which are not known when certificates are
//! issued, and every node is equally trusted, so the name says "a node of
//! this platform" and the CA (used for nothing else) says who issued it.
//!
//! rustls with the ring provider, TLS 1.2 and 1.3, ALPN `h2`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

/// The DNS name every node's certificate carries and the router verifies.
pub const NODE_NAME: &str = "isolane-node";
/// The DNS name the router's client certificate carries and nodes require.
pub const ROUTER_NAME: &str = "isolane-router";

/// The PEM files of one side of the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MtlsFiles {
    /// This side's certificate (chain), PEM.
    pub cert: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA that signed the other side's certificate, PEM.
    pub ca: PathBuf,
}

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum MtlsError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path} holds no certificate")]
    NoCertificate { path: PathBuf },
    #[error("invalid TLS configuration: {0}")]
    Config(String),
}

/// The node's side: serve with `files.cert`/`files.key`, accept only clients
/// whose certificate chains to `files.ca` and names [`ROUTER_NAME`] or
/// [`NODE_NAME`] (a peer node, for object calls only: [`peer_role`]).
pub fn server_config(files: &MtlsFiles) -> Result<Arc<rustls::ServerConfig>, MtlsError> {
    let (certs, key, roots) = load(files)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|error| MtlsError::Config(error.to_string()))?;
    let verifier = Arc::new(RouterOrNode { inner });
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| MtlsError::Config(error.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|error| MtlsError::Config(error.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The router's side: present `files.cert`/`files.key`, trust nodes whose
/// certificate chains to `files.ca`; connect with [`node_server_name`].
pub fn client_config(files: &MtlsFiles) -> Result<Arc<rustls::ClientConfig>, MtlsError> {
    let (certs, key, roots) = load(files)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| MtlsError::Config(error.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|error| MtlsError::Config(error.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The name the router verifies every node's certificate against.
pub fn node_server_name() -> Result<ServerName<'static>, MtlsError> {
    ServerName::try_from(NODE_NAME).map_err(|error| MtlsError::Config(error.to_string()))
}

type Loaded = (
    Vec<CertificateDer<'static>>,
    PrivateKeyDer<'static>,
    RootCertStore,
);

fn load(files: &MtlsFiles) -> Result<Loaded, MtlsError> {
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| read_error(&files.key, e))?;
    let mut roots = RootCertStore::empty();
    for ca in read_certs(&files.ca)? {
        roots.add(ca).map_err(|error| MtlsError::Read {
            path: files.ca.clone(),
            reason: error.to_string(),
        })?;
    }
    Ok((certs, key, roots))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, MtlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| read_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read_error(path, e))?;
    if certs.is_empty() {
        return Err(MtlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

fn read_error(path: &Path, error: impl std::fmt::Display) -> MtlsError {
    MtlsError::Read {
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

/// Who is at the other end of a node's connection, by the name its
/// client certificate carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerRole {
    /// The router ([`ROUTER_NAME`]): any call.
    Router,
    /// Another node ([`NODE_NAME`]): Durable Object calls only.
    Node,
}

/// The role a client certificate names, if any ([`ROUTER_NAME`] first).
pub fn peer_role(end_entity: &CertificateDer<'_>) -> Option<PeerRole> {
    let parsed = ParsedCertificate::try_from(end_entity).ok()?;
    [(ROUTER_NAME, PeerRole::Router), (NODE_NAME, PeerRole::Node)]
        .into_iter()
        .find(|(name, _)| {
            ServerName::try_from(*name)
                .is_ok_and(|name| rustls::client::verify_server_name(&parsed, &name).is_ok())
        })
        .map(|(_, role)| role)
}

/// A client verifier that accepts what webpki accepts (chain to the CA,
/// validity, `clientAuth` usage) and then only a certificate naming
/// [`ROUTER_NAME`] or [`NODE_NAME`] ([`peer_role`]).
#[derive(Debug)]
pub struct RouterOrNode {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RouterOrNode {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        if peer_role(end_entity).is_none() {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName,
            ));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Env var for `--grpc-tls-cert`.
pub const TLS_CERT_ENV: &str = "ISOLANE_GRPC_TLS_CERT";
/// Env var for `--grpc-tls-key`.
pub const TLS_KEY_ENV: &str = "ISOLANE_GRPC_TLS_KEY";
/// Env var for `--grpc-tls-ca`.
pub const TLS_CA_ENV: &str = "ISOLANE_GRPC_TLS_CA";
/// Env var for `--insecure-grpc`.
pub const INSECURE_ENV: &str = "ISOLANE_INSECURE_GRPC";

/// The router↔node gRPC security flags, shared by both binaries.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MtlsArgs {
    /// This side's certificate for router↔node gRPC (PEM): the node's serving
    /// certificate (name `isolane-node`) or the router's client certificate
    /// (name `isolane-router`).
    #[arg(long, env = TLS_CERT_ENV)]
    pub grpc_tls_cert: Option<PathBuf>,

    /// The private key of --grpc-tls-cert (PEM).
    #[arg(long, env = TLS_KEY_ENV)]
    pub grpc_tls_key: Option<PathBuf>,

    /// The CA that signs router and node certificates (PEM).
    #[arg(long, env = TLS_CA_ENV)]
    pub grpc_tls_ca: Option<PathBuf>,

    /// Plaintext, unauthenticated router↔node gRPC. For tests and
    /// `isolane dev` only: anyone who reaches a node's port can run any Worker.
    #[arg(long, env = INSECURE_ENV, default_value_t = false)]
    pub insecure_grpc: bool,
}

/// How router↔node gRPC is secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcSecurity {
    /// Mutual TLS with these files.
    Mtls(MtlsFiles),
    /// Plaintext (`--insecure-grpc`).
    Insecure,
}

/// Why the security flags do not make a [`GrpcSecurity`].
#[derive(Debug, thiserror::Error)]
pub enum MtlsArgsError {
    #[error(
        "router↔node gRPC needs --grpc-tls-cert, --grpc-tls-key and --grpc-tls-ca (or --insecure-grpc for tests)"
    )]
    Missing,
    #[error("--insecure-grpc cannot be combined with --grpc-tls-* flags")]
    Conflict,
}

impl MtlsArgs {
    /// Checks that either all three files or `--insecure-grpc` were given.
    pub fn validate(self) -> Result<GrpcSecurity, MtlsArgsError> {
        match (
            self.insecure_grpc,
            self.grpc_tls_cert,
            self.grpc_tls_key,
            self.grpc_tls_ca,
        ) {
            (true, None, None, None) => Ok(GrpcSecurity::Insecure),
            (true, ..) => Err(MtlsArgsError::Conflict),
            (false, Some(cert), Some(key), Some(ca)) => {
                Ok(GrpcSecurity::Mtls(MtlsFiles { cert, key, ca }))
            }
            (false, ..) => Err(MtlsArgsError::Missing),
        }
    }
}

impl MtlsFiles {
    /// The environment a child process needs to use these files (for test
    /// harnesses that spawn nodes and routers).
    pub fn env(&self) -> [(&'static str, &Path); 3] {
        [
            (TLS_CERT_ENV, self.cert.as_path()),
            (TLS_KEY_ENV, self.key.as_path()),
            (TLS_CA_ENV, self.ca.as_path()),
        ]
    }
}
