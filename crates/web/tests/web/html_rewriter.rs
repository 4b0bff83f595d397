//! HTMLRewriter's limits: each rewrite charges the worker's memory budget
//! (its coroutine stack and the most lol_html may buffer) until it ends with
//! its request, a token larger than that buffer fails the rewrite, and a
//! worker that holds many rewrites open reaches its memory limit without
//! harming its neighbour.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Limits, PoolMode};

use crate::support::*;

/// Starts `n` rewrites whose handler never settles (each one suspended
/// inside lol_html, its memory held), then answers.
const HOLDER: &str = "export default { async fetch(request) {
    const n = Number(new URL(request.url).searchParams.get('n'));
    const reads = [];
    for (let i = 0; i < n; i++) {
        const body = new HTMLRewriter()
            .on('p', { element() { return new Promise(() => {}); } })
            .transform(new Response('<p>x</p>')).body;
        const reader = body.getReader();
        reads.push(reader);
        reader.read();
    }
    // Let every rewrite reach its handler.
    await new Promise((r) => setTimeout(r, 0));
    return new Response(`held ${reads.length}`);
} };";

#[tokio::test]
async fn rewrites_count_against_the_memory_limit_and_end_with_their_request() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let holder = Arc::new(bundle_with(
        "t/rewrite-holder",
        HOLDER,
        Limits {
            memory_mib: 64,
            ..Limits::default()
        },
        &[],
    ));
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    // Benign: 30 rewrites (about 38 MiB charged) fit; twice in a row, so the
    // first request's charges were given back when it ended.
    for _ in 0..2 {
        assert_eq!(
            run(&engine, 0, &holder, "/?n=30").await,
            (200, "held 30".to_owned())
        );
    }
    // Hostile: 100 rewrites (about 125 MiB) reach the 64 MiB limit.
    let error = engine
        .execute(0, holder.clone(), get("/?n=100"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
        "{error:?}"
    );
    assert!(
        recorder
            .terminations
            .lock()
            .unwrap()
            .contains(&isolane_engine::TerminationReason::MemoryLimit)
    );
    // The neighbour is unharmed, and the worker's next isolate works.
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    assert_eq!(
        run(&engine, 0, &holder, "/?n=10").await,
        (200, "held 10".to_owned())
    );
}

/// A start tag larger than the rewriter's buffer, cut across chunks, fails
/// the rewrite with an error the worker can catch; small documents on the
/// same worker still rewrite.
#[tokio::test]
async fn a_token_larger_than_the_buffer_fails_the_rewrite() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let worker = bundle(
        "t/rewrite-huge-tag",
        "export default { async fetch(request) {
            const size = Number(new URL(request.url).searchParams.get('size'));
            const enc = new TextEncoder();
            const head = enc.encode('<p><a data-x=\"');
            const fill = enc.encode('y'.repeat(64 * 1024));
            let sent = 0;
            const body = new ReadableStream({
                start(c) { c.enqueue(head); },
                pull(c) {
                    if (sent >= size) { c.enqueue(enc.encode('\">link</a></p>')); c.close(); return; }
                    c.enqueue(fill); sent += fill.length;
                },
            });
            const out = new HTMLRewriter().on('a', { element(el) { el.setAttribute('rel', 'x'); } })
                .transform(new Response(body));
            try {
                const text = await out.text();
                return new Response(`ok ${text.length}`);
            } catch (e) {
                return new Response(`failed ${e.name}: ${e.message}`);
            }
        } };",
    );
    let (status, small) = run(&engine, 0, &worker, "/?size=65536").await;
    assert_eq!(status, 200);
    assert!(small.starts_with("ok "), "{small}");
    let (status, huge) = run(&engine, 0, &worker, "/?size=4194304").await;
    assert_eq!(status, 200);
    assert!(
        huge.starts_with("failed TypeError") && huge.contains("memory"),
        "{huge}"
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    let (_, again) = run(&engine, 0, &worker, "/?size=65536").await;
    assert_eq!(again, small, "the worker rewrites again");
}

/// Selectors that would make the parser or lol_html's matcher recurse
/// deeply (the thread's or the rewrite's stack would overflow and abort the
/// process) are refused with a TypeError; the largest accepted ones work.
#[tokio::test]
async fn hostile_selectors_are_refused_and_the_largest_allowed_ones_work() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let worker = bundle(
        "t/rewrite-selectors",
        "export default { async fetch() {
            const nots = (d) => ':not('.repeat(d) + '.z' + ')'.repeat(d);
            const refused = {
                nested: 'a' + nots(1000),
                chained: 'a '.repeat(32) + 'b',
                long: 'a'.repeat(1025),
                brackets: '['.repeat(100000),
            };
            const out = [];
            for (const [name, selector] of Object.entries(refused)) {
                try { new HTMLRewriter().on(selector, {}); out.push(`${name} accepted`); }
                catch (e) { out.push(`${name} ${e.name}`); }
            }
            const many = new HTMLRewriter();
            for (let i = 0; i < 257; i++) many.on('p', { element() {} });
            try { await many.transform(new Response('<p>x</p>')).text(); out.push('257 handlers accepted'); }
            catch (e) { out.push(`257 handlers ${e.name}`); }
            const allowed = ['a '.repeat(31) + 'b', 'a' + nots(15), Array.from({ length: 40 }, (_, i) => `.c${i} > b`).join(', ')];
            // 31 nested <a> around the <b>, so every allowed selector matches.
            const doc = '<a class=\"c1\">'.repeat(31) + '<b>x</b>';
            for (const selector of allowed) {
                const r = new HTMLRewriter().on(selector, { element(el) { el.setAttribute('hit', '1'); } });
                const text = await r.transform(new Response(doc)).text();
                out.push(`${selector.length} bytes: ${text.split('hit=').length - 1} hits`);
            }
            return new Response(out.join('\\n'));
        } };",
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{body}");
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(
        lines,
        [
            "nested TypeError",
            "chained TypeError",
            "long TypeError",
            "brackets TypeError",
            "257 handlers TypeError",
            "63 bytes: 1 hits",
            "93 bytes: 31 hits",
            "388 bytes: 1 hits",
        ]
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
}
