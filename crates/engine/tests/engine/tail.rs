//! Tails: one event per invocation of a tailed Worker, with its console
//! lines and uncaught exceptions; log budgets per invocation; a slow reader
//! loses events (counted) and never slows requests; a log flood beside a
//! benign Worker leaves the benign one answering and the node's log bounded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{
    BYTES_PER_INVOCATION, LINES_PER_INVOCATION, Limits, MAX_LINE_BYTES, PoolMode, TAIL_QUEUE,
    TailEvent, TailItem, TailSubscription,
};

use crate::logs;
use crate::support::*;

/// The next event of `tail`, within a deadline.
async fn next_event(tail: &mut TailSubscription) -> Arc<TailEvent> {
    let item = tokio::time::timeout(Duration::from_secs(30), tail.next())
        .await
        .expect("an event within 30 s")
        .expect("the tail is open");
    match item {
        TailItem::Event(event) => event,
        TailItem::Dropped(n) => panic!("unexpected drop note: {n}"),
    }
}

/// The status a client sees, the engine's own answers included.
async fn status(
    engine: &isolane_engine::Engine,
    worker: &Arc<isolane_engine::WorkerBundle>,
    path: &str,
) -> u16 {
    match engine.execute(0, worker.clone(), get(path)).await {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.status().as_u16(),
    }
}

const TALKER: &str = "console.log('loaded');
export default { async fetch(request) {
    const path = new URL(request.url).pathname;
    console.log('hi', { a: 1, b: [1, 2] });
    console.warn('careful');
    if (path === '/throw') null.x;
    if (path === '/later') { setTimeout(() => { throw new RangeError('in a timer'); }, 1); await new Promise((r) => setTimeout(r, 5)); }
    if (path === '/spin') { for (;;) {} }
    return new Response('ok', { status: 201 });
} };";

/// An invocation is one event: who ran it, how it ended, its lines in
/// order (the top-level code's first), and what it did not catch.
#[tokio::test]
async fn an_invocation_is_one_event_with_its_lines_and_exceptions() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let limits = Limits {
        cpu_ms: 200,
        ..Limits::default()
    };
    let worker = Arc::new(bundle_with("tenant-a/talker", TALKER, limits, &[]));
    let mut tail = engine.tail(Some(&worker.id)).unwrap();

    assert_eq!(run(&engine, 0, &worker, "/ok?x=1").await.0, 201);
    let event = next_event(&mut tail).await;
    assert_eq!(
        (
            event.worker.as_str(),
            event.namespace.as_str(),
            event.revision.as_str(),
            event.outcome.as_str(),
            event.status,
            event.method.as_str(),
            event.url.as_str(),
        ),
        (
            "tenant-a/talker",
            "tenant-a",
            worker.revision.as_str(),
            "ok",
            201,
            "GET",
            "/ok?x=1"
        )
    );
    let lines: Vec<(&str, &str)> = event
        .logs
        .iter()
        .map(|l| (l.level.as_str(), l.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            ("log", "loaded"),
            ("log", "hi { a: 1, b: [ 1, 2 ] }"),
            ("warn", "careful")
        ]
    );
    assert!(
        event.wall_ms >= event.cpu_ms && event.cpu_ms > 0.0,
        "{event:?}"
    );
    assert!(event.timestamp_ms > 0 && event.exceptions.is_empty());

    assert_eq!(status(&engine, &worker, "/throw").await, 500);
    let event = next_event(&mut tail).await;
    assert_eq!((event.outcome.as_str(), event.status), ("exception", 500));
    assert_eq!(event.logs.len(), 2, "top-level lines go to one event only");
    assert_eq!(event.exceptions.len(), 1, "{event:?}");
    assert_eq!(event.exceptions[0].name, "TypeError");
    assert!(event.exceptions[0].message.contains("null"), "{event:?}");

    assert_eq!(run(&engine, 0, &worker, "/later").await.0, 201);
    let event = next_event(&mut tail).await;
    assert_eq!(event.exceptions.len(), 1, "{event:?}");
    assert_eq!(event.exceptions[0].name, "RangeError");
    assert_eq!(event.exceptions[0].message, "in a timer");

    assert_eq!(status(&engine, &worker, "/spin").await, 503);
    let event = next_event(&mut tail).await;
    assert_eq!((event.outcome.as_str(), event.status), ("cpu_limit", 503));
    assert_eq!(event.logs.len(), 2, "lines before the limit are kept");

    // A tail of another Worker sees none of this one's invocations.
    let other = bundle("tenant-b/quiet", HELLO);
    let mut others = engine.tail(Some(&other.id)).unwrap();
    assert_eq!(run(&engine, 0, &worker, "/").await.0, 201);
    assert_eq!(run(&engine, 0, &other, "/").await.0, 200);
    assert_eq!(next_event(&mut others).await.worker, "tenant-b/quiet");
    assert_eq!(next_event(&mut tail).await.worker, "tenant-a/talker");
}

