//! Listener modes compared: one gRPC listener per engine thread (each on its
//! own pinned current-thread runtime) against one listener on a
//! multi-threaded runtime handing requests to the engine threads.
//!
//! The client plays the router: one HTTP/2 connection per (client, thread),
//! `CONCURRENCY` callers per thread, each sending a small GET to a warm
//! worker and reading the whole answer, for `RUN`. Ignored by default; the
//! numbers in docs/node.md come from
//! `hack/cargo.sh test --release -p isolane-node --test node -- --ignored --nocapture bench`.

use std::time::{Duration, Instant};

use isolane_node::ListenerMode;

use crate::support::*;

const WARMUP: Duration = Duration::from_millis(500);
const RUN: Duration = Duration::from_secs(3);
const THREADS: usize = 2;

struct Sample {
    requests: usize,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

async fn measure(mode: ListenerMode, concurrency: usize) -> Sample {
    let node = start(Shape {
        threads: THREADS,
        max_inflight: 4096,
        listeners: mode,
        pin: true,
        ..Shape::default()
    });
    node.deploy(
        "bench/hello",
        "r1",
        "export default { fetch() { return new Response('ok'); } };",
    );
    let mut callers = Vec::new();
    let start = Instant::now() + WARMUP;
    let end = start + RUN;
    for thread in 0..THREADS {
        let client = node.client(thread).await;
        for _ in 0..concurrency {
            let mut client = client.clone();
            callers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let sent = Instant::now();
                    if sent >= end {
                        return latencies;
                    }
                    let answer = call(
                        &mut client,
                        head("GET", "bench/hello", "r1", thread as u32),
                        &[],
                    )
                    .await
                    .unwrap();
                    assert_eq!(answer.head.status, 200);
                    if sent >= start {
                        latencies.push(sent.elapsed());
                    }
                }
            }));
        }
    }
    let mut latencies = Vec::new();
    for caller in callers {
        latencies.extend(caller.await.unwrap());
    }
    latencies.sort();
    Sample {
        requests: latencies.len(),
        latencies,
        elapsed: RUN,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test: run with --release -- --ignored --nocapture bench"]
async fn bench_listener_modes() {
    println!("| listeners | callers per thread | requests/s | p50 | p99 |");
    println!("| --- | --- | --- | --- | --- |");
    for concurrency in [1, 8, 32] {
        for mode in [
            ListenerMode::Single,
            ListenerMode::PerThread,
            ListenerMode::Single,
            ListenerMode::PerThread,
        ] {
            let sample = measure(mode, concurrency).await;
            println!(
                "| {mode} | {concurrency} | {:.0} | {:?} | {:?} |",
                sample.requests as f64 / sample.elapsed.as_secs_f64(),
                percentile(&sample.latencies, 0.5),
                percentile(&sample.latencies, 0.99),
            );
        }
    }
}
