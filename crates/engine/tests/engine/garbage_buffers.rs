//! Buffers a Worker makes and drops are charged to its memory until V8
//! collects them. Under a 64 MiB limit, a Worker that makes 256 chunks of
//! 1 MiB, dropping each at once, and then one 24 MiB buffer holds little
//! at any moment: it answers, every time, because V8 collects the dead
//! chunks before its allocator's refusal becomes final. A Worker that keeps
//! its chunks still ends at its limit, and a neighbour of another namespace
//! on the same thread answers before, during and after.

use std::sync::Arc;

use isolane_engine::{ExecuteError, PoolMode};

use crate::support::*;

/// Makes `n` 1 MiB chunks (`keep`: kept in an array, else dropped at once),
/// then one 24 MiB buffer.
const CHUNKS: &str = "export default { fetch(request) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n'));
    const keep = url.searchParams.has('keep');
    const block = new Uint8Array(1 << 20);
    const kept = [];
    let made = 0;
    for (let i = 0; i < n; i++) {
      const chunk = i % 2 ? block.slice() : new Uint8Array(1 << 20);
      made += chunk.length;
      if (keep) kept.push(chunk);
    }
    const big = new Uint8Array(24 << 20);
    return new Response(`${made + big.length}`);
} };";

#[tokio::test]
async fn dropped_buffers_do_not_end_a_worker_that_holds_little() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let worker = Arc::new(bundle_with("t/chunks", CHUNKS, memory_limits(64), &[]));
    neighbour_ok(&engine, &neighbour).await;
    for n in [1, 16, 64, 256, 1024, 256] {
        let (status, body) = run(&engine, 0, &worker, &format!("/?n={n}")).await;
        assert_eq!(
            (status, body),
            (200, ((n << 20) + (24 << 20)).to_string()),
            "{n} dropped chunks"
        );
    }
    neighbour_ok(&engine, &neighbour).await;
    let (kept, during) = tokio::join!(
        engine.execute(0, worker.clone(), get("/?n=256&keep")),
        run(&engine, 0, &neighbour, "/"),
    );
    assert!(
        matches!(kept, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
        "{:?}",
        kept.map(|r| r.status())
    );
    assert_eq!(during, (200, "hello".to_owned()));
    neighbour_ok(&engine, &neighbour).await;
    let (status, _) = run(&engine, 0, &worker, "/?n=64").await;
    assert_eq!(status, 200, "a new isolate after the limit");
}