/// A script that does not load is an invocation that failed: its event
/// carries the error.
#[tokio::test]
async fn a_script_that_does_not_load_is_an_exception_event() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("tenant-a/broken", "export default { fetch() { return ; } ;");
    let mut tail = engine.tail(Some(&worker.id)).unwrap();
    let _ = engine.execute(0, worker.clone(), get("/")).await;
    let event = next_event(&mut tail).await;
    assert_eq!(event.outcome, "exception");
    assert_eq!(event.exceptions.len(), 1, "{event:?}");
}

/// A reader that does not read loses the events past its queue: counted
/// (in the observer and in one note), and the requests never waited.
#[tokio::test]
async fn a_slow_reader_drops_events_and_requests_never_wait() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let worker = bundle("tenant-a/busy", HELLO);
    let mut tail = engine.tail(None).unwrap();
    let extra = 10;
    for _ in 0..TAIL_QUEUE + extra {
        assert_eq!(run(&engine, 0, &worker, "/").await.0, 200);
    }
    // The last event goes out just after its response: wait for its drop.
    let deadline = Instant::now() + Duration::from_secs(30);
    while recorder
        .tail_dropped
        .load(std::sync::atomic::Ordering::Relaxed)
        < extra as u64
    {
        assert!(Instant::now() < deadline, "the drops were not counted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    match tail.next().await {
        Some(TailItem::Dropped(n)) => assert_eq!(n, extra as u64),
        other => panic!("expected a drop note, got {other:?}"),
    }
    for _ in 0..TAIL_QUEUE {
        next_event(&mut tail).await;
    }
    assert_eq!(
        recorder
            .tail_dropped
            .load(std::sync::atomic::Ordering::Relaxed),
        extra as u64
    );
}

/// A Worker has at most `MAX_TAILS_PER_WORKER` tails open on an engine; a
/// tail that closes frees its place; other Workers' tails are not counted.
#[tokio::test]
async fn a_worker_s_tails_are_bounded() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let mut open: Vec<_> = (0..isolane_engine::MAX_TAILS_PER_WORKER)
        .map(|_| engine.tail(Some("tenant-a/popular")).unwrap())
        .collect();
    let refused = engine.tail(Some("tenant-a/popular")).unwrap_err();
    assert!(
        refused.to_string().contains("already has 10 tails"),
        "{refused}"
    );
    assert!(engine.tail(Some("tenant-b/other")).is_ok());
    open.pop();
    assert!(engine.tail(Some("tenant-a/popular")).is_ok());
}

const FLOOD: &str = "export default { fetch(request) {
    const kib = 'x'.repeat(1024);
    for (let i = 0; i < 1024; i++) console.log(i, kib);
    console.log('y'.repeat(1024 * 1024));
    if (new URL(request.url).pathname === '/throw') throw new Error('z'.repeat(100000));
    return new Response('flooded');
} };";

const GIANT: &str = "export default { fetch() {
    const s = 'g'.repeat(10000);
    const level = (make) => Object.fromEntries(Array.from({ length: 100 }, (_, i) => ['k' + i, make()]));
    const giant = level(() => level(() => level(() => s)));
    console.log(giant);
    console.log('%o', giant, giant, giant);
    return new Response('formatted');
} };";

