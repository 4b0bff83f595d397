//! Request and response bodies stream in chunks, never buffered whole.

use std::time::Duration;

use bytes::Bytes;
use isolane_engine::{Body, PoolMode};

use crate::support::*;

const ECHO: &str = "export default { async fetch(request) {
    let chunks = 0, bytes = 0;
    const reader = request.body.getReader();
    const out = new ReadableStream({
        async pull(controller) {
            const { value, done } = await reader.read();
            if (done) { controller.enqueue(new TextEncoder().encode('\\n' + chunks + ' chunks ' + bytes + ' bytes')); controller.close(); return; }
            chunks++; bytes += value.length;
            controller.enqueue(value);
        },
    });
    return new Response(out);
} };";

#[tokio::test]
async fn a_large_upload_is_echoed_in_chunks() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let echo = bundle("t/echo", ECHO);
    let (tx, body) = Body::channel(2);
    const CHUNKS: usize = 64;
    const SIZE: usize = 64 * 1024;
    let writer = tokio::spawn(async move {
        for i in 0..CHUNKS {
            tx.send(Bytes::from(vec![b'a' + (i % 26) as u8; SIZE]))
                .await
                .unwrap();
        }
    });
    let response = engine.execute(0, echo, post("/", body)).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let (mut total, mut pieces, mut tail) = (0usize, 0usize, Vec::new());
    while let Some(chunk) = body.next_chunk().await {
        let chunk = chunk.unwrap();
        assert!(
            chunk.len() <= SIZE + 64,
            "a chunk of {} bytes: buffered?",
            chunk.len()
        );
        total += chunk.len();
        pieces += 1;
        tail = chunk.to_vec();
    }
    writer.await.unwrap();
    let tail = String::from_utf8_lossy(&tail).into_owned();
    assert_eq!(tail, format!("\n{CHUNKS} chunks {} bytes", CHUNKS * SIZE));
    assert_eq!(total, CHUNKS * SIZE + tail.len());
    assert_eq!(pieces, CHUNKS + 1);
}

#[tokio::test]
async fn a_streamed_response_waits_for_its_reader() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let producer = bundle(
        "t/producer",
        "let made = 0; export default { fetch(request) {
            if (new URL(request.url).pathname === '/made') return new Response(String(made));
            return new Response(new ReadableStream({ pull(c) { made++; c.enqueue(new Uint8Array(16384)); if (made >= 64) c.close(); } }));
        } };",
    );
    let response = engine.execute(0, producer.clone(), get("/")).await.unwrap();
    // Nobody reads: back-pressure stops the producer after a few chunks.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, made) = run(&engine, 0, &producer, "/made").await;
    let made: usize = made.parse().unwrap();
    assert!(made < 20, "produced {made} chunks with no reader");
    let mut body = response.into_body();
    let mut total = 0;
    while let Some(chunk) = body.next_chunk().await {
        total += chunk.unwrap().len();
    }
    assert_eq!(total, 64 * 16384);
}

/// Polls `path` on `worker` until it answers `want` (bounded).
async fn wait_for(
    engine: &isolane_engine::Engine,
    worker: &std::sync::Arc<isolane_engine::WorkerBundle>,
    path: &str,
    want: &str,
) {
    let what = format!("{path} to answer {want:?}");
    isolane_testenv::wait_until(&what, Duration::from_secs(10), || async {
        let (_, got) = run(engine, 0, worker, path).await;
        if got == want {
            Ok(())
        } else {
            Err(format!("it answers {got:?}"))
        }
    })
    .await;
}

const ABORT_WATCH: &str = "let seen = 'not yet';
export default { async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === '/seen') return new Response(seen);
    request.signal.addEventListener('abort', () => { seen = request.signal.reason.name; });
    if (path === '/head') return new Promise(() => {});
    let n = 0;
    return new Response(new ReadableStream({
        async pull(controller) {
            await new Promise((r) => setTimeout(r, 5));
            controller.enqueue(new TextEncoder().encode('chunk ' + n++ + '\\n'));
        },
    }));
} };";

#[tokio::test]
async fn a_client_gone_before_the_head_aborts_the_request_signal() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/abort-head", ABORT_WATCH);
    let call = engine.execute(0, worker.clone(), get("/head"));
    // The client gives up before the worker answers.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    wait_for(&engine, &worker, "/seen", "AbortError").await;
}

