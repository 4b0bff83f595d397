//! Where a worker's `fetch` may connect: the egress policy, and the HTTPS
//! client that enforces it on every connection.
//!
//! By default a worker reaches public addresses only. Refused: loopback,
//! unspecified, link-local (so the cloud metadata service at
//! 169.254.169.254), private (RFC 1918, IPv6 unique-local), CGNAT
//! (100.64.0.0/10), multicast, broadcast, documentation, benchmarking and
//! reserved ranges, and whatever the node adds (`EgressConfig::deny`: its
//! own addresses, the cluster's pod and service ranges). The node may open
//! specific destinations (`EgressConfig::allow`).
//!
//! IPv6 addresses that embed an IPv4 address: an IPv4-mapped one
//! (`::ffff:a.b.c.d`) is that IPv4 address (a dual-stack socket connects to
//! it), so the IPv4 policy decides. Every other form is refused outright,
//! whatever IPv4 address it embeds ([`Refusal::EmbeddedIpv4`]): IPv4-compatible
//! `::/96`, IPv4-translated `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96` and
//! `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32` and ISATAP interface
//! ids (`…:0:5efe:a.b.c.d`, `…:200:5efe:a.b.c.d`). Each reaches its IPv4
//! address through a translator, relay or tunnel (a cluster's NAT64 gateway
//! reaches private addresses as readily as public ones) whose far side the
//! node cannot see, so the destination cannot be shown to be public, and
//! only public destinations are reached by default. A node may still open
//! them (`EgressConfig::allow`).
//!
//! The check is on the *resolved* address of every connection: the client's
//! resolver drops refused addresses (a name that resolves to loopback, DNS
//! rebinding between two lookups), and the engine's `host/outbound.rs` checks
//! IP literals itself (hyper connects to those without resolving) on every
//! redirect hop.
//! Every spelling of an address (`2130706433`, `0x7f000001`, `127.1`,
//! `[::ffff:127.0.0.1]`) reaches here as the same `IpAddr`: the WHATWG URL
//! parser normalises them.
//!
//! A crate below the engine's core, which builds each thread's clients here
//! ([`client`], over its own body type) and re-exports the policy's types
//! (`isolane_engine::EgressConfig`, `isolane_engine::api::net`): the crates
//! above the core reach it through the engine.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// How long a connection (TCP and TLS) may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where `fetch` may connect, per engine (node).
#[derive(Debug, Clone, Default)]
pub struct EgressConfig {
    /// Destinations opened although the default policy refuses them.
    pub allow: Vec<IpNet>,
    /// Destinations refused although public (the node's own addresses, the
    /// cluster's pod and service ranges).
    pub deny: Vec<IpNet>,
    /// PEM certificates trusted besides the public web PKI roots.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// The DNS-over-HTTPS server `node:dns` asks (its JSON API), through
    /// the Worker's own `fetch`; `None` (the default): `node:dns` asks the
    /// node's own resolver, as /etc/resolv.conf configures it
    /// (`crates/nodejs/src/dns.rs`).
    pub dns_over_https: Option<String>,
    /// The name servers and search domains `node:dns` uses instead of
    /// /etc/resolv.conf's, when it asks the node's resolver (tests; a node
    /// reads the file).
    pub dns_resolver: Option<DnsResolverConfig>,
}

/// Name servers for `node:dns` in place of /etc/resolv.conf's.
#[derive(Debug, Clone, Default)]
pub struct DnsResolverConfig {
    /// Asked over UDP (and TCP for a truncated answer).
    pub servers: Vec<SocketAddr>,
    /// The search domains: names under them are the node's own, refused
    /// as the cluster's are (`crates/nodejs/src/dns.rs`); never appended to a name.
    pub search: Vec<String>,
}

impl EgressConfig {
    /// A policy that opens every destination (`isolane dev` on a developer's
    /// machine, tests).
    pub fn open() -> Self {
        Self {
            allow: vec![
                IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::UNSPECIFIED, 0)),
                IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::UNSPECIFIED, 0)),
            ],
            ..Self::default()
        }
    }
}

