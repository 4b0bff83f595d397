//! The store alone: storability, freshness, Vary, conditional and range
//! answers, namespaces and the byte bounds. (`tests/web/cache.rs` runs
//! the Cache API from workers.)

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::*;

fn key(namespace: &str, url: &str) -> CacheKey {
    CacheKey {
        namespace: namespace.into(),
        cache: None,
        url: url.into(),
    }
}

fn request(url: &str, headers: &[(&'static str, &str)]) -> CacheRequest {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, HeaderValue::from_str(value).unwrap());
    }
    CacheRequest {
        uri: url.parse().unwrap(),
        headers: map,
    }
}

fn response(status: u16, headers: &[(&'static str, &str)], body: &str) -> CacheResponse {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, HeaderValue::from_str(value).unwrap());
    }
    CacheResponse {
        status: StatusCode::from_u16(status).unwrap(),
        status_text: String::new(),
        headers: map,
        body: Bytes::from(body.to_owned()),
    }
}

type Headers<'a> = &'a [(&'static str, &'a str)];

const URL: &str = "https://example.com/a";

fn cache() -> HttpCache {
    HttpCache::new(CacheConfig::default())
}

#[test]
fn stored_until_max_age_then_gone() {
    let cache = cache();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let put = cache.put(
        key("a", URL),
        &request(URL, &[]),
        response(200, &[("cache-control", "max-age=60")], "hello"),
        now,
    );
    assert_eq!(put, Ok(()));
    let hit = cache
        .lookup(
            &key("a", URL),
            &request(URL, &[]),
            now + Duration::from_secs(59),
        )
        .unwrap();
    assert_eq!(hit.status, StatusCode::OK);
    assert_eq!(hit.body.unwrap(), "hello");
    assert_eq!(hit.headers["cf-cache-status"], "HIT");
    assert!(
        cache
            .lookup(
                &key("a", URL),
                &request(URL, &[]),
                now + Duration::from_secs(61)
            )
            .is_none()
    );
    // The expired entry was dropped, its bytes released.
    assert_eq!(cache.usage("a"), (0, 0));
}

#[test]
fn refusals_follow_the_shared_cache_rules() {
    let cache = cache();
    let now = SystemTime::now();
    let cases: [(Headers, u16, Refusal); 5] = [
        (&[("cache-control", "no-store")], 200, Refusal::NotStorable),
        (
            &[("cache-control", "private, max-age=60")],
            200,
            Refusal::NotStorable,
        ),
        (
            &[("set-cookie", "a=1"), ("cache-control", "max-age=60")],
            200,
            Refusal::SetsCookie,
        ),
        (&[("cache-control", "max-age=0")], 200, Refusal::Stale),
        // No Cache-Control or Expires: Cloudflare's default TTL, none for 500.
        (&[], 500, Refusal::NotStorable),
    ];
    for (headers, status, refusal) in cases {
        let put = cache.put(
            key("a", URL),
            &request(URL, &[]),
            response(status, headers, "x"),
            now,
        );
        assert_eq!(put, Err(refusal), "{headers:?} {status}");
    }
    assert!(
        cache
            .lookup(&key("a", URL), &request(URL, &[]), now)
            .is_none()
    );
}

#[test]
fn private_set_cookie_stores_without_the_cookie() {
    let cache = cache();
    let now = SystemTime::now();
    let put = cache.put(
        key("a", URL),
        &request(URL, &[]),
        response(
            200,
            &[
                ("set-cookie", "session=1"),
                ("cache-control", "private=Set-Cookie, max-age=60"),
            ],
            "x",
        ),
        now,
    );
    assert_eq!(put, Ok(()));
    let hit = cache
        .lookup(&key("a", URL), &request(URL, &[]), now)
        .unwrap();
    assert!(!hit.headers.contains_key("set-cookie"));
}

#[test]
fn no_cache_control_gets_the_default_edge_ttl_by_status() {
    let cache = cache();
    let now = SystemTime::now();
    for (status, ttl_minutes) in [(200, 120), (301, 120), (302, 20), (404, 3)] {
        let url = format!("https://example.com/{status}");
        assert_eq!(
            cache.put(
                key("a", &url),
                &request(&url, &[]),
                response(status, &[], "x"),
                now
            ),
            Ok(())
        );
        let before = now + Duration::from_secs(ttl_minutes * 60 - 1);
        let after = now + Duration::from_secs(ttl_minutes * 60 + 1);
        assert!(
            cache
                .lookup(&key("a", &url), &request(&url, &[]), before)
                .is_some()
        );
        assert!(
            cache
                .lookup(&key("a", &url), &request(&url, &[]), after)
                .is_none()
        );
    }
}

#[test]
fn vary_keeps_one_variant_per_header_value() {
    let cache = cache();
    let now = SystemTime::now();
    for lang in ["en", "fr"] {
        let put = cache.put(
            key("a", URL),
            &request(URL, &[("accept-language", lang)]),
            response(
                200,
                &[("cache-control", "max-age=60"), ("vary", "Accept-Language")],
                lang,
            ),
            now,
        );
        assert_eq!(put, Ok(()));
    }
    for lang in ["en", "fr"] {
        let hit = cache
            .lookup(
                &key("a", URL),
                &request(URL, &[("accept-language", lang)]),
                now,
            )
            .unwrap();
        assert_eq!(hit.body.unwrap(), lang);
    }
    assert!(
        cache
            .lookup(
                &key("a", URL),
                &request(URL, &[("accept-language", "de")]),
                now
            )
            .is_none()
    );
    // Host is not part of the key.
    assert!(
        cache
            .lookup(
                &key("a", URL),
                &request(URL, &[("accept-language", "en"), ("host", "other")]),
                now
            )
            .is_some()
    );
    assert!(cache.delete(&key("a", URL)));
    assert!(!cache.delete(&key("a", URL)));
}

#[test]
fn conditional_and_range_requests() {
    let cache = cache();
    let now = SystemTime::now();
    let headers = [
        ("cache-control", "max-age=60"),
        ("etag", "\"v1\""),
        ("last-modified", "Sun, 01 Nov 2026 00:00:00 GMT"),
    ];
    assert_eq!(
        cache.put(
            key("a", URL),
            &request(URL, &[]),
            response(200, &headers, "0123456789"),
            now
        ),
        Ok(())
    );
    let ask =
        |h: &[(&'static str, &str)]| cache.lookup(&key("a", URL), &request(URL, h), now).unwrap();
    let hit = ask(&[("if-none-match", "\"v1\"")]);
    assert_eq!(hit.status, StatusCode::NOT_MODIFIED);
    assert!(hit.body.is_none());
    assert_eq!(ask(&[("if-none-match", "\"v2\"")]).status, StatusCode::OK);
    assert_eq!(
        ask(&[("if-modified-since", "Mon, 02 Nov 2026 00:00:00 GMT")]).status,
        StatusCode::NOT_MODIFIED
    );
    assert_eq!(
        ask(&[("if-modified-since", "Sat, 31 Oct 2026 00:00:00 GMT")]).status,
        StatusCode::OK
    );
    let part = ask(&[("range", "bytes=2-4")]);
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.body.unwrap(), "234");
    assert_eq!(part.headers["content-range"], "bytes 2-4/10");
    let suffix = ask(&[("range", "bytes=-3")]);
    assert_eq!(suffix.body.unwrap(), "789");
    assert_eq!(
        ask(&[("range", "bytes=20-")]).status,
        StatusCode::RANGE_NOT_SATISFIABLE
    );
}

#[test]
fn namespaces_never_see_each_other() {
    let cache = cache();
    let now = SystemTime::now();
    let ok = response(200, &[("cache-control", "max-age=60")], "mine");
    assert_eq!(
        cache.put(key("a", URL), &request(URL, &[]), ok, now),
        Ok(())
    );
    assert!(
        cache
            .lookup(&key("b", URL), &request(URL, &[]), now)
            .is_none()
    );
    assert!(!cache.delete(&key("b", URL)));
    assert!(
        cache
            .lookup(&key("a", URL), &request(URL, &[]), now)
            .is_some()
    );
}

#[test]
fn one_namespace_filling_its_share_evicts_only_its_own() {
    let cache = HttpCache::new(CacheConfig {
        capacity_bytes: 64 << 10,
        namespace_bytes: 16 << 10,
        ..CacheConfig::default()
    });
    let now = SystemTime::now();
    let body = "x".repeat(1 << 10);
    let put = |ns: &str, i: usize| {
        let url = format!("https://example.com/{i}");
        cache.put(
            key(ns, &url),
            &request(&url, &[]),
            response(200, &[("cache-control", "max-age=60")], &body),
            now,
        )
    };
    for i in 0..8 {
        assert_eq!(put("victim", i), Ok(()));
    }
    for i in 0..1000 {
        assert_eq!(put("hog", i), Ok(()));
    }
    let (total, hog) = cache.usage("hog");
    assert!(hog <= 16 << 10, "{hog}");
    assert!(total <= 64 << 10, "{total}");
    for i in 0..8 {
        let url = format!("https://example.com/{i}");
        assert!(
            cache
                .lookup(&key("victim", &url), &request(&url, &[]), now)
                .is_some()
        );
    }
    // The hog's newest entries are the ones kept.
    let newest = "https://example.com/999";
    assert!(
        cache
            .lookup(&key("hog", newest), &request(newest, &[]), now)
            .is_some()
    );
    // One entry larger than a namespace's share is refused.
    let huge = response(
        200,
        &[("cache-control", "max-age=60")],
        &"y".repeat(17 << 10),
    );
    assert_eq!(
        cache.put(key("hog", URL), &request(URL, &[]), huge, now),
        Err(Refusal::TooLarge)
    );
}

/// What an attacker once filled a node with: entries whose request carried
/// a 256 KiB header (that the policy kept), each counted as next to
/// nothing. Now every byte an entry holds counts, the namespace stays
/// within its share whatever the requests carry, and a neighbour's
/// entries stay.
#[test]
fn request_headers_count_and_keep_a_namespace_within_its_share() {
    let cache = HttpCache::new(CacheConfig {
        capacity_bytes: 8 << 20,
        namespace_bytes: 2 << 20,
        ..CacheConfig::default()
    });
    let now = SystemTime::now();
    let big = "h".repeat(256 << 10);
    assert_eq!(
        cache.put(
            key("victim", URL),
            &request(URL, &[]),
            response(200, &[("cache-control", "max-age=60")], "kept"),
            now,
        ),
        Ok(())
    );
    for i in 0..200 {
        let url = format!("https://example.com/{i}");
        // Varied on, so the policy must keep it: it counts.
        let put = cache.put(
            key("hog", &url),
            &request(&url, &[("x-pad", &big)]),
            response(
                200,
                &[("cache-control", "max-age=60"), ("vary", "x-pad")],
                "",
            ),
            now,
        );
        assert_eq!(put, Ok(()), "{i}");
        let (total, hog) = cache.usage("hog");
        assert!(hog <= 2 << 20, "{i}: the hog holds {hog} bytes");
        assert!(total <= 8 << 20, "{i}: the store holds {total} bytes");
    }
    // Each entry holds more than its header: at most 7 of them fit 2 MiB.
    assert!(cache.entries("hog") <= 8, "{}", cache.entries("hog"));
    assert!(
        cache
            .lookup(&key("victim", URL), &request(URL, &[]), now)
            .is_some()
    );
}

/// A namespace holds at most `namespace_entries` entries, however small.
#[test]
fn a_namespace_holds_a_bounded_number_of_entries() {
    let cache = HttpCache::new(CacheConfig {
        capacity_bytes: 64 << 20,
        namespace_bytes: 64 << 20,
        namespace_entries: 100,
    });
    let now = SystemTime::now();
    for i in 0..1000 {
        let url = format!("https://example.com/{i}");
        let put = cache.put(
            key("hog", &url),
            &request(&url, &[("x-unread", "not kept")]),
            response(200, &[("cache-control", "max-age=60")], ""),
            now,
        );
        assert_eq!(put, Ok(()), "{i}");
    }
    assert_eq!(cache.entries("hog"), 100);
    let (_, hog) = cache.usage("hog");
    // Empty entries still cost their overhead.
    assert!(hog >= 100 * policy::ENTRY_OVERHEAD, "{hog}");
    let newest = "https://example.com/999";
    assert!(
        cache
            .lookup(&key("hog", newest), &request(newest, &[]), now)
            .is_some()
    );
}
