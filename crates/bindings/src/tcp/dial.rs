//! Where a `connect()` socket may go and how it gets there: the address
//! checked as workerd checks it, port 25 refused (as Cloudflare refuses
//! it: mail goes through an email service's API), the Worker's
//! `egress.allowedHosts`, then every resolved address through the node's
//! egress policy (`egress::resolve`, the one `fetch`'s resolver uses, `isolane_engine::api::net`: an
//! IP literal is checked as a resolved name is), then TCP and, for
//! `secureTransport: "on"` or `startTls()`, TLS by rustls on the roots
//! `fetch` trusts.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use isolane_engine::api::EgressPolicy;
use isolane_engine::api::net::{self as egress, CONNECT_TIMEOUT, EgressRefused};

/// The port Cloudflare refuses sockets to (SMTP relay).
const SMTP: u16 = 25;

/// The longest host name (RFC 1035), as workerd bounds it.
const MAX_HOST: usize = 255;

/// A socket's byte stream: TCP, or TLS over it.
pub(crate) trait IoStream: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> IoStream for T {}
pub(crate) type Io = Box<dyn IoStream>;

/// A checked destination.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// Lowercase, an IPv6 literal without its brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Why a socket did not open: the `TypeError` message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DialError {
    /// Named as the Worker named it (a name may resolve to several
    /// refused addresses, in any order).
    #[error("connect to {host} refused by the egress policy: {}", refused.reason.describe())]
    Refused {
        host: String,
        refused: EgressRefused,
    },
    #[error("connection to {target} failed: {source}")]
    Io {
        target: String,
        #[source]
        source: std::io::Error,
    },
    #[error("connection to {target} failed: no answer within {} s", CONNECT_TIMEOUT.as_secs())]
    Timeout { target: String },
    #[error("TLS handshake with {target} failed: {source}")]
    Tls {
        target: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid TLS server name {name:?}")]
    ServerName { name: String },
}

impl DialError {
    /// The egress refusal inside, for the node's metrics.
    pub(crate) fn refusal(&self) -> Option<&EgressRefused> {
        match self {
            DialError::Refused { refused, .. } => Some(refused),
            _ => None,
        }
    }
}

impl Target {
    /// `hostname` and `port` as `connect()` got them, checked: a host of
    /// letters, digits, `.-_:` (workerd's check), a port 1–65535 other
    /// than 25.
    pub(crate) fn parse(hostname: &str, port: f64) -> Result<Self, String> {
        let host = hostname
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(hostname);
        let valid = !host.is_empty()
            && host.len() <= MAX_HOST
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
        if !valid {
            return Err(
                "Specified address is empty string, contains unsupported characters or is too long."
                    .to_owned(),
            );
        }
        if !(1.0..=65535.0).contains(&port) || port.fract() != 0.0 {
            return Err(format!("Specified port {port} is not a port (1-65535)."));
        }
        let port = port as u16;
        if port == SMTP {
            return Err(
                "Connections to port 25 are not allowed: send mail through an email service's API."
                    .to_owned(),
            );
        }
        Ok(Self {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
            port,
        })
    }

    fn display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// An open connection and its two ends' addresses.
pub(crate) struct Dialed {
    pub(crate) io: Io,
    pub(crate) remote: SocketAddr,
    pub(crate) local: SocketAddr,
}

/// Resolves `target` through the egress policy and connects to the first
/// allowed address that answers, all within [`CONNECT_TIMEOUT`]; then TLS
/// when `tls` is given.
pub(crate) async fn dial(
    policy: &EgressPolicy,
    target: &Target,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Dialed, DialError> {
    let opened = tokio::time::timeout(CONNECT_TIMEOUT, connect(policy, target)).await;
    let (stream, remote) = opened.map_err(|_| DialError::Timeout {
        target: target.display(),
    })??;
    let local = stream.local_addr().unwrap_or(remote);
    // Small writes (a database protocol's messages) go out at once.
    let _ = stream.set_nodelay(true);
    let io: Io = Box::new(stream);
    let io = match tls {
        Some(config) => handshake(io, config, &target.host, target).await?,
        None => io,
    };
    Ok(Dialed { io, remote, local })
}

async fn connect(
    policy: &EgressPolicy,
    target: &Target,
) -> Result<(TcpStream, SocketAddr), DialError> {
    let io_error = |source| DialError::Io {
        target: target.display(),
        source,
    };
    let addresses = egress::resolve(policy, &target.host, target.port)
        .await
        .map_err(|error| match egress::refusal_in(&error) {
            Some(refused) => DialError::Refused {
                host: target.host.clone(),
                refused: refused.clone(),
            },
            None => io_error(error),
        })?;
    let mut last = None;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok((stream, address)),
            Err(error) => last = Some(error),
        }
    }
    Err(io_error(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "the name has no address")
    })))
}

/// TLS over `io`, the server named `server_name` (its certificate checked
/// against the roots of `config`), within [`CONNECT_TIMEOUT`].
pub(crate) async fn handshake(
    io: Io,
    config: Arc<rustls::ClientConfig>,
    server_name: &str,
    target: &Target,
) -> Result<Io, DialError> {
    let name = server_name
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(server_name);
    let name = ServerName::try_from(name.to_owned()).map_err(|_| DialError::ServerName {
        name: server_name.to_owned(),
    })?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let secured = tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, io))
        .await
        .map_err(|_| DialError::Timeout {
            target: target.display(),
        })?
        .map_err(|source| DialError::Tls {
            target: target.display(),
            source,
        })?;
    Ok(Box::new(secured))
}

/// The TLS client configuration sockets use: the roots `fetch` trusts (the
/// public web PKI and the node's extra CAs), no ALPN.
pub(crate) fn client_config(roots: rustls::RootCertStore) -> Option<Arc<rustls::ClientConfig>> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .ok()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Some(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_as_workerd_checks_them() {
        let t = Target::parse("Example.COM.", 5432.0).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.com", 5432));
        let t = Target::parse("[::1]", 443.0).unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.display(), "[::1]:443");
        for bad in ["", "a b", "a/b", "évil", &"a".repeat(256)] {
            assert!(Target::parse(bad, 80.0).is_err(), "{bad:?}");
        }
        for port in [0.0, 65536.0, 1.5, -1.0, f64::NAN] {
            assert!(Target::parse("example.com", port).is_err(), "{port}");
        }
        let smtp = Target::parse("mail.example.com", 25.0).unwrap_err();
        assert!(smtp.contains("port 25"), "{smtp}");
    }
}
