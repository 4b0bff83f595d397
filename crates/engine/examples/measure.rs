//! Measures the engine: isolate creation (snapshot → context, and the spare
//! path), the first request to a never-seen worker, warm request latency per
//! pool mode, and memory per idle isolate.
//!
//! ```text
//! source ../shared/v8/env.sh   # offline V8
//! cargo run --release -p isolane-engine --example measure [idle_isolates]
//! ```
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use isolane_engine::{Body, Engine, EngineConfig, EngineObserver, PoolMode, WorkerBundle};

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

#[derive(Default)]
struct Timings {
    created: Mutex<Vec<(Duration, bool)>>,
    live: AtomicUsize,
    heap: AtomicUsize,
}

impl EngineObserver for Timings {
    fn isolate_created(&self, _thread: usize, duration: Duration, from_spare: bool) {
        self.created.lock().unwrap().push((duration, from_spare));
    }
    fn thread_isolates(&self, _thread: usize, live: usize, heap: usize) {
        self.live.store(live, Ordering::Relaxed);
        self.heap.store(heap, Ordering::Relaxed);
    }
}

fn bundle(id: String) -> Arc<WorkerBundle> {
    Arc::new(WorkerBundle::new(id, "r1", HELLO))
}

fn request() -> http::Request<Body> {
    http::Request::builder()
        .uri("http://bench.test/")
        .body(Body::empty())
        .unwrap()
}

async fn call(engine: &Engine, thread: usize, bundle: &Arc<WorkerBundle>) -> Duration {
    let started = Instant::now();
    let response = engine
        .execute(thread, bundle.clone(), request())
        .await
        .unwrap();
    let _ = response.into_body().collect().await.unwrap();
    started.elapsed()
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at]
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn start(mode: PoolMode, threads: usize, spares: usize, capacity: usize) -> (Engine, Arc<Timings>) {
    let timings = Arc::new(Timings::default());
    let engine = Engine::start(
        EngineConfig {
            families: isolane_runtime::families(),
            threads,
            pool_mode: mode,
            spare_isolates: spares,
            isolates_per_thread: capacity,
            heap_budget_bytes: usize::MAX,
            queue_depth: 4096,
            ..EngineConfig::default()
        },
        timings.clone(),
    )
    .unwrap();
    (engine, timings)
}

fn main() {
    let idle: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // 1. Engine start (V8 init + snapshot build, once per process).
    let started = Instant::now();
    let (engine, timings) = start(PoolMode::Pinned, 1, 0, 10_000);
    println!(
        "engine start (V8 init + snapshot of {} runtime files + 1 thread): {:.1} ms",
        isolane_engine::runtime_files().len(),
        started.elapsed().as_secs_f64() * 1e3
    );

    // 2. Never-seen workers without spares: isolate + context from the
    //    snapshot, then compile + run, then the request.
    let mut first = Vec::new();
    rt.block_on(async {
        for i in 0..200 {
            first.push(call(&engine, 0, &bundle(format!("cold/{i}"))).await);
            // Let the thread settle (GC, spare refill) between cold starts.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let mut created: Vec<Duration> = timings
        .created
        .lock()
        .unwrap()
        .drain(..)
        .map(|(d, _)| d)
        .collect();
    println!(
        "no spare: isolate ready (snapshot→context→compile→run) p50 {} p99 {}; first request p50 {} p99 {}",
        us(percentile(&mut created, 0.5)),
        us(percentile(&mut created, 0.99)),
        us(percentile(&mut first, 0.5)),
        us(percentile(&mut first, 0.99)),
    );
    engine.shutdown();

    // 3. Same with spares: a never-seen worker pays compile + run only
    //    (the spare is refilled after the response).
    let (engine, timings) = start(PoolMode::Pinned, 1, 2, 10_000);
    let mut first = Vec::new();
    rt.block_on(async {
        for i in 0..200 {
            first.push(call(&engine, 0, &bundle(format!("spare/{i}"))).await);
            // The spare is refilled after each response; let that finish.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let mut spare: Vec<Duration> = timings
        .created
        .lock()
        .unwrap()
        .drain(..)
        .filter(|(_, s)| *s)
        .map(|(d, _)| d)
        .collect();
    println!(
        "spare: isolate ready (compile→run) p50 {} p99 {} ({} of 200 from a spare); first request p50 {} p99 {}",
        us(percentile(&mut spare, 0.5)),
        us(percentile(&mut spare, 0.99)),
        spare.len(),
        us(percentile(&mut first, 0.5)),
        us(percentile(&mut first, 0.99)),
    );
    engine.shutdown();

    // 4. Warm latency per pool mode, sequential, from a client thread
    //    (includes the hand-off to the engine thread and back).
    for mode in [PoolMode::Pinned, PoolMode::Shared, PoolMode::Legacy] {
        let (engine, _) = start(mode, 2, 2, 100);
        let workers: Vec<_> = (0..2).map(|i| bundle(format!("warm/{i}"))).collect();
        let mut samples = Vec::new();
        rt.block_on(async {
            for i in 0..200 {
                call(&engine, i % 2, &workers[i % 2]).await;
            }
            let n = if mode == PoolMode::Legacy {
                2_000
            } else {
                20_000
            };
            for i in 0..n {
                // Thread 0 for worker 0, thread 1 for worker 1 — except that
                // in shared mode the thread a request lands on is not its
                // isolate's: send every other request to the "wrong" thread.
                let thread = if mode == PoolMode::Shared {
                    (i / 2) % 2
                } else {
                    i % 2
                };
                samples.push(call(&engine, thread, &workers[i % 2]).await);
            }
        });
        let total: Duration = samples.iter().sum();
        println!(
            "warm {mode:>6}: p50 {} p99 {} mean {} ({} requests)",
            us(percentile(&mut samples, 0.5)),
            us(percentile(&mut samples, 0.99)),
            us(total / samples.len() as u32),
            samples.len()
        );
        engine.shutdown();
    }

    // 5. Memory per idle isolate: `idle` distinct warm workers on one thread.
    let (engine, timings) = start(PoolMode::Pinned, 1, 0, idle + 10);
    rt.block_on(async {
        call(&engine, 0, &bundle("mem/warmup".to_owned())).await;
    });
    let before = rss_bytes();
    let heap_before = timings.heap.load(Ordering::Relaxed);
    let started = Instant::now();
    rt.block_on(async {
        for i in 0..idle {
            call(&engine, 0, &bundle(format!("mem/{i}"))).await;
        }
    });
    let took = started.elapsed();
    let after = rss_bytes();
    let live = timings.live.load(Ordering::Relaxed);
    let heap = timings.heap.load(Ordering::Relaxed) - heap_before;
    println!(
        "{idle} idle isolates ({live} live) in {:.2} s: RSS +{:.1} MiB = {:.0} KiB per isolate; V8 used heap {:.0} KiB per isolate",
        took.as_secs_f64(),
        (after - before) as f64 / (1 << 20) as f64,
        (after - before) as f64 / idle as f64 / 1024.0,
        heap as f64 / idle as f64 / 1024.0,
    );
    engine.shutdown();
}
