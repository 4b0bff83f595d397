//! Work that builds one huge string or array from parts that each fit
//! (`JSON.stringify`, a global `replace`, `join`, `concat`, `flat`), under a
//! 64 MiB limit: each ends at the limit, and the process's peak while it
//! runs stays within a small multiple of the limit, beside a benign
//! neighbour of another namespace on the same thread, answered before,
//! during and after each.

use std::sync::Arc;

use isolane_engine::{ExecuteError, PoolMode};

use crate::peak_rss::PeakRss;
use crate::peak_rss::rss_mib;
use crate::support::*;

/// The most one such request may take the process past where it started:
/// the isolate's 64 MiB, and as much again while V8 copies what it built.
const PEAK_OVER_MIB: u64 = 2 * 64;

#[tokio::test]
async fn huge_results_built_from_small_parts_end_near_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let attacks = [
        // 260 references to one 1 MiB string: 260 MiB of JSON, built by
        // V8 off the heap (see native_alloc.rs), indented, in two bytes a
        // character, and through `Response.json`.
        (
            "stringify",
            "JSON.stringify(new Array(260).fill('x'.repeat(2**20)))",
        ),
        (
            "stringify indented",
            "JSON.stringify(new Array(260).fill(['x'.repeat(2**20)]), null, 2)",
        ),
        (
            "stringify two-byte",
            "JSON.stringify(new Array(130).fill('\\u20ac'.repeat(2**20)))",
        ),
        (
            "Response.json",
            "Response.json(new Array(260).fill('x'.repeat(2**20))).status",
        ),
        // Each level doubles what the last one refers to: 1 GiB of JSON,
        // past V8's longest string, from 64 KiB on the heap.
        (
            "stringify doubling",
            "JSON.stringify(Array.from({ length: 14 }).reduce((a) => [a, a], ['x'.repeat(2**16)]))",
        ),
        // A regex replace whose every match makes 64 bytes.
        ("replace", "'a'.repeat(2**22).replace(/a/g, 'b'.repeat(64))"),
        ("replace many", "'a'.repeat(2**24).replace(/a/g, 'bb')"),
        ("replaceAll many", "'a'.repeat(2**24).replaceAll('a', 'bb')"),
        ("join", "new Array(260).fill('x'.repeat(2**20)).join(',')"),
        (
            "concat",
            "[].concat(...new Array(64).fill(new Array(2**20).fill(1)))",
        ),
        (
            "flat",
            "new Array(64).fill(new Array(2**20).fill(1)).flat()",
        ),
        (
            "template",
            "new Array(260).fill('x'.repeat(2**20)).reduce((a, b) => a + b, '').split('')",
        ),
    ];
    let mut failures = Vec::new();
    for (what, attack) in attacks {
        neighbour_ok(&engine, &neighbour).await;
        let bad = Arc::new(bundle_with(
            &format!("t/transient-{}", what.replace(' ', "-")),
            &format!(
                "export default {{ fetch() {{ const r = {attack}; return new Response(String(r.length)); }} }};"
            ),
            memory_limits(64),
            &[],
        ));
        let before = rss_mib();
        let sampler = PeakRss::start();
        // The neighbour's request waits on the same thread while it runs.
        let (result, during) = tokio::join!(
            engine.execute(0, bad, get("/")),
            run(&engine, 0, &neighbour, "/"),
        );
        let peak = sampler.finish();
        if during != (200, "hello".to_owned()) {
            failures.push(format!("{what}: the neighbour during it: {during:?}"));
        }
        eprintln!(
            "{what}: {:?}; RSS MiB before {before}, peak {peak}",
            result.as_ref().map(|r| r.status())
        );
        if !matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })) {
            failures.push(format!("{what}: {:?}", result.map(|r| r.status())));
        }
        if peak >= before + PEAK_OVER_MIB {
            failures.push(format!("{what}: RSS {before} -> {peak} MiB"));
        }
        neighbour_ok(&engine, &neighbour).await;
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The wrapped builders answer as the natives do: each case of
/// `builders_cases.json` (an expression and what Node.js 20's V8 answers
/// for it, the standard's behaviour: replacers and their `this`,
/// indentation, `toJSON`, escapes, an array of keys, errors; `flat`,
/// `concat`, `join`) gives the same text in a Worker.
#[tokio::test]
async fn the_bounded_builders_answer_as_the_natives_do() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let cases: Vec<(String, String)> =
        serde_json::from_str(include_str!("builders_cases.json")).unwrap();
    let list: Vec<String> = cases
        .iter()
        .map(|(expression, _)| format!("() => String({expression})"))
        .collect();
    let worker = Arc::new(bundle_with(
        "t/builders",
        &format!(
            "const cases = [{}];
             export default {{ fetch() {{ return new Response(JSON.stringify(cases.map((c) => c()))); }} }};",
            list.join(",\n")
        ),
        memory_limits(64),
        &[],
    ));
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{body}");
    let got: Vec<String> = serde_json::from_str(&body).unwrap();
    for ((expression, want), got) in cases.iter().zip(&got) {
        assert_eq!(got, want, "{expression}");
    }
    assert_eq!(got.len(), cases.len());
}

