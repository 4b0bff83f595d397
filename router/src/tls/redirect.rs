//! The optional HTTP → HTTPS redirect (`--redirect-to-https`): a plain
//! request for a host that has a certificate is answered 308 with the same
//! path and query over HTTPS, so the method and body are kept on the way.
//! ACME HTTP-01 challenges stay on plain HTTP, as the protocol needs; a
//! request a trusted proxy already took over HTTPS is not asked here
//! (`Door::answer` in `server.rs`).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};

use super::SniResolver;
use crate::answer::{ResponseBody, full_body};
use crate::routes::normalize_host;

/// Paths never redirected: an ACME server asks for these over plain HTTP.
pub const ACME_CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// Redirects plain requests for the hosts `resolver` has certificates for.
#[derive(Debug, Clone)]
pub struct Redirect {
    resolver: Arc<SniResolver>,
    /// `:port` after the host in `Location`, empty for 443.
    port: String,
}

impl Redirect {
    /// Redirects to HTTPS on `https_port` (the port clients reach it on).
    pub fn new(resolver: Arc<SniResolver>, https_port: u16) -> Self {
        let port = if https_port == 443 {
            String::new()
        } else {
            format!(":{https_port}")
        };
        Self { resolver, port }
    }

    /// The redirect for `request`, or `None` when it is served as it is:
    /// its host has no certificate, or it is an ACME challenge.
    pub fn answer<B>(&self, request: &Request<B>) -> Option<Response<ResponseBody>> {
        let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
        if request.uri().path().starts_with(ACME_CHALLENGE_PREFIX) {
            return None;
        }
        let host = match request.uri().authority() {
            Some(authority) => authority.host(),
            None => request.headers().get(header::HOST)?.to_str().ok()?,
        };
        let host = normalize_host(host);
        if !self.resolver.has_certificate(&host) {
            return None;
        }
        let location = format!("https://{host}{}{path}", self.port);
        let location = HeaderValue::from_str(&location).ok()?;
        let mut response = Response::new(full_body(Bytes::new()));
        *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
        response.headers_mut().insert(header::LOCATION, location);
        Some(response)
    }
}