#[tokio::test]
async fn a_client_gone_mid_body_aborts_the_request_signal() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/abort-body", ABORT_WATCH);
    let response = engine
        .execute(0, worker.clone(), get("/stream"))
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = body.next_chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"chunk 0"));
    drop(body);
    wait_for(&engine, &worker, "/seen", "AbortError").await;
}

/// Reads a body to its end: the bytes, and whether it ended in an error.
async fn drain(response: http::Response<Body>) -> (Vec<u8>, bool) {
    let mut body = response.into_body();
    let mut got = Vec::new();
    while let Some(chunk) = body.next_chunk().await {
        match chunk {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

const WORKERS_STREAMS: &str = "const enc = new TextEncoder();
function through(stream, ...chunks) {
    const writer = stream.writable.getWriter();
    for (const c of chunks) writer.write(c).catch(() => {});
    writer.close().catch(() => {});
    return new Response(stream.readable, { headers: { 'content-length': '99' } });
}
const strings = (...xs) => new ReadableStream({ start(c) { for (const x of xs) c.enqueue(x); c.close(); } });
export default { fetch(request) {
    switch (new URL(request.url).pathname) {
        case '/fixed': return through(new FixedLengthStream(5), enc.encode('fix'), enc.encode('ed'));
        case '/fixed-short': return through(new FixedLengthStream(10), enc.encode('fixed'));
        case '/fixed-long': return through(new FixedLengthStream(3), enc.encode('fixed'));
        case '/identity': {
            const s = new IdentityTransformStream();
            const w = s.writable.getWriter();
            w.write(enc.encode('ident')); w.write('ity'); w.close();
            return new Response(s.readable);
        }
        case '/strings': return new Response(strings('h\\u00e9llo ', 'w\\u00f6rld', 'a\\ud800', '\\udc00b'));
        case '/not-bytes': return new Response(strings(enc.encode('a'), 42));
    }
} };";

/// A FixedLengthStream's readable is sent with the length it declared (over
/// the worker's own Content-Length); an IdentityTransformStream's is chunked.
#[tokio::test]
async fn a_fixed_length_stream_declares_its_length() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/workers-streams", WORKERS_STREAMS);
    let response = engine
        .execute(0, worker.clone(), get("/fixed"))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-length"], "5");
    assert_eq!(drain(response).await, (b"fixed".to_vec(), false));
    let response = engine.execute(0, worker, get("/identity")).await.unwrap();
    assert!(response.headers().get("content-length").is_none());
    assert_eq!(drain(response).await, (b"identity".to_vec(), false));
}

/// A FixedLengthStream given fewer or more bytes than it declared ends its
/// body in an error, never past the declared length.
#[tokio::test]
async fn a_lying_fixed_length_stream_ends_in_an_error() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/workers-streams", WORKERS_STREAMS);
    let response = engine
        .execute(0, worker.clone(), get("/fixed-short"))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-length"], "10");
    let (got, failed) = drain(response).await;
    assert!(failed, "a short body must end in an error");
    assert_eq!(got, b"fixed");
    let response = engine.execute(0, worker, get("/fixed-long")).await.unwrap();
    assert_eq!(response.headers()["content-length"], "3");
    let (got, failed) = drain(response).await;
    assert!(failed, "a body longer than declared must end in an error");
    assert!(got.is_empty(), "sent {got:?}");
}

/// Strings from a body stream are sent as UTF-8, each chunk on its own (a
/// lone surrogate becomes U+FFFD), as workerd does; other values abort.
#[tokio::test]
async fn string_body_chunks_are_sent_as_utf8() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/workers-streams", WORKERS_STREAMS);
    let response = engine
        .execute(0, worker.clone(), get("/strings"))
        .await
        .unwrap();
    let (got, failed) = drain(response).await;
    assert!(!failed);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        "héllo wörlda\u{fffd}\u{fffd}b"
    );
    let response = engine.execute(0, worker, get("/not-bytes")).await.unwrap();
    let (got, failed) = drain(response).await;
    assert!(failed, "a number chunk must abort the body");
    assert_eq!(got, b"a");
}
