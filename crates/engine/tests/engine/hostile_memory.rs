//! A hostile worker against `memoryMiB` by every way of making memory that
//! it could find: V8's own `ArrayBuffer` constructor reached through a
//! prototype chain, a stack trace or a subclass, resizable buffers grown
//! after they were made, cloned and transferred; and the Cache API filled
//! with entries whose requests carry big headers. What is measured is the
//! process's resident memory (this test binary's `VmRSS`), not the engine's
//! own counters, with a benign worker on the same thread checked before,
//! during and after.

use std::sync::Arc;

use isolane_engine::{Body, ExecuteError, PoolMode};

use crate::peak_rss::rss_mib;
use crate::support::*;

/// Hoards 16 MiB of written pages per request in a resizable buffer made
/// by `make` (an expression of `max`, the buffer's `maxByteLength`).
fn hoarder(make: &str) -> String {
    format!(
        "export default {{ fetch() {{
            globalThis.keep ??= [];
            const max = 16 << 20;
            const buffer = {make};
            buffer.resize(max);
            new Uint8Array(buffer).fill(7);
            keep.push(buffer);
            return new Response(String(keep.length));
        }} }};"
    )
}

/// Each way to a resizable buffer, hoarded request after request under a
/// 64 MiB limit: every one ends at `memory_limit` after at most four
/// buffers (or is refused outright once quarantined), and the process holds
/// no more than a few limits' worth afterwards. Against V8's own
/// constructor this once grew a process by 2 GiB in a second, every
/// request answered 200.
#[tokio::test]
async fn every_way_to_a_resizable_buffer_is_held_to_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let routes = [
        "new (Object.getPrototypeOf(new Uint8Array(1).buffer).constructor)(0, { maxByteLength: max })",
        "new (new ArrayBuffer(0).constructor)(0, { maxByteLength: max })",
        "new (class extends Object.getPrototypeOf(new Uint8Array(1).buffer).constructor {})(0, { maxByteLength: max })",
        "Reflect.construct(ArrayBuffer, [0, { maxByteLength: max }], new Proxy(ArrayBuffer, {}))",
        "structuredClone(globalThis.seed ??= new ArrayBuffer(0, { maxByteLength: max }))",
        "new ArrayBuffer(0, { maxByteLength: max }).transfer()",
    ];
    neighbour_ok(&engine, &neighbour).await;
    let before = rss_mib();
    for (i, make) in routes.iter().enumerate() {
        let bad = Arc::new(bundle_with(
            &format!("t/resizable-{i}"),
            &hoarder(make),
            memory_limits(64),
            &[],
        ));
        let mut limit_hits = 0;
        for _ in 0..12 {
            match engine.execute(0, bad.clone(), get("/")).await {
                Ok(response) => {
                    let (status, body) = text(Ok(response)).await;
                    assert_eq!(status, 200, "{make}: {body}");
                    let kept: usize = body.parse().unwrap();
                    assert!(kept <= 4, "{make}: kept {kept} × 16 MiB under 64 MiB");
                }
                Err(ExecuteError::MemoryLimit { limit_mib: 64 }) => limit_hits += 1,
                Err(ExecuteError::Quarantined { .. }) => {}
                Err(error) => panic!("{make}: {error:?}"),
            }
            neighbour_ok(&engine, &neighbour).await;
        }
        assert!(limit_hits > 0, "{make}: never reached its limit");
    }
    neighbour_ok(&engine, &neighbour).await;
    // Up to 72 requests × 16 MiB were asked for; a pool's worth of 64 MiB
    // isolates can be live at the end.
    let grew = rss_mib().saturating_sub(before);
    assert!(grew < 320, "RSS grew by {grew} MiB");
}

/// V8's constructor cannot be had from a stack trace taken while worker
/// code runs inside it (a getter on the options, a `valueOf` on the length,
/// a proxy as `newTarget`), nor from a buffer's `constructor`; and there is
/// no `SharedArrayBuffer`.
#[tokio::test]
async fn the_native_constructor_never_reaches_worker_code() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    // A service-worker script: sloppy mode, where a stack trace hands out
    // the functions on it (a module's are strict, and hidden).
    let probe = bundle(
        "t/probe",
        "function look() {
            for (const f of new Error().stack) {
                if (typeof f === 'function' && f.name === 'ArrayBuffer' && f !== ArrayBuffer) found.add(f);
            }
        }
        var found = new Set();
        function probe() {
            Error.prepareStackTrace = function (_, sites) { return sites.map(function (s) { return s.getFunction(); }); };
            const options = { get maxByteLength() { look(); return 1 << 16; } };
            const length = { valueOf() { look(); return 8; } };
            new ArrayBuffer(length, options);
            Reflect.construct(ArrayBuffer, [length, options],
                new Proxy(function () {}, { get(t, k) { look(); return Reflect.get(t, k); } }));
            class Sub extends ArrayBuffer { constructor() { look(); super(length, options); look(); } }
            const sub = new Sub();
            const buffers = [new Uint8Array(1).buffer, new ArrayBuffer(1), sub];
            const constructors = buffers.map((b) => b.constructor === ArrayBuffer || b.constructor === Sub);
            // The trick is live: a stack trace hands out functions.
            const live = new Error().stack.some(function (f) { return f === probe; });
            return [live, found.size, constructors.join(), sub instanceof Sub,
                sub.resizable, typeof SharedArrayBuffer].join(' ');
        }
        addEventListener('fetch', function (event) { event.respondWith(new Response(probe())); });",
    );
    assert_eq!(
        run(&engine, 0, &probe, "/").await,
        (200, "true 0 true,true,true true true undefined".to_owned())
    );
}