/// Why an address is refused: a bounded label (metrics) and its meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    Loopback,
    Unspecified,
    LinkLocal,
    Private,
    SharedAddressSpace,
    Multicast,
    Broadcast,
    Documentation,
    Reserved,
    /// An IPv6 form that embeds an IPv4 address and reaches it through a
    /// translator or tunnel (NAT64, 6to4, Teredo, ISATAP, IPv4-compatible).
    EmbeddedIpv4,
    /// On the node's deny list.
    Denied,
}

impl Refusal {
    pub fn as_str(&self) -> &'static str {
        match self {
            Refusal::Loopback => "loopback",
            Refusal::Unspecified => "unspecified",
            Refusal::LinkLocal => "link_local",
            Refusal::Private => "private",
            Refusal::SharedAddressSpace => "shared_address_space",
            Refusal::Multicast => "multicast",
            Refusal::Broadcast => "broadcast",
            Refusal::Documentation => "documentation",
            Refusal::Reserved => "reserved",
            Refusal::EmbeddedIpv4 => "embedded_ipv4",
            Refusal::Denied => "denied",
        }
    }

    /// The refusal in words, for an error message (`connect()`'s too).
    pub fn describe(&self) -> &'static str {
        match self {
            Refusal::Loopback => "loopback address",
            Refusal::Unspecified => "unspecified address",
            Refusal::LinkLocal => "link-local address",
            Refusal::Private => "private address",
            Refusal::SharedAddressSpace => "shared (CGNAT) address",
            Refusal::Multicast => "multicast address",
            Refusal::Broadcast => "broadcast address",
            Refusal::Documentation => "documentation address",
            Refusal::Reserved => "reserved address",
            Refusal::EmbeddedIpv4 => {
                "IPv6 address embedding an IPv4 address (NAT64, 6to4, Teredo, ISATAP)"
            }
            Refusal::Denied => "address denied by the node",
        }
    }
}

/// A connection the policy refused; the `TypeError` message `fetch` rejects with.
#[derive(Debug, Clone, thiserror::Error)]
#[error("fetch to {address} refused by the egress policy: {}", reason.describe())]
pub struct EgressRefused {
    pub address: IpAddr,
    pub reason: Refusal,
}

/// The policy, compiled.
#[derive(Debug, Default)]
pub struct EgressPolicy {
    allow: Vec<IpNet>,
    deny: Vec<IpNet>,
    dns_over_https: Option<String>,
    dns_resolver: Option<DnsResolverConfig>,
}

impl EgressPolicy {
    pub fn new(config: &EgressConfig) -> Self {
        Self {
            allow: config.allow.clone(),
            deny: config.deny.clone(),
            dns_over_https: config.dns_over_https.clone(),
            dns_resolver: config.dns_resolver.clone(),
        }
    }

    /// The DNS-over-HTTPS server `node:dns` asks; `None`: the node's resolver.
    pub fn dns_over_https(&self) -> Option<&str> {
        self.dns_over_https.as_deref()
    }

    /// The name servers `node:dns` asks instead of /etc/resolv.conf's.
    pub fn dns_resolver(&self) -> Option<&DnsResolverConfig> {
        self.dns_resolver.as_ref()
    }

    /// Whether the node opens any destination the default policy refuses
    /// (`EgressConfig::allow` is not empty).
    pub fn opens_some(&self) -> bool {
        !self.allow.is_empty()
    }

    /// Whether the node opens every destination, IPv4 and IPv6
    /// ([`EgressConfig::open`]: `isolane dev`).
    pub fn opens_all(&self) -> bool {
        let everything = |v4: bool| {
            self.allow
                .iter()
                .any(|net| net.prefix_len() == 0 && matches!(net, IpNet::V4(_)) == v4)
        };
        everything(true) && everything(false)
    }

