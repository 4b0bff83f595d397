//! What every answer of the router is made of: the response body type, and
//! the `x-isolane-*` headers it sets (and the loop guard it reads). The
//! proxy and its errors both build answers from these; neither owns them.
//! Also which of those names a client may send ([`strip_platform_headers`]).

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

/// A boxed error from a body or a transport.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The node's human-readable detail for a refusal, when it gave one.
pub use isolane_worker::headers::DETAIL as DETAIL_HEADER;
/// How many times a request has passed through a Worker's `fetch` on its
/// way here (the engine sets it on every outbound fetch).
pub use isolane_worker::headers::HOPS as HOPS_HEADER;
/// The node that served the request.
pub use isolane_worker::headers::NODE as NODE_HEADER;
/// Why the router answered as it did: a bounded label (`overloaded`, `no_route`, …).
pub use isolane_worker::headers::REASON as REASON_HEADER;
/// The Worker revision that served the request; on a request, the revision
/// it asks for, when the Worker allows overrides (`split.rs`).
pub use isolane_worker::headers::REVISION as REVISION_HEADER;
/// Requests that looped through Workers more often than this are refused
/// (508): a Worker fetching itself through the router cannot fan out
/// without bound.
pub const MAX_HOPS: u32 = 4;
/// The request id: the client's, or one the router generated.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The names above as header names, for inserting and looking up: a `&str`
/// name is parsed on every use (and copied into a new allocation on every
/// insert), these are not.
pub(crate) mod name {
    use http::HeaderName;

    /// [`super::NODE_HEADER`].
    pub const NODE: HeaderName = HeaderName::from_static(super::NODE_HEADER);
    /// [`super::REVISION_HEADER`].
    pub const REVISION: HeaderName = HeaderName::from_static(super::REVISION_HEADER);
    /// [`super::REQUEST_ID_HEADER`].
    pub const REQUEST_ID: HeaderName = HeaderName::from_static(super::REQUEST_ID_HEADER);
    /// [`super::HOPS_HEADER`].
    pub const HOPS: HeaderName = HeaderName::from_static(super::HOPS_HEADER);
    /// `x-forwarded-for`.
    pub const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
}

/// The platform's header namespace: a client's request keeps no header
/// whose name starts with it, but for [`FROM_CLIENTS`].
pub const PLATFORM_PREFIX: &str = "x-isolane-";

/// The `x-isolane-*` request headers that are a client's to send: the hop
/// count (a Worker's `fetch` through the router carries it, the engine sets
/// it; the loop guard reads it, and the node reads it to count the next hop)
/// and the revision a client asks for (read by `split.rs`). A forged one
/// hurts only its sender (docs/architecture.md, gates 2 and 4).
pub const FROM_CLIENTS: [http::HeaderName; 2] = [name::HOPS, name::REVISION];

/// Removes from a client's request every header in the platform's namespace
/// ([`PLATFORM_PREFIX`]) but [`FROM_CLIENTS`]: a Worker, or the platform's
/// own code, can take any other `x-isolane-*` request header as the
/// platform's. Names are lower case (`http::HeaderName`), whatever case the
/// client wrote them in. A request with none (nearly all) is only looked
/// over, not changed.
pub fn strip_platform_headers(headers: &mut http::HeaderMap) {
    let forged = |name: &http::HeaderName| {
        name.as_str().starts_with(PLATFORM_PREFIX) && !FROM_CLIENTS.contains(name)
    };
    if !headers.keys().any(forged) {
        return;
    }
    let names: Vec<http::HeaderName> = headers.keys().filter(|n| forged(n)).cloned().collect();
    for name in names {
        headers.remove(name);
    }
}

/// The response body type of the router.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// A complete, in-memory response body.
pub fn full_body(bytes: Bytes) -> ResponseBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_platform_headers_a_client_may_send_are_kept() {
        let mut headers = http::HeaderMap::new();
        for (name, value) in [
            ("x-isolane-worker", "other/thing"),
            ("X-Isolane-Scheduled", "1"),
            ("x-isolane-node", "forged"),
            ("x-isolane-hops", "2"),
            ("x-isolane-revision", "canary"),
            ("x-isolanes", "not ours"),
            ("x-user", "kept"),
        ] {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_static(value),
            );
        }
        headers.append("x-isolane-worker", http::HeaderValue::from_static("again"));
        strip_platform_headers(&mut headers);
        let mut kept: Vec<&str> = headers.keys().map(http::HeaderName::as_str).collect();
        kept.sort_unstable();
        assert_eq!(
            kept,
            [
                "x-isolane-hops",
                "x-isolane-revision",
                "x-isolanes",
                "x-user"
            ]
        );
    }
}