/// Builtins that make a huge string or fill a huge array in one step V8
/// cannot interrupt end at `memory_limit` before they start, when what they
/// were asked for cannot fit: a 512 MiB string under 64 MiB once answered
/// 200 (a rope) or took the process 512 MiB–1 GiB past the limit when
/// flattened or copied out, and `new Array(2**26).fill(0)` took 1.1 GiB and
/// seconds of the thread. Stopped before they start, they never run on past
/// the limit, so a second request is not refused as a quarantined repeat
/// offender but ends at the limit again; a neighbour answers between.
#[tokio::test]
async fn huge_strings_and_fills_end_at_the_limit_before_they_start() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let attacks = [
        "String('x'.repeat(2**29 - 24).length)",
        "String('x'.repeat(2**29 - 24).charCodeAt(7))",
        "'x'.repeat(2**29 - 24)",
        "String(''.padEnd(2**29 - 24, 'ab').length)",
        "String(String.prototype.repeat.call({ toString() { return 'xy'; } }, 2**28).length)",
        "String(new Array(2**26).fill(0).length)",
        "String(Array.prototype.fill.call({ length: 2**26 }, 0).length)",
        // 96 MiB of unboxed doubles (8 bytes an element, not 4).
        "String(new Array(3 * 2**22).fill(0.5).length)",
        // 256 MiB built in one step from a 1 MiB string: once answered 200.
        "String('a'.repeat(2**20).replace(/a/g, 'b'.repeat(256)).length)",
        "String('a'.repeat(2**20).replaceAll('a', 'b'.repeat(256)).length)",
        "String('a'.repeat(2**20).replace(/a/g, '$&'.repeat(128)).length)",
        "String('a'.repeat(2**16).replace(/a/g, () => 'b'.repeat(2**12)).length)",
        "String(new Array(2**20).join('b'.repeat(256)).length)",
        "String(new Array(2**16).fill('b'.repeat(2**12)).join('').length)",
        "String('a'.repeat(2**24).split('').length)",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        let bad = Arc::new(bundle_with(
            &format!("t/huge-{i}"),
            &format!("export default {{ fetch() {{ return new Response({attack}); }} }};"),
            memory_limits(64),
            &[],
        ));
        for round in 0..2 {
            let error = engine
                .execute(0, bad.clone(), get("/"))
                .await
                .map(|r| r.status())
                .unwrap_err();
            assert!(
                matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
                "{attack} (round {round}): {error:?}"
            );
            neighbour_ok(&engine, &neighbour).await;
        }
    }
}

/// Puts whose requests carry a 256 KiB header, `count` per request, keyed
/// `/{n}`; `?vary` makes the response vary on that header (so the store
/// must keep it); `/first` answers whether key 0 is still stored.
const CACHE_FILLER: &str = r#"
export default {
  async fetch(request) {
    const url = new URL(request.url);
    const from = Number(url.searchParams.get('from') ?? 0);
    const pad = 'h'.repeat(256 << 10);
    const headers = { 'cache-control': 'max-age=600' };
    if (url.searchParams.has('vary')) headers.vary = 'x-pad';
    if (url.pathname === '/first') {
      const hit = await caches.default.match(new Request('https://filler.example/0', { headers: { 'x-pad': pad } }));
      return new Response(hit ? 'hit' : 'miss');
    }
    for (let n = from; n < from + 20; n++) {
      const key = new Request('https://filler.example/' + n, { headers: { 'x-pad': pad } });
      await caches.default.put(key, new Response('', { headers }));
    }
    return new Response('ok');
  }
};
"#;

