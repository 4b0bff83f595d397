//! Each limit stops its worker within bounds, answers with a clear status,
//! and leaves the next request to another worker on the same thread healthy.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{ExecuteError, Limits, PoolMode, TerminationReason};

use crate::support::*;

fn limits() -> Limits {
    limits_cpu(50)
}

fn limits_cpu(cpu_ms: u32) -> Limits {
    Limits {
        cpu_ms,
        // Generous: the limit under test must be what stops the script, even on a
        // loaded machine running a debug build.
        wall_ms: 30_000,
        memory_mib: 32,
        subrequests: 50,
    }
}

/// Limits for the wall-time tests: a short wall limit, CPU no more than that.
fn limits_wall() -> Limits {
    Limits {
        cpu_ms: 1_000,
        wall_ms: 1_000,
        memory_mib: 32,
        subrequests: 50,
    }
}

/// Runs `script`, expects `check` on its error, then a healthy neighbour.
async fn breach(
    script: &str,
    check: impl Fn(&ExecuteError) -> bool,
    within: Duration,
) -> Arc<Recorder> {
    breach_with(script, limits(), check, within).await
}

async fn breach_with(
    script: &str,
    limits: Limits,
    check: impl Fn(&ExecuteError) -> bool,
    within: Duration,
) -> Arc<Recorder> {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let bad = Arc::new(bundle_with("t/bad", script, limits, &[]));
    let started = Instant::now();
    let error = engine.execute(0, bad.clone(), get("/")).await.unwrap_err();
    let took = started.elapsed();
    assert!(check(&error), "unexpected error: {error:?}");
    assert!(took < within, "took {took:?}, limit {within:?}");
    // The neighbour on the same thread is unaffected.
    let good = bundle("t/good", HELLO);
    assert_eq!(run(&engine, 0, &good, "/").await, (200, "hello".to_owned()));
    // And the bad worker gets a fresh isolate next time (still failing, still bounded).
    let again = engine.execute(0, bad, get("/")).await.unwrap_err();
    assert!(check(&again), "unexpected error the second time: {again:?}");
    recorder
}

#[tokio::test]
async fn an_infinite_loop_hits_the_cpu_limit() {
    let recorder = breach(
        "export default { fetch() { for (;;) {} } };",
        |e| {
            matches!(e, ExecuteError::CpuLimit { limit_ms: 50 })
                && e.status() == 503
                && e.reason() == "cpu_limit"
        },
        Duration::from_secs(20),
    )
    .await;
    assert!(
        recorder
            .terminations
            .lock()
            .unwrap()
            .contains(&TerminationReason::CpuLimit)
    );
}