    /// Whether `fetch` may connect to `address`.
    pub fn check(&self, address: IpAddr) -> Result<(), EgressRefused> {
        let address = canonical(address);
        if self.allow.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        let refused = |reason| Err(EgressRefused { address, reason });
        if self.deny.iter().any(|net| net.contains(&address)) {
            return refused(Refusal::Denied);
        }
        match classify(address) {
            Some(reason) => refused(reason),
            None => Ok(()),
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is that IPv4 address: a
/// dual-stack socket connects to it. (The other forms that embed one are
/// refused whole, [`embeds_ipv4`].)
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `ip` (not IPv4-mapped) embeds an IPv4 address that a translator,
/// relay or tunnel would carry it to.
fn embeds_ipv4(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // IPv4-compatible ::/96 (deprecated; `::` and `::1` are classified before).
    s[..6] == [0; 6]
        // IPv4-translated ::ffff:0:0:0/96 (SIIT).
        || (s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0)
        // NAT64: the well-known prefix 64:ff9b::/96 and the local-use 64:ff9b:1::/48.
        || (s[0] == 0x64 && s[1] == 0xff9b && (s[2..6] == [0; 4] || s[2] == 1))
        // 6to4 2002::/16.
        || s[0] == 0x2002
        // Teredo 2001::/32 (server and obfuscated client address inside).
        || (s[0] == 0x2001 && s[1] == 0)
        // ISATAP interface id, under any prefix: 0:5efe or 200:5efe (the
        // universal/local bit set), then the IPv4 address.
        || ((s[4] & 0xfdff) == 0 && s[5] == 0x5efe)
}

/// The reason a non-public address is refused, `None` for public ones.
fn classify(address: IpAddr) -> Option<Refusal> {
    match address {
        IpAddr::V4(ip) => {
            let o = ip.octets();
            if ip.is_loopback() {
                Some(Refusal::Loopback)
            } else if ip.is_unspecified() || o[0] == 0 {
                Some(Refusal::Unspecified)
            } else if ip.is_link_local() {
                Some(Refusal::LinkLocal)
            } else if ip.is_private() {
                Some(Refusal::Private)
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some(Refusal::SharedAddressSpace)
            } else if ip.is_multicast() {
                Some(Refusal::Multicast)
            } else if ip.is_broadcast() {
                Some(Refusal::Broadcast)
            } else if ip.is_documentation() {
                Some(Refusal::Documentation)
            } else if (o[0] == 198 && (o[1] & 0xfe) == 18)  // 198.18.0.0/15 benchmarking
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)     // 192.0.0.0/24 IETF
                || o[0] >= 240
            // 240.0.0.0/4 reserved
            {
                Some(Refusal::Reserved)
            } else {
                None
            }
        }
        IpAddr::V6(ip) => {
            let s = ip.segments();
            if ip.is_loopback() {
                Some(Refusal::Loopback)
            } else if ip.is_unspecified() {
                Some(Refusal::Unspecified)
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some(Refusal::LinkLocal)
            } else if (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfec0 {
                // unique local fc00::/7, deprecated site-local fec0::/10
                Some(Refusal::Private)
            } else if ip.is_multicast() {
                Some(Refusal::Multicast)
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some(Refusal::Documentation)
            } else if embeds_ipv4(ip) {
                Some(Refusal::EmbeddedIpv4)
            } else if (s[0] & 0xe000) != 0x2000 {
                // Everything else outside global unicast 2000::/3 (discard
                // 100::/64, …) could reach an internal address.
                Some(Refusal::Reserved)
            } else {
                None
            }
        }
    }
}

// === the resolver: every name's addresses pass the policy ===

/// Resolves names with the system resolver, keeping only the addresses the
/// policy allows; a name with none left fails with [`EgressRefused`].
#[derive(Clone)]
pub struct PolicyResolver {
    policy: Arc<EgressPolicy>,
}

type Resolving = Pin<Box<dyn Future<Output = io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower_service::Service<Name> for PolicyResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.policy.clone();
        Box::pin(async move {
            let allowed = resolve(&policy, name.as_str(), 0).await?;
            Ok(allowed.into_iter())
        })
    }
}

/// The addresses of `host` (a name, or an IP literal, which is not looked
/// up) that `policy` allows, with `port`; a host with none left fails with
/// [`EgressRefused`] inside the `io::Error`. `fetch`'s resolver and
/// `connect()`'s sockets (`isolane-bindings`' `tcp.rs`) both resolve here.
pub async fn resolve(policy: &EgressPolicy, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
    let mut first_refusal = None;
    let allowed: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| match policy.check(addr.ip()) {
            Ok(()) => true,
            Err(refused) => {
                first_refusal.get_or_insert(refused);
                false
            }
        })
        .collect();
    match (allowed.is_empty(), first_refusal) {
        (true, Some(refused)) => Err(io::Error::new(io::ErrorKind::PermissionDenied, refused)),
        _ => Ok(allowed),
    }
}

