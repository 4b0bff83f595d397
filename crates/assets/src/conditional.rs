//! An asset's answer to a GET or HEAD: its default headers (`Content-Type`,
//! `ETag`, `Cache-Control`), `If-None-Match` → 304, and a single `Range` →
//! 206 (or 416).
//!
//! Source: developers.cloudflare.com/workers/static-assets/headers/ "Default
//! headers": `Content-Type` from the extension; `Cache-Control: public,
//! max-age=0, must-revalidate` "when the request does not have an
//! Authorization or Range header"; an `ETag` that is a hash of the file,
//! checked against `If-None-Match`. Ranges follow RFC 9110 §14 (parsed by
//! `http-range-header`).

use std::ops::RangeInclusive;

use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_range_header::{RangeUnsatisfiableError, parse_range_header};

use crate::manifest::Asset;

/// Cloudflare's default `Cache-Control` for assets.
pub const REVALIDATE: &str = "public, max-age=0, must-revalidate";

/// The `Cache-Control` of hashed file names when
/// [`CachePolicy::ImmutableHashedNames`] is chosen.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// How assets are cached by browsers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachePolicy {
    /// As Cloudflare: every asset revalidated on each use.
    #[default]
    Revalidate,
    /// A file whose name carries a content hash (`index-DiwrgTda.js`) is
    /// kept a year, unrevalidated; every other file as `Revalidate`.
    ImmutableHashedNames,
}

/// What of the asset's bytes the answer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// None: a HEAD, a 304 or a 416.
    Empty,
    /// The whole asset.
    Full,
    /// These bytes of it (a 206).
    Range(RangeInclusive<u64>),
}

/// An asset's status, headers and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Body,
    /// The `Content-Length` sent (also on a HEAD), `None` when there is none.
    pub length: Option<u64>,
}

/// The answer for `asset`, found with `status` (200, or 404 for a
/// `404.html`), to a request with this method and these headers.
pub fn answer(
    asset: &Asset,
    path: &str,
    status: StatusCode,
    method: &Method,
    request: &HeaderMap,
    policy: CachePolicy,
) -> Answer {
    let headers = default_headers(asset, path, request, policy);
    let etag = strong_etag(asset);
    let head = method == Method::HEAD;
    if status == StatusCode::OK && none_match(request, &etag) {
        return Answer {
            status: StatusCode::NOT_MODIFIED,
            headers,
            body: Body::Empty,
            length: None,
        };
    }
    let ranged = status == StatusCode::OK && method == Method::GET;
    let range = if ranged {
        wanted_range(request, &etag, asset.size)
    } else {
        Wanted::Whole
    };
    match range {
        Wanted::Whole => whole(asset, status, headers, head),
        Wanted::Part(range) => partial(asset, headers, range),
        Wanted::Unsatisfiable => unsatisfiable(asset, headers),
    }
}

/// `"<hash>"`: a strong validator, as the content hash names the bytes.
pub fn strong_etag(asset: &Asset) -> String {
    format!("\"{}\"", asset.hash)
}

fn default_headers(
    asset: &Asset,
    path: &str,
    request: &HeaderMap,
    policy: CachePolicy,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&asset.content_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&strong_etag(asset)) {
        headers.insert(header::ETAG, value);
    }
    let private =
        request.contains_key(header::AUTHORIZATION) || request.contains_key(header::RANGE);
    if !private {
        let cache = match policy {
            CachePolicy::ImmutableHashedNames if is_hashed_name(path) => IMMUTABLE,
            _ => REVALIDATE,
        };
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    }
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers
}

/// Whether `If-None-Match` names this asset (`*`, or its tag, strong or
/// weak: RFC 9110 §13.1.2 compares weakly).
fn none_match(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag == etag || tag.strip_prefix("W/") == Some(etag))
}

enum Wanted {
    Whole,
    Part(RangeInclusive<u64>),
    Unsatisfiable,
}

/// What a `Range` asks for. A malformed header, several ranges, or an
/// `If-Range` that is not this asset's tag get the whole asset (RFC 9110
/// lets a server ignore `Range`); a range past the end gets a 416.
fn wanted_range(request: &HeaderMap, etag: &str, size: u64) -> Wanted {
    let Some(range) = request.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Wanted::Whole;
    };
    if request
        .get(header::IF_RANGE)
        .is_some_and(|if_range| if_range.to_str().ok() != Some(etag))
    {
        return Wanted::Whole;
    }
    let parsed = match parse_range_header(range) {
        Ok(parsed) if parsed.len() == 1 => parsed,
        Ok(_) | Err(RangeUnsatisfiableError::Invalid(_)) => return Wanted::Whole,
        Err(_) => return Wanted::Unsatisfiable,
    };
    match parsed.validate(size) {
        Ok(ranges) => ranges
            .into_iter()
            .next()
            .map_or(Wanted::Whole, Wanted::Part),
        Err(RangeUnsatisfiableError::Unsatisfiable) => Wanted::Unsatisfiable,
        Err(_) => Wanted::Whole,
    }
}

fn whole(asset: &Asset, status: StatusCode, mut headers: HeaderMap, head: bool) -> Answer {
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(asset.size));
    Answer {
        status,
        headers,
        body: if head { Body::Empty } else { Body::Full },
        length: Some(asset.size),
    }
}

fn partial(asset: &Asset, mut headers: HeaderMap, range: RangeInclusive<u64>) -> Answer {
    let (start, end) = (*range.start(), *range.end());
    let content_range = format!("bytes {start}-{end}/{}", asset.size);
    if let Ok(value) = HeaderValue::from_str(&content_range) {
        headers.insert(header::CONTENT_RANGE, value);
    }
    let length = end - start + 1;
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    Answer {
        status: StatusCode::PARTIAL_CONTENT,
        headers,
        body: Body::Range(range),
        length: Some(length),
    }
}

fn unsatisfiable(asset: &Asset, mut headers: HeaderMap) -> Answer {
    if let Ok(value) = HeaderValue::from_str(&format!("bytes */{}", asset.size)) {
        headers.insert(header::CONTENT_RANGE, value);
    }
    headers.remove(header::CONTENT_TYPE);
    Answer {
        status: StatusCode::RANGE_NOT_SATISFIABLE,
        headers,
        body: Body::Empty,
        length: None,
    }
}

/// Whether a file name carries a content hash as bundlers write it: a last
/// `-` or `.` separated piece of the name (before its extension) of 8 to 64
/// letters, digits, `_` or `-`, with at least two of digits, lower- and
/// upper-case letters (Vite's `index-DiwrgTda.js`, webpack's
/// `main.0a1b2c3d.js`, Astro's `_astro/page.Bx9k2LmQ.css`).
pub fn is_hashed_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    let Some((stem, _ext)) = name.rsplit_once('.') else {
        return false;
    };
    let Some(piece) = stem
        .rsplit(['-', '.'])
        .next()
        .filter(|p| p.len() < stem.len())
    else {
        return false;
    };
    let good = (8..=64).contains(&piece.len())
        && piece
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let classes = [
        piece.bytes().any(|b| b.is_ascii_digit()),
        piece.bytes().any(|b| b.is_ascii_lowercase()),
        piece.bytes().any(|b| b.is_ascii_uppercase()),
    ];
    good && classes.iter().filter(|c| **c).count() >= 2
}
