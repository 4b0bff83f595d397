//! What `cache.put` stores and for how long, as Cloudflare documents its
//! Cache API: RFC 9111 shared-cache rules (`Cache-Control`, `Expires`,
//! `Vary`, `Authorization`) decided by `http-cache-semantics`; responses
//! with `Set-Cookie` are never stored unless `Cache-Control:
//! private=Set-Cookie` says to store them without it; a response with
//! neither `Cache-Control` nor `Expires` lives for Cloudflare's default edge
//! TTL of its status.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::{AUTHORIZATION, CACHE_CONTROL, EXPIRES, HOST, PRAGMA, SET_COOKIE, VARY};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_cache_semantics::{CacheOptions, CachePolicy};

use super::{CacheRequest, CacheResponse};

/// Why a response was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error(
        "the response may not be stored by a shared cache (no-store, private, or not cacheable)"
    )]
    NotStorable,
    #[error("the response sets a cookie (Cache-Control: private=Set-Cookie stores it without)")]
    SetsCookie,
    #[error("the response is already stale")]
    Stale,
    #[error("the response is larger than the cache may hold for one namespace")]
    TooLarge,
}

/// A response admitted to the store.
pub(super) struct Admitted {
    pub(super) policy: CachePolicy,
    pub(super) status: StatusCode,
    pub(super) status_text: String,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    pub(super) expires: SystemTime,
    /// Bytes the policy holds (headers and URL).
    pub(super) in_policy: usize,
}

/// What an entry costs beyond the bytes it names (the policy, the maps'
/// slots, allocation rounding), so that empty entries count too.
pub(super) const ENTRY_OVERHEAD: usize = 512;

impl Admitted {
    /// Bytes this entry holds: its body, its response headers, what the
    /// policy keeps (its own copy of the response headers, the request
    /// headers it reads and the URL), its status text, and
    /// [`ENTRY_OVERHEAD`].
    pub(super) fn size(&self) -> usize {
        self.body.len()
            + header_bytes(&self.headers)
            + self.in_policy
            + self.status_text.len()
            + ENTRY_OVERHEAD
    }
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum()
}

/// Freshness by RFC 9111 only: no heuristic from `Last-Modified` (a
/// response without explicit freshness gets Cloudflare's default TTL).
fn options() -> CacheOptions {
    CacheOptions {
        shared: true,
        cache_heuristic: 0.0,
        ..CacheOptions::default()
    }
}