/// The outbound client of one engine thread: HTTPS (rustls, HTTP/2 by ALPN)
/// and plain HTTP, connections pooled per thread, every connection through
/// the policy; `B` is the request body's type (the engine's `Body`).
pub type FetchClient<B> = Client<HttpsConnector<HttpConnector<PolicyResolver>>, B>;

/// Why the fetch client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("the extra CA bundle is not valid PEM: {0}")]
    Pem(String),
    #[error("the extra CA bundle holds a certificate rustls refuses: {0}")]
    Certificate(#[source] rustls::Error),
    #[error("no CA certificate in the extra CA bundle")]
    Empty,
}

/// The trusted roots: the public web PKI, plus the node's extra CAs.
pub fn roots(config: &EgressConfig) -> Result<rustls::RootCertStore, TlsConfigError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = &config.extra_ca_pem {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| TlsConfigError::Pem(e.to_string()))?;
            roots.add(cert).map_err(TlsConfigError::Certificate)?;
            added += 1;
        }
        if added == 0 {
            return Err(TlsConfigError::Empty);
        }
    }
    Ok(roots)
}

/// Which HTTP versions a client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// HTTP/1.1 and HTTP/2 (by ALPN over TLS): `fetch`.
    All,
    /// HTTP/1.1 only: a WebSocket handshake, which needs a connection of its
    /// own to upgrade (RFC 6455); over TLS no ALPN is offered (hyper-rustls
    /// sends none for HTTP/1.1 alone), so the server speaks HTTP/1.1.
    Http1,
}

/// Builds one thread's client.
pub fn client<B>(
    policy: Arc<EgressPolicy>,
    roots: rustls::RootCertStore,
    versions: Versions,
) -> FetchClient<B>
where
    B: http_body::Body + Send,
    B::Data: Send,
{
    let mut http = HttpConnector::new_with_resolver(PolicyResolver { policy });
    http.enforce_http(false);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map(|builder| builder.with_root_certificates(roots).with_no_client_auth());
    let tls = match tls {
        Ok(tls) => tls,
        // The ring provider supports the default versions; unreachable in
        // practice, and a client without TLS still serves plain HTTP.
        Err(error) => {
            tracing::error!(%error, "could not configure TLS for fetch");
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        }
    };
    let https = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let https = match versions {
        Versions::All => https.enable_all_versions().wrap_connector(http),
        Versions::Http1 => https.enable_http1().wrap_connector(http),
    };
    Client::builder(TokioExecutor::new()).build(https)
}

