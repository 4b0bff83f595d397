//! New workers arriving in bursts on one engine thread, with the default
//! spares: how many first requests found a spare, their latency, and how
//! many spares the thread holds while idle before and after (issue 35,
//! "spare isolates sized to the miss rate"; docs/benchmark-history.md,
//! section 3).
//!
//! ```text
//! cargo build --release -p isolane-engine --example bursts
//! target/release/examples/bursts [BURSTS] [SIZE] [GAP_MS]   # default 20 bursts of 4, 250 ms apart
//! ```
//!
//! Every worker stays warm (at most the default 100 per thread), so the
//! isolates alive beyond them at the end are spares.
//!
//! ```text
//! ```
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use isolane_engine::{Body, Engine, EngineConfig, EngineObserver, WorkerBundle};

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

/// What the engine thread reports: isolates alive, first requests served
/// from a spare.
#[derive(Default)]
struct Seen {
    live: AtomicUsize,
    from_spare: AtomicUsize,
    created: Mutex<Vec<Duration>>,
}

impl EngineObserver for Seen {
    fn isolate_created(&self, _thread: usize, duration: Duration, from_spare: bool) {
        if from_spare {
            self.from_spare.fetch_add(1, Ordering::Relaxed);
        }
        self.created.lock().unwrap().push(duration);
    }
    fn thread_isolates(&self, _thread: usize, live: usize, _heap_bytes: usize) {
        self.live.store(live, Ordering::Relaxed);
    }
}

async fn first_request(engine: &Engine, id: String) -> Duration {
    let bundle = Arc::new(WorkerBundle::new(id, "r1", HELLO));
    let request = http::Request::builder()
        .uri("http://bench.test/")
        .body(Body::empty())
        .unwrap();
    let started = Instant::now();
    let response = engine.execute(0, bundle, request).await.unwrap();
    let _ = response.into_body().collect().await.unwrap();
    started.elapsed()
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at].as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bursts: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let gap = Duration::from_millis(args.next().and_then(|a| a.parse().ok()).unwrap_or(250));
    let seen = Arc::new(Seen::default());
    let config = EngineConfig {
        families: isolane_runtime::families(),
        threads: 1,
        pin_threads: false,
        ..EngineConfig::default()
    };
    let most = config.spare_isolates;
    assert!(
        bursts * size < config.isolates_per_thread,
        "more workers than stay warm"
    );
    let engine = Engine::start(config, seen.clone()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut warm = 0;
        // Idle, from the start: what the thread holds (all spares).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let idle_before = seen.live.load(Ordering::Relaxed);
        let mut firsts = Vec::new();
        for b in 0..bursts {
            let burst = (0..size).map(|i| first_request(&engine, format!("burst/{b}-{i}")));
            firsts.extend(futures::future::join_all(burst).await);
            warm += size;
            tokio::time::sleep(gap).await;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let idle_after = seen.live.load(Ordering::Relaxed).saturating_sub(warm);
        let from_spare = seen.from_spare.load(Ordering::Relaxed);
        println!(
            "spare_isolates {most}: {bursts} bursts of {size} new workers {} ms apart: \
             {from_spare}/{} first requests from a spare; first request p50 {:.2} ms, \
             p99 {:.2} ms; spares while idle: {idle_before} before, {idle_after} after",
            gap.as_millis(),
            firsts.len(),
            percentile(&mut firsts, 0.5),
            percentile(&mut firsts, 0.99),
        );
    });
    engine.shutdown();
}