#[tokio::test]
async fn an_async_busy_loop_hits_the_cpu_limit() {
    breach(
        "export default { async fetch() { for (;;) { await null; } } };",
        |e| matches!(e, ExecuteError::CpuLimit { .. }),
        Duration::from_secs(20),
    )
    .await;
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit() {
    // CPU is plentiful here so that memory is the limit that stops it.
    let recorder = breach_with(
        "export default { fetch() { const keep = []; for (;;) { keep.push(new Array(100000).fill({ a: Math.random() })); } } };",
        limits_cpu(20_000),
        |e| matches!(e, ExecuteError::MemoryLimit { limit_mib: 32 }) && e.status() == 503,
        Duration::from_secs(25),
    )
    .await;
    assert!(
        recorder
            .terminations
            .lock()
            .unwrap()
            .contains(&TerminationReason::MemoryLimit)
    );
}

#[tokio::test]
async fn deep_recursion_is_an_exception() {
    breach(
        "function f(n) { return f(n + 1) + 1; } export default { fetch() { return new Response(String(f(0))); } };",
        |e| matches!(e, ExecuteError::Exception { message } if message.contains("call stack")),
        // A cold isolate of a debug build on a loaded machine, then the
        // overflow: seconds at worst; a hang would be the wall limit's 30 s.
        Duration::from_secs(20),
    )
    .await;
}

#[tokio::test]
async fn a_giant_string_is_stopped() {
    breach(
        "export default { fetch() { let s = 'x'; for (;;) { s = s + s; } } };",
        |e| matches!(e, ExecuteError::Exception { message } if message.contains("Invalid string length"))
            || matches!(e, ExecuteError::MemoryLimit { .. }),
        Duration::from_secs(20),
    )
    .await;
}

#[tokio::test]
async fn a_timer_that_never_fires_hits_the_wall_limit() {
    let recorder = breach_with(
        "export default { fetch() { return new Promise((resolve) => setTimeout(() => resolve(new Response('late')), 60000)); } };",
        limits_wall(),
        |e| matches!(e, ExecuteError::WallTimeout { limit_ms: 1_000 }) && e.status() == 504,
        Duration::from_secs(20),
    )
    .await;
    assert!(
        recorder
            .terminations
            .lock()
            .unwrap()
            .contains(&TerminationReason::WallTimeout)
    );
}

/// A local server that accepts connections and never answers.
async fn black_hole() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

#[tokio::test]
async fn a_thousand_pending_fetches_hit_the_subrequest_limit() {
    let addr = black_hole().await;
    let script = format!(
        "export default {{ async fetch() {{
            const pending = [];
            let refused = 0;
            for (let i = 0; i < 1000; i++) {{
                pending.push(fetch('http://{addr}/' + i).catch((e) => {{ refused++; return String(e.message); }}));
            }}
            const first = await Promise.race(pending.slice(50));
            return new Response(refused + ' ' + first);
        }} }};"
    );
    let (engine, _) = engine(1, PoolMode::Pinned);
    // Starting a thousand fetches takes real CPU in a debug build.
    let worker = Arc::new(bundle_with("t/fanout", &script, limits_cpu(5_000), &[]));
    let (status, body) = text(engine.execute(0, worker, get("/")).await).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("950 Too many subrequests"), "{body}");
    let good = bundle("t/good", HELLO);
    assert_eq!(run(&engine, 0, &good, "/").await, (200, "hello".to_owned()));
}

#[tokio::test]
async fn pending_fetches_end_at_the_wall_limit() {
    let addr = black_hole().await;
    let script = format!(
        "export default {{ async fetch() {{
            const all = [];
            for (let i = 0; i < 1000; i++) all.push(fetch('http://{addr}/').catch(() => null));
            await Promise.all(all);
            return new Response('never');
        }} }};"
    );
    breach_with(
        &script,
        limits_wall(),
        |e| matches!(e, ExecuteError::WallTimeout { .. }),
        Duration::from_secs(20),
    )
    .await;
}

#[tokio::test]
async fn a_small_memory_limit_holds_in_a_spare_made_for_the_default() {
    // Spares are made with the default 128 MiB heap; a 16 MiB worker takes one
    // and must still be stopped by its own limit.
    let limits = Limits {
        memory_mib: 16,
        ..limits_cpu(20_000)
    };
    let recorder = breach_with(
        "export default { fetch() { const keep = []; for (;;) { keep.push(new Array(100000).fill({ a: Math.random() })); } } };",
        limits,
        |e| matches!(e, ExecuteError::MemoryLimit { limit_mib: 16 }),
        Duration::from_secs(25),
    )
    .await;
    // The first request (the 16 MiB worker's) found the thread's one spare.
    assert!(
        recorder
            .from_spare
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1,
        "the worker ran in a spare"
    );
}

#[tokio::test]
async fn every_redirect_hop_is_a_subrequest() {
    // A server that redirects every request to itself.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0_u8; 4096];
                let _ = stream.read(&mut buf).await;
                let answer = "HTTP/1.1 302 Found\r\nlocation: /again\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    let script = format!(
        "export default {{ async fetch() {{
            try {{ await fetch('http://{addr}/'); return new Response('followed'); }}
            catch (e) {{ return new Response(e.message); }}
        }} }};"
    );
    let (engine, _) = engine(1, PoolMode::Pinned);
    let limits = Limits {
        subrequests: 3,
        ..limits_cpu(5_000)
    };
    let worker = Arc::new(bundle_with("t/redirects", &script, limits, &[]));
    let (status, body) = text(engine.execute(0, worker, get("/")).await).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("Too many subrequests"), "{body}");
}