/// The policy refusal inside a client error, if that is what it was.
pub fn refusal_in<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e EgressRefused> {
    let mut source: Option<&'e (dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if let Some(refused) = error.downcast_ref::<EgressRefused>() {
            return Some(refused);
        }
        if let Some(io) = error.downcast_ref::<io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(refused) = inner.downcast_ref::<EgressRefused>()
        {
            return Some(refused);
        }
        source = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(policy: &EgressPolicy, ip: &str) -> Option<&'static str> {
        policy
            .check(ip.parse().unwrap())
            .err()
            .map(|r| r.reason.as_str())
    }

    #[test]
    fn every_non_public_class_is_refused_by_default() {
        let policy = EgressPolicy::default();
        for (ip, reason) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("169.254.169.254", "link_local"),
            ("10.0.0.1", "private"),
            ("172.16.5.4", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared_address_space"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("192.0.2.1", "documentation"),
            ("198.18.0.1", "reserved"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link_local"),
            ("fd00::1", "private"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link_local"),
            ("::ffff:10.1.2.3", "private"),
            ("100::1", "reserved"),
            ("64:ff9c::7f00:1", "reserved"),
        ] {
            assert_eq!(refused(&policy, ip), Some(reason), "{ip}");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "::ffff:8.8.8.8",
            // Near the embedding forms, but none of them.
            "2001:1::1",
            "2001:4860:4860::8888",
            "2003::7f00:1",
            "2a00:1450::1:5efe:7f00:1",
        ] {
            assert_eq!(refused(&policy, ip), None, "{ip}");
        }
    }

    /// Every IPv6 form that embeds an IPv4 address other than the mapped
    /// one, written as an attacker would to reach `v4`.
    fn embeddings(v4: Ipv4Addr) -> Vec<String> {
        let [a, b, c, d] = v4.octets();
        let (high, low) = (u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
        vec![
            format!("::{v4}"),
            format!("::ffff:0:{v4}"),
            format!("64:ff9b::{v4}"),
            format!("64:ff9b:1::{v4}"),
            format!("64:ff9b:1:abcd::{v4}"),
            format!("2002:{high:x}:{low:x}::"),
            format!("2002:{high:x}:{low:x}:1::1"),
            // Teredo: the server's address, then the client's, obfuscated.
            format!("2001:0:{high:x}:{low:x}::"),
            format!("2001:0:4136:e378:8000:63bf:{:x}:{:x}", !high, !low),
            format!("2001::{:x}:{:x}", !high, !low),
            format!("fe80::5efe:{v4}"),
            format!("2001:db9::5efe:{v4}"),
            format!("2606:4700::200:5efe:{v4}"),
        ]
    }

    #[test]
    fn every_ipv6_form_embedding_an_ipv4_address_is_refused() {
        let policy = EgressPolicy::default();
        let internal = [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.1.2.3",
        ];
        // A public IPv4 address too: the relay or gateway in between decides
        // where the connection ends, not the address.
        for v4 in internal.iter().chain(&["8.8.8.8"]) {
            for ip in embeddings(v4.parse().unwrap()) {
                let reason = refused(&policy, &ip);
                // A link-local ISATAP address is refused as link-local.
                let expected = if ip.starts_with("fe80:") {
                    "link_local"
                } else {
                    "embedded_ipv4"
                };
                assert_eq!(reason, Some(expected), "{ip} (embeds {v4})");
            }
        }
        // The message names what was refused.
        let error = policy
            .check("2001::80ff:fffe".parse().unwrap())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "fetch to 2001::80ff:fffe refused by the egress policy: IPv6 address embedding \
             an IPv4 address (NAT64, 6to4, Teredo, ISATAP)"
        );
        // A node may open a range, as any other.
        let open = EgressPolicy::new(&EgressConfig {
            allow: vec!["64:ff9b::/96".parse().unwrap()],
            ..EgressConfig::default()
        });
        assert_eq!(refused(&open, "64:ff9b::808:808"), None);
        assert_eq!(refused(&open, "2002:808:808::"), Some("embedded_ipv4"));
    }

    #[test]
    fn the_node_opens_and_closes_destinations() {
        let policy = EgressPolicy::new(&EgressConfig {
            allow: vec!["127.0.0.2/32".parse().unwrap()],
            deny: vec!["8.8.8.0/24".parse().unwrap()],
            ..EgressConfig::default()
        });
        assert_eq!(refused(&policy, "127.0.0.2"), None);
        assert_eq!(refused(&policy, "127.0.0.1"), Some("loopback"));
        assert_eq!(refused(&policy, "8.8.8.8"), Some("denied"));
        assert!(policy.opens_some() && !policy.opens_all());
        let open = EgressPolicy::new(&EgressConfig::open());
        assert_eq!(refused(&open, "127.0.0.1"), None);
        assert_eq!(refused(&open, "::1"), None);
        assert!(open.opens_some() && open.opens_all());
        let closed = EgressPolicy::default();
        assert!(!closed.opens_some() && !closed.opens_all());
    }
}
