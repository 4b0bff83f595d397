//! The HTTPS listener's flags and its rustls configuration: TLS 1.3 and 1.2
//! only, ring's suites (all AEAD with ephemeral ECDHE: AES-GCM and
//! ChaCha20-Poly1305; rustls has no CBC, RC4 or renegotiation at all), ALPN
//! `h2` then `http/1.1`, certificates from the [`SniResolver`].

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::ServerConfig;

use super::SniResolver;

/// Env var for `--tls-listen-addr`.
pub const ENV_TLS_LISTEN_ADDR: &str = "ISOLANE_TLS_LISTEN_ADDR";
/// Env var for `--redirect-to-https`.
pub const ENV_REDIRECT_TO_HTTPS: &str = "ISOLANE_REDIRECT_TO_HTTPS";
/// Env var for `--acme-http01`.
pub const ENV_ACME_HTTP01: &str = "ISOLANE_ACME_HTTP01";
/// Env var for `--https-port`.
pub const ENV_HTTPS_PORT: &str = "ISOLANE_HTTPS_PORT";

/// The router's HTTPS flags.
#[derive(Clone, Debug, clap::Args)]
pub struct HttpsArgs {
    /// Address of the HTTPS ingress (HTTP/1.1 and HTTP/2 by ALPN), serving
    /// each admitted host the certificate of a Secret labelled
    /// `isolane.dev/tls=true` in its namespace (docs/tls.md). Unset: none.
    #[arg(long, env = ENV_TLS_LISTEN_ADDR)]
    pub tls_listen_addr: Option<SocketAddr>,

    /// Answer plain-HTTP requests for hosts that have a certificate with a
    /// 308 to the same URL over HTTPS (`/.well-known/acme-challenge/` is
    /// never redirected, nor a request whose trusted proxy sent
    /// `X-Forwarded-Proto: https`). Needs `--tls-listen-addr`.
    #[arg(long, env = ENV_REDIRECT_TO_HTTPS, requires = "tls_listen_addr")]
    pub redirect_to_https: bool,

    /// The port clients reach the HTTPS ingress on, as redirects name it
    /// (the Service's, not necessarily the listener's).
    #[arg(long, env = ENV_HTTPS_PORT, default_value_t = 443)]
    pub https_port: u16,

    /// Answer cert-manager's ACME HTTP-01 challenges on the plain ingress:
    /// watch `Challenge`s (acme.cert-manager.io/v1) and answer
    /// `/.well-known/acme-challenge/<token>` for a host with the key of a
    /// Challenge in the namespace that owns the host (docs/tls.md).
    #[arg(long, env = ENV_ACME_HTTP01)]
    pub acme_http01: bool,
}

/// The suites in the server's order: AES-128-GCM first, the cheapest per
/// record where the CPU has AES instructions (ring's default puts
/// AES-256-GCM first: four more rounds a block, and SHA-384 for the key
/// schedule); then AES-256-GCM and ChaCha20-Poly1305 (cheaper without AES
/// instructions; a client that prefers it still gets what it offers, as
/// the server takes the first of its own list the client supports).
const SUITES: [rustls::SupportedCipherSuite; 9] = {
    use rustls::crypto::ring::cipher_suite as s;
    [
        s::TLS13_AES_128_GCM_SHA256,
        s::TLS13_AES_256_GCM_SHA384,
        s::TLS13_CHACHA20_POLY1305_SHA256,
        s::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        s::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        s::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        s::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        s::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        s::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]
};

/// The HTTPS ingress's TLS configuration, certificates from `resolver`.
pub fn server_config(resolver: Arc<SniResolver>) -> Result<ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: SUITES.to_vec(),
        ..rustls::crypto::ring::default_provider()
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // The server's order of suites (strongest first), not the client's.
    config.ignore_client_order = true;
    Ok(config)
}
