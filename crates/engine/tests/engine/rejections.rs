//! Unhandled promise rejections: reported only when a promise is still
//! without a handler after the turn's microtask checkpoint (as workerd and
//! browsers do), never for one handled later in the same turn, and never for
//! the runtime's own promises while a response streams.

use isolane_engine::PoolMode;

use crate::logs::{self, Logged};
use crate::support::*;

fn rejections(worker: &str) -> Vec<Logged> {
    logs::for_worker(worker)
        .into_iter()
        .filter(|e| e.message == "unhandled promise rejection")
        .collect()
}

/// A promise that gets its handler a few microtasks after it was rejected
/// is handled: nothing is reported. One that never gets one is reported
/// once, with its reason.
#[tokio::test]
async fn only_rejections_unhandled_after_the_checkpoint_are_reported() {
    logs::capture();
    let (engine, _) = engine(1, PoolMode::Pinned);
    let late = bundle(
        "t/rejection-handled-late",
        "export default { async fetch() {
            const p = Promise.reject(new Error('handled later'));
            await null; await null;
            p.catch(() => {});
            const q = new Promise((_, reject) => reject(new TypeError('handled in a then')));
            await Promise.resolve();
            q.then(undefined, () => {});
            return new Response('ok');
        } };",
    );
    assert_eq!(run(&engine, 0, &late, "/").await, (200, "ok".to_owned()));
    let never = bundle(
        "t/rejection-never-handled",
        "export default { async fetch() {
            Promise.reject(new RangeError('nobody listens'));
            return new Response('ok');
        } };",
    );
    assert_eq!(run(&engine, 0, &never, "/").await, (200, "ok".to_owned()));
    // Logged within the request's turn, before the response was sent.
    let reported = rejections(&never.id);
    assert_eq!(reported.len(), 1, "{reported:#?}");
    assert!(
        reported[0]
            .fields
            .contains("error=RangeError: nobody listens"),
        "{reported:#?}"
    );
    assert_eq!(rejections(&late.id).len(), 0, "{:#?}", rejections(&late.id));
}

/// A reason that cannot be turned into text is still reported, and its
/// conversion's exception is not the request's.
#[tokio::test]
async fn an_unprintable_reason_is_reported_without_failing_the_request() {
    logs::capture();
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle(
        "t/rejection-unprintable",
        "export default { fetch() {
            Promise.reject(Symbol('s'));
            Promise.reject({ toString() { throw new Error('no text'); } });
            return new Response('ok');
        } };",
    );
    assert_eq!(run(&engine, 0, &worker, "/").await, (200, "ok".to_owned()));
    assert_eq!(rejections(&worker.id).len(), 2);
}

/// Streamed responses (a worker's own stream, a proxied fetch body, a
/// stream that errors, a pipe through a TransformStream) leave no
/// "unhandled rejection" behind from the runtime's stream code.
#[tokio::test]
async fn streamed_responses_report_no_rejections() {
    logs::capture();
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle(
        "t/rejection-streams",
        "export default { async fetch(request) {
            const path = new URL(request.url).pathname;
            const text = (s) => new TextEncoder().encode(s);
            if (path === '/stream') {
                let n = 0;
                return new Response(new ReadableStream({
                    pull(c) { if (n++ < 3) c.enqueue(text('chunk ')); else c.close(); },
                }), { headers: { 'content-length': '18' } });
            }
            if (path === '/pipe') {
                const { readable, writable } = new TransformStream();
                const w = writable.getWriter();
                w.write(text('piped')).then(() => w.close());
                return new Response(readable);
            }
            if (path === '/error') {
                return new Response(new ReadableStream({
                    start(c) { c.enqueue(text('part')); },
                    pull(c) { c.error(new Error('stream broke')); },
                }));
            }
            if (path === '/tee') {
                const [a, b] = new Response('tee body').body.tee();
                await new Response(b).text();
                return new Response(a);
            }
            return new Response('?', { status: 404 });
        } };",
    );
    for path in ["/stream", "/pipe", "/tee"] {
        let (status, _) = run(&engine, 0, &worker, path).await;
        assert_eq!(status, 200, "{path}");
    }
    // The broken stream ends the body with an error; that is logged as an
    // error, not as an unhandled rejection.
    let response = engine
        .execute(0, worker.clone(), get("/error"))
        .await
        .unwrap();
    let _ = http_body_util::BodyExt::collect(response.into_body()).await;
    let (status, _) = run(&engine, 0, &worker, "/stream").await;
    assert_eq!(status, 200);
    let reported = rejections(&worker.id);
    assert!(reported.is_empty(), "{reported:#?}");
}