/// 2,000 entries each put with a 256 KiB request header (500 MiB of
/// headers) under the default 32 MiB namespace share: the process grows by
/// about the share, not by the headers. A header the response does not vary
/// on is not kept at all (the entries all stay); one it varies on is, and
/// counts, so the oldest entries are evicted. Another namespace's entry
/// stays. This once took a node from 51 MiB to 3 GiB with nothing evicted.
#[tokio::test]
async fn cache_entries_with_big_request_headers_stay_within_the_share() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("bystander/hello", HELLO);
    let victim = Arc::new(bundle_with(
        "victim/filler",
        CACHE_FILLER,
        memory_limits(128),
        &[],
    ));
    assert_eq!(run(&engine, 0, &victim, "/?vary").await.0, 200);
    neighbour_ok(&engine, &neighbour).await;
    let before = rss_mib();
    for (name, query, oldest) in [("plain", "", "hit"), ("varied", "vary&", "miss")] {
        let filler = Arc::new(bundle_with(
            &format!("hog-{name}/filler"),
            CACHE_FILLER,
            memory_limits(128),
            &[],
        ));
        for round in 0..50 {
            let path = format!("/?{query}from={}", round * 20);
            assert_eq!(
                run(&engine, 0, &filler, &path).await,
                (200, "ok".to_owned())
            );
            if round % 10 == 0 {
                neighbour_ok(&engine, &neighbour).await;
            }
        }
        let first = format!("/first?{query}");
        assert_eq!(
            run(&engine, 0, &filler, &first).await,
            (200, oldest.to_owned()),
            "{name}: the oldest entry"
        );
    }
    neighbour_ok(&engine, &neighbour).await;
    assert_eq!(
        run(&engine, 0, &victim, "/first?vary").await,
        (200, "hit".to_owned())
    );
    let grew = rss_mib().saturating_sub(before);
    assert!(grew < 160, "RSS grew by {grew} MiB");
}

/// The counted road a huge global replace takes (a replacement made per
/// match, in JavaScript) gives what the native gives: every `$` pattern of
/// ECMAScript's GetSubstitution, checked on a string long enough for that
/// road against the same replacement done piecewise on a short one.
#[tokio::test]
async fn a_counted_replace_answers_as_the_native_does() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let checker = Arc::new(bundle_with(
        "t/replace",
        r#"export default { fetch() {
            const unit = 'ab-cd_12|';
            const big = unit.repeat(2**14);
            const cases = [
              [/(?<l>[a-z])([a-z])/g, '[$2$1$&$$$<l>$<none>$0$10$3$9$x$]'],
              [/(\d)/g, '<$01$1$11>'],
              [/-/g, '$'],
              [/\|/g, () => '!'],
              [/(z)?c/g, '[$1]'],
              ['_', '$&$&'],
            ];
            const failures = [];
            for (const [pattern, replacement] of cases) {
              const method = typeof pattern === 'string' ? 'replaceAll' : 'replace';
              const got = big[method](pattern, replacement);
              const want = unit[method](pattern, replacement).repeat(2**14);
              if (got !== want) failures.push(`${pattern} ${replacement}: ${got.slice(0, 60)}`);
            }
            // $` and $' see the whole string, not a piece of it.
            const edge = 'x'.repeat(2**12) + 'ab';
            const got = edge.replace(/a/g, "[$`|$']");
            const want = 'x'.repeat(2**12) + '[' + 'x'.repeat(2**12) + '|b]b';
            if (got !== want) failures.push('prefix/suffix');
            return new Response(failures.join('\n') || 'ok');
        } };"#,
        memory_limits(128),
        &[],
    ));
    assert_eq!(run(&engine, 0, &checker, "/").await, (200, "ok".to_owned()));
}

/// Who can trigger the counted replace: an anonymous client, by posting a
/// body a benign Worker escapes (`&` to `&amp;` and friends, each `a` to
/// 64 bytes here). Its request ends at `memory_limit` alone, and again the
/// next time: stopped before the big allocation, it overran nothing, so
/// the Worker is never penalized and its other route answers throughout.
#[tokio::test]
async fn a_client_s_body_fed_to_replace_fails_that_request_alone() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let escaper = Arc::new(bundle_with(
        "shop/escaper",
        r#"export default { async fetch(request) {
            if (request.method !== 'POST') return new Response('cheap');
            const text = await request.text();
            return new Response(String(text.replace(/a/g, '&'.repeat(64)).length));
        } };"#,
        memory_limits(64),
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &escaper, "/").await,
        (200, "cheap".to_owned())
    );
    // A small body is escaped as usual.
    let small = engine
        .execute(0, escaper.clone(), post("/", Body::from("aa")))
        .await
        .expect("a small body");
    assert_eq!(small.status(), 200);
    for round in 0..3 {
        // 4 MiB in, 256 MiB out.
        let body = Body::from(vec![b'a'; 4 << 20]);
        let error = engine
            .execute(0, escaper.clone(), post("/", body))
            .await
            .map(|r| r.status())
            .unwrap_err();
        assert!(
            matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
            "round {round}: {error:?}"
        );
        assert_eq!(
            run(&engine, 0, &escaper, "/").await,
            (200, "cheap".to_owned())
        );
    }
}