/// The request a policy is made with: its URL and the headers the policy
/// reads (`Cache-Control`, `Pragma`, `Authorization` and those the response
/// `Vary`s on); the rest would only take room in the store.
fn kept_request(request: &CacheRequest, response: &HeaderMap) -> http::Request<()> {
    let varied: Vec<String> = response
        .get_all(VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let mut probe = http::Request::new(());
    *probe.uri_mut() = request.uri.clone();
    let headers = probe.headers_mut();
    for (name, value) in &request.headers {
        let kept = *name == CACHE_CONTROL
            || *name == PRAGMA
            || *name == AUTHORIZATION
            || varied.iter().any(|v| v == name.as_str());
        if kept && *name != HOST {
            headers.append(name.clone(), value.clone());
        }
    }
    probe
}

/// The request a policy is probed with: its URL and headers, without
/// `Host` (the cache key is the URL, whatever Host said).
pub(super) fn probe(request: &CacheRequest) -> http::Request<()> {
    let mut probe = http::Request::new(());
    *probe.uri_mut() = request.uri.clone();
    let mut headers = request.headers.clone();
    headers.remove(HOST);
    *probe.headers_mut() = headers;
    probe
}

/// Decides whether (and until when) `response` is stored for `request`.
pub(super) fn admit(
    request: &CacheRequest,
    response: CacheResponse,
    now: SystemTime,
) -> Result<Admitted, Refusal> {
    let CacheResponse {
        status,
        status_text,
        mut headers,
        body,
    } = response;
    if headers.contains_key(SET_COOKIE) {
        if !private_set_cookie(&headers) {
            return Err(Refusal::SetsCookie);
        }
        headers.remove(SET_COOKIE);
    }
    // For the decision, a `private=Set-Cookie` only qualified the cookie,
    // which is gone now; without `Cache-Control` or `Expires` the response
    // is judged as if it said `max-age` of Cloudflare's default TTL.
    let mut judged = without_private_set_cookie(&headers);
    if !headers.contains_key(CACHE_CONTROL) && !headers.contains_key(EXPIRES) {
        let ttl = default_ttl(status);
        if ttl.is_zero() {
            return Err(Refusal::NotStorable);
        }
        if let Ok(value) = HeaderValue::from_str(&format!("max-age={}", ttl.as_secs())) {
            judged.insert(CACHE_CONTROL, value);
        }
    }
    let mut parts = http::Response::new(());
    *parts.status_mut() = status;
    *parts.headers_mut() = judged;
    let kept = kept_request(request, &headers);
    let in_policy =
        header_bytes(kept.headers()) + kept.uri().to_string().len() + header_bytes(parts.headers());
    let policy = CachePolicy::new_options(&kept, &parts, now, options());
    if !policy.is_storable() {
        return Err(Refusal::NotStorable);
    }
    let ttl = policy.time_to_live(now);
    if ttl.is_zero() {
        return Err(Refusal::Stale);
    }
    Ok(Admitted {
        policy,
        status,
        status_text,
        headers,
        body,
        expires: now + ttl,
        in_policy,
    })
}

/// Cloudflare's default edge TTL for a status without `Cache-Control` or
/// `Expires` (developers.cloudflare.com/cache/how-to/configure-cache-status-code/#edge-ttl).
fn default_ttl(status: StatusCode) -> Duration {
    const MINUTE: u64 = 60;
    match status.as_u16() {
        200 | 206 | 301 => Duration::from_secs(120 * MINUTE),
        302 | 303 => Duration::from_secs(20 * MINUTE),
        404 | 410 => Duration::from_secs(3 * MINUTE),
        _ => Duration::ZERO,
    }
}

/// Every `Cache-Control` directive, lower-cased, with its value unquoted.
fn directives(headers: &HeaderMap) -> impl Iterator<Item = (String, Option<String>)> + '_ {
    headers
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|d| {
            let d = d.trim();
            match d.split_once('=') {
                Some((name, value)) => (
                    name.trim().to_ascii_lowercase(),
                    Some(value.trim().trim_matches('"').to_ascii_lowercase()),
                ),
                None => (d.to_ascii_lowercase(), None),
            }
        })
}

fn names_set_cookie(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.split(',').any(|f| f.trim() == "set-cookie"))
}

/// `Cache-Control: private=Set-Cookie` (or `no-cache=Set-Cookie`): store
/// the response without its cookies.
fn private_set_cookie(headers: &HeaderMap) -> bool {
    directives(headers).any(|(name, value)| {
        (name == "private" || name == "no-cache") && names_set_cookie(value.as_deref())
    })
}

/// `headers` with a `private=Set-Cookie`/`no-cache=Set-Cookie` directive
/// dropped from `Cache-Control` (it said nothing about the rest).
fn without_private_set_cookie(headers: &HeaderMap) -> HeaderMap {
    if !private_set_cookie(headers) {
        return headers.clone();
    }
    let kept: Vec<String> = headers
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|d| {
            let lower = d.to_ascii_lowercase();
            let field_qualified = lower.starts_with("private=") || lower.starts_with("no-cache=");
            !(field_qualified && lower.contains("set-cookie"))
        })
        .map(str::to_owned)
        .collect();
    let mut out = headers.clone();
    out.remove(CACHE_CONTROL);
    if !kept.is_empty()
        && let Ok(value) = HeaderValue::from_str(&kept.join(", "))
    {
        out.insert(CACHE_CONTROL, value);
    }
    out
}
