//! Hostile use of the streaming codecs (`isolane-web`'s `compression.rs`): a decompression
//! bomb read whole, read slowly and read under a small CPU limit, and
//! decoders fed garbage without end. Each runs beside a benign worker on the
//! same thread, checked before and after; the process staying alive is the
//! first assertion.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};
use isolane_engine::{Body, Engine, ExecuteError, Limits, PoolMode, WorkerBundle};

use crate::support::*;

const GIB: usize = 1 << 30;

/// A raw deflate stream (`deflate-raw`) that inflates to 1 GiB of zeros:
/// one sync-flushed block sequence for 1 MiB of zeros, repeated 1024 times
/// (each copy starts on a byte boundary and refers only to zeros), then the
/// final empty block. About 1 KiB per MiB: a 1,000:1 bomb.
fn bomb() -> Bytes {
    let mut z = Compress::new(Compression::best(), false);
    let zeros = vec![0u8; 1 << 20];
    let mut block = Vec::with_capacity(64 * 1024);
    z.compress_vec(&zeros, &mut block, FlushCompress::Sync)
        .unwrap();
    assert_eq!(z.total_in(), zeros.len() as u64);
    let mut end = Vec::with_capacity(64);
    z.compress_vec(&[], &mut end, FlushCompress::Finish)
        .unwrap();
    let mut out = Vec::with_capacity(block.len() * 1024 + end.len());
    for _ in 0..GIB / zeros.len() {
        out.extend_from_slice(&block);
    }
    out.extend_from_slice(&end);
    Bytes::from(out)
}

fn limits(cpu_ms: u32, memory_mib: u32) -> Limits {
    Limits {
        cpu_ms,
        wall_ms: 60_000,
        memory_mib,
        subrequests: 50,
    }
}

async fn neighbour_ok(engine: &Engine, neighbour: &Arc<WorkerBundle>) {
    assert_eq!(
        run(engine, 0, neighbour, "/").await,
        (200, "hello".to_owned())
    );
}

/// The bomb inflated into one buffer: the memory limit ends it (the output
/// is charged slice by slice), not the process.
#[tokio::test]
async fn a_bomb_read_whole_ends_at_the_memory_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let bad = Arc::new(bundle_with(
        "t/bomb-whole",
        "export default { async fetch(request) {
            const inflated = request.body.pipeThrough(new DecompressionStream('deflate-raw'));
            const all = await new Response(inflated).arrayBuffer();
            return new Response(String(all.byteLength));
        } };",
        limits(60_000, 128),
        &[],
    ));
    let error = engine
        .execute(0, bad, post("/", Body::from(bomb())))
        .await
        .expect_err("1 GiB must not fit in 128 MiB");
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 128 }),
        "{error:?}"
    );
    neighbour_ok(&engine, &neighbour).await;
}

/// The bomb streamed to a client that reads a little: the decompressor
/// inflates only as far as the reader has taken (back-pressure), so neither
/// the worker nor the process holds the gigabyte.
#[tokio::test]
async fn a_bomb_streamed_to_a_slow_reader_inflates_only_what_is_read() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let bad = Arc::new(bundle_with(
        "t/bomb-stream",
        "export default { fetch(request) {
            return new Response(request.body.pipeThrough(new DecompressionStream('deflate-raw')));
        } };",
        limits(60_000, 64),
        &[],
    ));
    let response = engine
        .execute(0, bad, post("/", Body::from(bomb())))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut read = 0;
    while read < 4 << 20 {
        let chunk = body.next_chunk().await.unwrap().unwrap();
        assert!(chunk.iter().all(|b| *b == 0));
        read += chunk.len();
    }
    // Nothing more is read for a while: the worker must wait, not inflate
    // on (its 64 MiB would be gone in well under a second), and its thread
    // is free for the neighbour.
    for _ in 0..20 {
        neighbour_ok(&engine, &neighbour).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let more = body.next_chunk().await.unwrap().unwrap();
    assert!(!more.is_empty());
    drop(body);
    neighbour_ok(&engine, &neighbour).await;
}

/// Inflating and discarding the bomb costs CPU time, and that time is
/// charged: a 50 ms limit ends it long before the gigabyte.
#[tokio::test]
async fn a_bomb_read_and_discarded_ends_at_the_cpu_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let bad = Arc::new(bundle_with(
        "t/bomb-cpu",
        "export default { async fetch(request) {
            let total = 0;
            for await (const chunk of request.body.pipeThrough(new DecompressionStream('deflate-raw'))) total += chunk.length;
            return new Response(String(total));
        } };",
        limits(50, 128),
        &[],
    ));
    let error = engine
        .execute(0, bad, post("/", Body::from(bomb())))
        .await
        .expect_err("inflating 1 GiB takes more than 50 ms");
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 50 }),
        "{error:?}"
    );
    neighbour_ok(&engine, &neighbour).await;
}

/// Decoders fed garbage that never ends: a legacy TextDecoderStream and a
/// DecompressionStream of stored blocks that never finish (valid, so it
/// never fails). Both run until the CPU limit; the neighbour is unaffected.
#[tokio::test]
async fn endless_garbage_through_a_decoder_ends_at_the_cpu_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let sources = [
        // Random bytes, decoded as Shift_JIS.
        (
            "text",
            "crypto.getRandomValues(new Uint8Array(65536))",
            "new TextDecoderStream('sjis')",
        ),
        // A non-final stored block of 65,535 bytes, again and again.
        (
            "stored",
            "(() => { const b = new Uint8Array(65540); b.set([0, 0xff, 0xff, 0, 0]); return b; })()",
            "new DecompressionStream('deflate-raw')",
        ),
    ];
    for (name, chunk, decoder) in sources {
        let script = format!(
            "export default {{ async fetch() {{
                const source = new ReadableStream({{ pull(c) {{ c.enqueue({chunk}); }} }});
                let total = 0;
                for await (const piece of source.pipeThrough({decoder})) total += piece.length;
                return new Response(String(total));
            }} }};"
        );
        let bad = Arc::new(bundle_with(
            &format!("t/garbage-{name}"),
            &script,
            limits(100, 128),
            &[],
        ));
        neighbour_ok(&engine, &neighbour).await;
        let error = tokio::time::timeout(Duration::from_secs(60), engine.execute(0, bad, get("/")))
            .await
            .expect("the CPU limit ends it")
            .expect_err("it never ends by itself");
        assert!(
            matches!(error, ExecuteError::CpuLimit { limit_ms: 100 }),
            "{name}: {error:?}"
        );
        neighbour_ok(&engine, &neighbour).await;
    }
}

/// A compression stream is I/O of the request that made it: kept in a
/// global past its request, its codec is gone (and its memory given back),
/// and using it errors the stream with a TypeError.
#[tokio::test]
async fn a_compression_stream_ends_with_its_request() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "t/kept-stream",
        "let writer;
        export default { async fetch(request) {
            if (new URL(request.url).pathname === '/make') {
                writer = new CompressionStream('gzip').writable.getWriter();
                await writer.write(new Uint8Array(10));
                return new Response('made');
            }
            try { await writer.write(new Uint8Array(10)); return new Response('wrote'); }
            catch (e) { return new Response(`${e.name}: ${e.message}`); }
        } };",
        limits(1_000, 128),
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &worker, "/make").await,
        (200, "made".to_owned())
    );
    let (status, body) = run(&engine, 0, &worker, "/use").await;
    assert_eq!(status, 200);
    assert!(
        body.starts_with("TypeError: the compression stream has ended"),
        "{body}"
    );
}