/// A client posts 24 MiB of JSON to a Worker with a 64 MiB limit, which
/// parses it and answers; then other clients' requests to the same Worker
/// are answered, not refused at a limit the first request used up.
#[tokio::test]
async fn the_request_after_a_large_post_is_answered() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "t/after-post",
        "export default { async fetch(request) {
             if (request.method === 'POST') {
                 const data = await request.json();
                 return new Response(String(data.items.length));
             }
             await new Promise((resolve) => setTimeout(resolve, 200));
             return new Response(JSON.stringify({ hello: 'world', n: [1, 2, 3] }));
         } };",
        memory_limits(64),
        &[],
    ));
    let item = r#"{"id":12345,"name":"a name of some length","tags":["x","y"]},"#;
    let count = (24 << 20) / item.len();
    let mut json = String::from(r#"{"items":["#);
    for _ in 0..count {
        json.push_str(item);
    }
    json.pop();
    json.push_str("]}");
    let mut outcomes = Vec::new();
    for round in 0..5 {
        // The other client's request is in flight (waiting on its timer)
        // when the post arrives.
        let (next, posted) = tokio::join!(run(&engine, 0, &worker, "/"), async {
            tokio::task::yield_now().await;
            engine
                .execute(
                    0,
                    worker.clone(),
                    post("/", isolane_engine::Body::from(json.clone())),
                )
                .await
                .map(|r| r.status())
        });
        outcomes.push(format!("round {round}: post {posted:?}, next {}", next.0));
        assert_eq!(next.0, 200, "{outcomes:#?}");
    }
    eprintln!("{outcomes:#?}");
}

/// Clients post 8 MiB bodies read whole (as text, JSON and bytes) one after
/// another to a Worker with a 64 MiB limit: each is answered. What the
/// earlier requests left, garbage V8 had not collected (still counted in
/// its heap figure), once made a later request fail at the limit.
#[tokio::test]
async fn bodies_read_whole_one_after_another_are_all_answered() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "t/bodies-whole",
        "export default { async fetch(request) {
             const path = new URL(request.url).pathname;
             if (path === '/text') return new Response(String((await request.text()).length));
             if (path === '/json') return new Response(String((await request.json()).items.length));
             if (path === '/bytes') return new Response(String((await request.arrayBuffer()).byteLength));
             return new Response(String(new TextEncoder().encode('x'.repeat(1 << 20)).length));
         } };",
        memory_limits(64),
        &[],
    ));
    let item = r#"{"id":12345,"name":"a name of some length","tags":["x","y"]},"#;
    let mut json = String::from(r#"{"items":["#);
    for _ in 0..(8 << 20) / item.len() {
        json.push_str(item);
    }
    json.pop();
    json.push_str("]}");
    let mut outcomes = Vec::new();
    for path in ["/json", "/text", "/bytes"].repeat(4) {
        let posted = engine
            .execute(
                0,
                worker.clone(),
                post(path, isolane_engine::Body::from(json.clone())),
            )
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| e.reason());
        let next = run(&engine, 0, &worker, "/").await.0;
        outcomes.push((posted, next));
    }
    assert!(
        outcomes
            .iter()
            .all(|(posted, next)| *posted == Ok(200) && *next == 200),
        "{outcomes:?}"
    );
}
