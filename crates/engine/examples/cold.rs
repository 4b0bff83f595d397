//! A small, repeatable workload for profilers (callgrind, perf): `n`
//! requests on one engine thread, each to a never-seen hello worker — or,
//! with `warm`, all to the same one.
//!
//! ```text
//! cargo build --release -p isolane-engine --example cold
//! valgrind --tool=callgrind target/release/examples/cold 20 2        # 20 workers, 2 spares
//! valgrind --tool=callgrind target/release/examples/cold 2000 2 warm # one worker, 2000 requests
//! ```
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use isolane_engine::{Body, Engine, EngineConfig, Limits, NoopObserver, WorkerBundle};

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let spares: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let warm = args.next().is_some_and(|a| a == "warm");
    let engine = Engine::start(
        EngineConfig {
            families: isolane_runtime::families(),
            threads: 1,
            pin_threads: false,
            spare_isolates: spares,
            ..EngineConfig::default()
        },
        Arc::new(NoopObserver),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut samples = Vec::with_capacity(n);
    rt.block_on(async {
        for i in 0..n {
            let id = if warm {
                "warm".to_owned()
            } else {
                format!("cold/{i}")
            };
            let mut bundle = WorkerBundle::new(id, "r1", HELLO);
            // Generous limits: under valgrind everything runs ~50× slower.
            bundle.limits = Limits {
                cpu_ms: 60_000,
                wall_ms: 600_000,
                ..Limits::default()
            };
            let bundle = Arc::new(bundle);
            let request = http::Request::builder()
                .uri("http://bench.test/")
                .body(Body::empty())
                .unwrap();
            let started = Instant::now();
            let response = engine.execute(0, bundle, request).await.unwrap();
            let _ = response.into_body().collect().await.unwrap();
            samples.push(started.elapsed());
            if !warm {
                // Room for the engine thread to refill its spares between requests.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    samples.sort();
    println!(
        "{n} {} requests, {spares} spares: p50 {:.1} µs, min {:.1} µs",
        if warm { "warm" } else { "cold" },
        samples[n / 2].as_secs_f64() * 1e6,
        samples[0].as_secs_f64() * 1e6
    );
    engine.shutdown();
}