/// A Worker that writes 1 MiB of console output per request, in a loop,
/// beside a benign Worker on the same thread: the benign Worker answers
/// before, during and after; the flood's lines past the budget are dropped
/// and counted; a huge line is cut; formatting a giant object stays cheap;
/// and the node's own log gets nothing of the console lines and a bounded
/// trickle of the exceptions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_is_dropped_and_the_neighbour_and_node_log_are_fine() {
    logs::capture();
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let flood = bundle_with(
        "tenant-flood/flood",
        FLOOD,
        Limits {
            cpu_ms: 30_000,
            wall_ms: 60_000,
            ..Limits::default()
        },
        &[],
    );
    let flood = Arc::new(flood);
    let giant = Arc::new(bundle_with(
        "tenant-flood/giant",
        GIANT,
        Limits {
            cpu_ms: 30_000,
            wall_ms: 60_000,
            ..Limits::default()
        },
        &[],
    ));
    let neighbour = bundle("tenant-good/hello", HELLO);
    let mut flood_tail = engine.tail(Some(&flood.id)).unwrap();
    let mut giant_tail = engine.tail(Some(&giant.id)).unwrap();

    neighbour_ok(&engine, &neighbour).await;
    // The neighbour's latency alone, to compare with its latency beside
    // the flood (printed, not asserted: machines are noisy).
    let mut before = Vec::new();
    for _ in 0..50 {
        let sent = Instant::now();
        neighbour_ok(&engine, &neighbour).await;
        before.push(sent.elapsed());
    }
    let started = Instant::now();
    let rounds = 8;
    let flooding = {
        let (engine, flood) = (engine.clone(), flood.clone());
        tokio::spawn(async move {
            for i in 0..rounds {
                let path = if i % 2 == 0 { "/" } else { "/throw" };
                let _ = engine.execute(0, flood.clone(), get(path)).await;
            }
        })
    };
    let mut beside = Vec::new();
    while !flooding.is_finished() {
        let sent = Instant::now();
        neighbour_ok(&engine, &neighbour).await;
        beside.push(sent.elapsed());
    }
    let during = beside.len();
    flooding.await.unwrap();
    assert_eq!(
        run(&engine, 0, &giant, "/").await,
        (200, "formatted".to_owned())
    );
    neighbour_ok(&engine, &neighbour).await;
    let elapsed = started.elapsed();

    let (mut kept_bytes, mut dropped) = (0, 0);
    for _ in 0..rounds {
        let event = next_event(&mut flood_tail).await;
        assert!(event.logs.len() <= LINES_PER_INVOCATION);
        let bytes: usize = event.logs.iter().map(|l| l.message.len()).sum();
        assert!(bytes <= BYTES_PER_INVOCATION, "{bytes}");
        assert!(event.dropped_lines > 0);
        kept_bytes += bytes;
        dropped += event.dropped_lines;
    }
    let giant_lines = next_event(&mut giant_tail).await.logs.clone();
    assert_eq!(giant_lines.len(), 2);
    for line in &giant_lines {
        assert!(
            line.message.len() <= MAX_LINE_BYTES + 64,
            "{}",
            line.message.len()
        );
    }
    let counted: u64 = recorder
        .log_dropped
        .lock()
        .unwrap()
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(counted, dropped, "the metric counts what the events say");

    // What a node writes at its default level (info): debug lines are
    // per-request bookkeeping, off by default.
    let written: Vec<_> = logs::for_worker(&flood.id)
        .into_iter()
        .filter(|e| e.level <= tracing::Level::INFO)
        .collect();
    let node_log: usize = written
        .iter()
        .map(|e| e.message.len() + e.fields.len())
        .sum();
    let node_lines = written.len();
    let console_in_node_log = logs::for_worker(&flood.id)
        .iter()
        .any(|e| e.message.contains("xxxxxxxx") || e.fields.contains("xxxxxxxx"));
    println!(
        "log flood: {rounds} requests x 2 MiB of console output in {:.1} s; kept {} KiB in {rounds} events, dropped {dropped} lines; node log: {node_lines} lines, {node_log} bytes; the neighbour answered {during} times during the flood",
        elapsed.as_secs_f64(),
        kept_bytes / 1024
    );
    println!(
        "log flood: the neighbour's latency alone p50 {:.2} ms, p99 {:.2} ms; beside the flood p50 {:.2} ms, p99 {:.2} ms",
        millis(&mut before, 0.5),
        millis(&mut before, 0.99),
        millis(&mut beside, 0.5),
        millis(&mut beside, 0.99),
    );
    assert!(
        !console_in_node_log,
        "console lines never reach the node's log"
    );
    // Exceptions reach the node's log cut short (~1.3 KiB each at most)
    // and at most NODE_LOG_PER_SECOND a second.
    assert!(node_lines <= rounds, "{node_lines}");
    assert!(node_log <= node_lines * 2048, "{node_log}");
}

/// The `q` quantile of `times`, in milliseconds (0 for none).
fn millis(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    let index = ((times.len() as f64 * q).ceil() as usize).saturating_sub(1);
    times.get(index).map_or(0.0, |t| t.as_secs_f64() * 1000.0)
}

/// The runtime's non-ASCII text (`build.rs` writes it as `\u` escapes so
/// each isolate keeps its sources as one-byte strings) reads as before: a
/// long string is cut with `…`, and a Worker's non-ASCII output is its own.
#[tokio::test]
async fn the_runtime_text_is_unchanged_by_its_ascii_sources() {
    const LONG: &str = "export default { async fetch() {
        console.log(['x'.repeat(10001)]);
        console.log('café — ok');
        return new Response('ok');
    } };";
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("tenant-a/long", LONG);
    let mut tail = engine.tail(Some(&worker.id)).unwrap();
    assert_eq!(run(&engine, 0, &worker, "/").await.0, 200);
    let event = next_event(&mut tail).await;
    let lines: Vec<&str> = event.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    // One inspected string is cut at 10,000 characters, then `…`.
    assert!(
        lines[0].contains(&format!("{}…'", "x".repeat(10000))),
        "{}",
        &lines[0][..40]
    );
    assert!(!lines[0].contains(&"x".repeat(10001)));
    assert_eq!(lines[1], "café — ok");
}
