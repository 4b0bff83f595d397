//! Default headers, `If-None-Match` and `Range` on an asset's answer.
//! Expected values from developers.cloudflare.com/workers/static-assets/headers/
//! ("Default headers") and, for ranges, RFC 9110 §14 and §15.5.17.

#![allow(clippy::unwrap_used)] // test helpers panic on purpose

use http::header::{HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use isolane_assets::conditional::{
    Answer, Body, CachePolicy, IMMUTABLE, REVALIDATE, answer, is_hashed_name, strong_etag,
};
use isolane_assets::{Asset, Manifest};

fn asset() -> Asset {
    let mut m = Manifest::new();
    m.insert_bytes("/app.js", b"0123456789").unwrap();
    m.get("/app.js").unwrap().clone()
}

fn get(headers: &[(&'static str, &str)]) -> Answer {
    ask(Method::GET, StatusCode::OK, headers)
}

fn ask(method: Method, status: StatusCode, headers: &[(&'static str, &str)]) -> Answer {
    let mut request = HeaderMap::new();
    for (name, value) in headers {
        request.append(*name, HeaderValue::from_str(value).unwrap());
    }
    answer(
        &asset(),
        "/app.js",
        status,
        &method,
        &request,
        CachePolicy::Revalidate,
    )
}

fn header<'a>(a: &'a Answer, name: &str) -> Option<&'a str> {
    a.headers.get(name).map(|v| v.to_str().unwrap())
}

#[test]
fn defaults_are_cloudflare_s() {
    let a = get(&[]);
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body, Body::Full);
    // "Cache-Control: public, max-age=0, must-revalidate".
    assert_eq!(header(&a, "cache-control"), Some(REVALIDATE));
    assert_eq!(REVALIDATE, "public, max-age=0, must-revalidate");
    // "Wrangler automatically determines the MIME type of the file".
    assert_eq!(
        header(&a, "content-type"),
        Some("text/javascript; charset=utf-8")
    );
    // "Its value is a hash of the static asset file": strong and quoted.
    let etag = header(&a, "etag").unwrap();
    assert_eq!(etag, strong_etag(&asset()));
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 66);
    assert_eq!(header(&a, "content-length"), Some("10"));
}

#[test]
fn no_cache_control_with_authorization_or_range() {
    // "Sent when the request does not have an Authorization or Range header".
    assert_eq!(
        header(&get(&[("authorization", "Bearer x")]), "cache-control"),
        None
    );
    assert_eq!(
        header(&get(&[("range", "bytes=0-1")]), "cache-control"),
        None
    );
}

#[test]
fn a_matching_if_none_match_is_304() {
    // "browsers can use this in subsequent requests with an If-None-Match
    // header to check for freshness".
    let etag = strong_etag(&asset());
    let weak = format!("W/{etag}");
    let listed = format!("\"other\", {etag}");
    for value in [etag.as_str(), weak.as_str(), listed.as_str(), "*"] {
        let a = get(&[("if-none-match", value)]);
        assert_eq!(a.status, StatusCode::NOT_MODIFIED, "{value}");
        assert_eq!(a.body, Body::Empty);
        assert_eq!(header(&a, "etag"), Some(etag.as_str()));
    }
    assert_eq!(
        get(&[("if-none-match", "\"other\"")]).status,
        StatusCode::OK
    );
}

#[test]
fn a_404_page_is_never_304_nor_ranged() {
    let etag = strong_etag(&asset());
    let a = ask(
        Method::GET,
        StatusCode::NOT_FOUND,
        &[("if-none-match", &etag), ("range", "bytes=0-1")],
    );
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.body, Body::Full);
}

#[test]
fn a_single_range_is_206() {
    let a = get(&[("range", "bytes=2-5")]);
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.body, Body::Range(2..=5));
    assert_eq!(header(&a, "content-range"), Some("bytes 2-5/10"));
    assert_eq!(header(&a, "content-length"), Some("4"));
    assert_eq!(get(&[("range", "bytes=-3")]).body, Body::Range(7..=9));
    assert_eq!(get(&[("range", "bytes=8-")]).body, Body::Range(8..=9));
    // A last byte past the end is cut to the end (RFC 9110 §14.1.1).
    assert_eq!(get(&[("range", "bytes=8-100")]).body, Body::Range(8..=9));
}

#[test]
fn a_range_past_the_end_is_416() {
    let a = get(&[("range", "bytes=10-20")]);
    assert_eq!(a.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(a.body, Body::Empty);
    assert_eq!(header(&a, "content-range"), Some("bytes */10"));
}

#[test]
fn other_ranges_get_the_whole_asset() {
    // RFC 9110 §14.2: a server may ignore Range; this one does for
    // several ranges, malformed ones, HEAD, and a stale If-Range.
    for range in ["bytes=0-1,4-5", "items=0-1", "bytes=x-y"] {
        let a = get(&[("range", range)]);
        assert_eq!((a.status, a.body), (StatusCode::OK, Body::Full), "{range}");
    }
    let head = ask(Method::HEAD, StatusCode::OK, &[("range", "bytes=0-1")]);
    assert_eq!((head.status, head.body), (StatusCode::OK, Body::Empty));
    let stale = get(&[("range", "bytes=0-1"), ("if-range", "\"old\"")]);
    assert_eq!(stale.status, StatusCode::OK);
    let etag = strong_etag(&asset());
    let fresh = get(&[("range", "bytes=0-1"), ("if-range", &etag)]);
    assert_eq!(fresh.status, StatusCode::PARTIAL_CONTENT);
}

#[test]
fn head_has_the_headers_and_no_body() {
    let a = ask(Method::HEAD, StatusCode::OK, &[]);
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body, Body::Empty);
    assert_eq!(header(&a, "content-length"), Some("10"));
}

#[test]
fn hashed_names_are_immutable_only_when_chosen() {
    let mut m = Manifest::new();
    m.insert_bytes("/assets/index-DiwrgTda.js", b"x").unwrap();
    let hashed = m.get("/assets/index-DiwrgTda.js").unwrap();
    let request = HeaderMap::new();
    let cache = |path: &str, policy| {
        let a = answer(hashed, path, StatusCode::OK, &Method::GET, &request, policy);
        a.headers["cache-control"].to_str().unwrap().to_owned()
    };
    let immutable = CachePolicy::ImmutableHashedNames;
    assert_eq!(cache("/assets/index-DiwrgTda.js", immutable), IMMUTABLE);
    assert_eq!(cache("/about.html", immutable), REVALIDATE);
    assert_eq!(
        cache("/assets/index-DiwrgTda.js", CachePolicy::Revalidate),
        REVALIDATE
    );
}

#[test]
fn hashed_names_are_told_from_plain_ones() {
    for hashed in [
        "/assets/index-DiwrgTda.js",
        "/static/js/main.0a1b2c3d.js",
        "/_astro/page.Bx9k2LmQ.css",
        "/_next/static/chunks/webpack-59c5c889f52620d6.js",
    ] {
        assert!(is_hashed_name(hashed), "{hashed}");
    }
    for plain in [
        "/index.html",
        "/favicon.ico",
        "/my-component.js",
        "/jquery-3.7.1.min.js",
        "/bootstrap.css",
        "/LICENSE",
        "/assets/",
    ] {
        assert!(!is_hashed_name(plain), "{plain}");
    }
}
