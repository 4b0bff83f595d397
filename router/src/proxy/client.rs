//! The client at the other end of a connection, as each of its requests
//! tells the Worker about it: its address for `x-forwarded-for`, and whether
//! it is a trusted proxy whose own forwarding headers are kept, and whether
//! it came over the HTTPS ingress (the URL the Worker sees says `https`). Worked out
//! once per connection ([`crate::Proxy::client`]), not once per request.

use std::net::IpAddr;

use http::{HeaderMap, HeaderValue};

/// A connection's client.
#[derive(Clone, Debug)]
pub struct Client {
    /// The address as `x-forwarded-for` carries it.
    forwarded: HeaderValue,
    /// Whether it is a trusted proxy (`--trusted-proxies`).
    trusted: bool,
    /// Whether the connection is TLS the router terminated.
    https: bool,
}

impl Client {
    /// The client at `ip`; `trusted`: whether its forwarding headers are kept.
    pub fn new(ip: IpAddr, trusted: bool) -> Self {
        let forwarded = HeaderValue::from_str(&ip.to_string())
            // An address's text is digits, dots, colons and hex letters.
            .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        Self {
            forwarded,
            trusted,
            https: false,
        }
    }

    /// The same, its connection TLS the router terminated when `https`.
    pub fn over_https(mut self, https: bool) -> Self {
        self.https = https;
        self
    }

    /// Whether the connection is TLS the router terminated.
    pub fn https(&self) -> bool {
        self.https
    }

    /// The address as `x-forwarded-for` carries it.
    pub fn forwarded(&self) -> &HeaderValue {
        &self.forwarded
    }

    /// Whether the client is a trusted proxy.
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// Whether the request with `headers` came over HTTPS: TLS the router
    /// terminated, or before it, as a trusted proxy (a load balancer, a
    /// Gateway) says in `x-forwarded-proto`: `https`, or `wss` for a
    /// WebSocket's upgrade (Traefik's word for it). A client's own word is
    /// not taken.
    pub fn came_over_https(&self, headers: &HeaderMap) -> bool {
        let tls_proto = |v: &HeaderValue| {
            let v = v.as_bytes();
            v.eq_ignore_ascii_case(b"https") || v.eq_ignore_ascii_case(b"wss")
        };
        self.https || (self.trusted && headers.get("x-forwarded-proto").is_some_and(tls_proto))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_families_are_written_as_forwarded_for_carries_them() {
        let v4 = Client::new("192.0.2.7".parse().unwrap(), false);
        assert_eq!(v4.forwarded(), "192.0.2.7");
        assert!(!v4.trusted());
        let v6 = Client::new("2001:db8::1".parse().unwrap(), true);
        assert_eq!(v6.forwarded(), "2001:db8::1");
        assert!(v6.trusted());
    }

    #[test]
    fn https_is_tls_here_or_a_trusted_proxys_forwarded_proto() {
        let ip = "192.0.2.7".parse().unwrap();
        let mut forwarded = HeaderMap::new();
        forwarded.insert("x-forwarded-proto", HeaderValue::from_static("HTTPS"));
        let plain = HeaderMap::new();
        assert!(Client::new(ip, true).came_over_https(&forwarded));
        assert!(!Client::new(ip, true).came_over_https(&plain));
        let mut upgrade = HeaderMap::new();
        upgrade.insert("x-forwarded-proto", HeaderValue::from_static("wss"));
        assert!(Client::new(ip, true).came_over_https(&upgrade));
        assert!(!Client::new(ip, false).came_over_https(&upgrade));
        upgrade.insert("x-forwarded-proto", HeaderValue::from_static("ws"));
        assert!(!Client::new(ip, true).came_over_https(&upgrade));
        assert!(!Client::new(ip, false).came_over_https(&forwarded));
        assert!(
            Client::new(ip, false)
                .over_https(true)
                .came_over_https(&plain)
        );
    }
}
