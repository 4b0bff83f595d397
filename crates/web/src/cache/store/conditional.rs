//! How a cache hit answers the request that matched it: `If-None-Match`
//! (or, without it, `If-Modified-Since`) that the stored response satisfies
//! gives 304 with no body; a single satisfiable byte `Range` gives 206 with
//! that slice, an unsatisfiable one 416; anything else the whole response.
//! Headers are parsed by the `headers` crate.

use bytes::Bytes;
use headers::{
    ContentRange, ETag, HeaderMapExt, IfModifiedSince, IfNoneMatch, LastModified, Range,
};
use http::header::{CONTENT_LENGTH, CONTENT_RANGE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::CacheRequest;

/// What `cache.match` returns: a response to build in JavaScript.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) status_text: String,
    pub(crate) headers: HeaderMap,
    /// `None`: no body (304).
    pub(crate) body: Option<Bytes>,
}

/// Marks a response served from the cache, as Cloudflare does.
const CACHE_STATUS: &str = "cf-cache-status";

pub(super) fn answer(
    status: StatusCode,
    status_text: &str,
    headers: &HeaderMap,
    body: &Bytes,
    request: &CacheRequest,
) -> Answer {
    let mut out = headers.clone();
    out.insert(CACHE_STATUS, HeaderValue::from_static("HIT"));
    if not_modified(headers, &request.headers) {
        out.remove(CONTENT_LENGTH);
        return Answer {
            status: StatusCode::NOT_MODIFIED,
            status_text: String::new(),
            headers: out,
            body: None,
        };
    }
    if status == StatusCode::OK
        && let Some(range) = request.headers.typed_get::<Range>()
    {
        match ranged(&range, out, body) {
            Ok(answer) => return answer,
            Err(whole) => out = whole,
        }
    }
    out.remove(CONTENT_RANGE);
    Answer {
        status,
        status_text: status_text.to_owned(),
        headers: out,
        body: Some(body.clone()),
    }
}

/// The answer to a `Range` request: 416 when no range can be served, 206
/// for one range; `Err(out)` (the headers back) when the whole response is
/// the answer (several ranges: a server may send the full representation).
fn ranged(range: &Range, mut out: HeaderMap, body: &Bytes) -> Result<Answer, HeaderMap> {
    let len = body.len() as u64;
    let ranges: Vec<(u64, u64)> = range
        .satisfiable_ranges(len)
        .filter_map(|(start, end)| bounds(start, end, len))
        .collect();
    match ranges.as_slice() {
        [] => {
            out.typed_insert(ContentRange::unsatisfied_bytes(len));
            out.remove(CONTENT_LENGTH);
            Ok(Answer {
                status: StatusCode::RANGE_NOT_SATISFIABLE,
                status_text: String::new(),
                headers: out,
                body: Some(Bytes::new()),
            })
        }
        [(from, to)] => {
            let Ok(content_range) = ContentRange::bytes(*from..=*to, len) else {
                return Err(out);
            };
            out.typed_insert(content_range);
            out.remove(CONTENT_LENGTH);
            let (from, to) = (*from as usize, *to as usize);
            Ok(Answer {
                status: StatusCode::PARTIAL_CONTENT,
                status_text: String::new(),
                headers: out,
                body: Some(body.slice(from..=to)),
            })
        }
        _ => Err(out),
    }
}

/// Whether the request's validators say the client's copy is current.
fn not_modified(stored: &HeaderMap, request: &HeaderMap) -> bool {
    if let Some(if_none_match) = request.typed_get::<IfNoneMatch>() {
        return match stored.typed_get::<ETag>() {
            Some(etag) => !if_none_match.precondition_passes(&etag),
            None => false,
        };
    }
    match (
        request.typed_get::<IfModifiedSince>(),
        stored.typed_get::<LastModified>(),
    ) {
        (Some(since), Some(modified)) => !since.is_modified(modified.into()),
        _ => false,
    }
}

/// A range's first and last byte within `len` bytes.
fn bounds(start: std::ops::Bound<u64>, end: std::ops::Bound<u64>, len: u64) -> Option<(u64, u64)> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    if len == 0 {
        return None;
    }
    let from = match start {
        Included(n) => n,
        Excluded(n) => n.checked_add(1)?,
        Unbounded => 0,
    };
    let to = match end {
        Included(n) => n.min(len - 1),
        Excluded(n) => n.checked_sub(1)?.min(len - 1),
        Unbounded => len - 1,
    };
    (from <= to).then_some((from, to))
}
