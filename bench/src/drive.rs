//! Driving the engine API in-process (comparisons 3, 4 and 5): start an
//! [`Engine`], send it requests from closed-loop clients, collect latencies.
//! The clients run on the bench's current-thread runtime, so they share the
//! two cores with the engine threads, as a node's gRPC listeners would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use http_body_util::BodyExt as _;
use isolane_engine::{Body, Engine, EngineConfig, EngineObserver, PoolMode, WorkerBundle};

use crate::stats::{median, percentile, ratio, us};
use crate::zipf::{Zipf, unit};

/// Counts what the engine reports: cache hits and misses, isolate creations.
#[derive(Default)]
pub struct Counters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub created: Mutex<Vec<(Duration, bool)>>,
    /// Per engine thread: live isolates and their V8 heap bytes, as last reported.
    pub threads: Mutex<Vec<(usize, usize)>>,
}

impl EngineObserver for Counters {
    fn isolate_cache(&self, _thread: usize, hit: bool) {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn isolate_created(&self, _thread: usize, duration: Duration, from_spare: bool) {
        if let Ok(mut created) = self.created.lock() {
            created.push((duration, from_spare));
        }
    }
    fn thread_isolates(&self, thread: usize, live: usize, heap: usize) {
        if let Ok(mut threads) = self.threads.lock() {
            if threads.len() <= thread {
                threads.resize(thread + 1, (0, 0));
            }
            threads[thread] = (live, heap);
        }
    }
}

impl Counters {
    /// Live isolates and V8 heap bytes over all threads.
    pub fn isolates(&self) -> (usize, usize) {
        self.threads.lock().map_or((0, 0), |threads| {
            threads
                .iter()
                .fold((0, 0), |(l, h), (live, heap)| (l + live, h + heap))
        })
    }
    pub fn take_created(&self) -> Vec<(Duration, bool)> {
        self.created
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

/// Starts an engine with `config`, counting into a fresh [`Counters`].
pub fn start(config: EngineConfig) -> anyhow::Result<(Engine, Arc<Counters>)> {
    let counters = Arc::new(Counters::default());
    let engine = Engine::start(config, counters.clone()).context("starting the engine")?;
    Ok((engine, counters))
}

/// An engine configuration for `mode` on `threads` threads (0: all cores).
pub fn config(mode: PoolMode, threads: usize) -> EngineConfig {
    EngineConfig {
        families: isolane_runtime::families(),
        threads,
        pool_mode: mode,
        queue_depth: 4096,
        // The I/O scenarios fetch from an upstream on loopback.
        egress: isolane_engine::EgressConfig::open(),
        ..EngineConfig::default()
    }
}

pub fn bundle(id: impl Into<String>, script: &str) -> Arc<WorkerBundle> {
    Arc::new(WorkerBundle::new(id, "r1", script))
}

/// One request, body read to the end; its latency, or an error when the
/// engine refused it or it did not answer 200.
pub async fn call(
    engine: &Engine,
    thread: usize,
    bundle: &Arc<WorkerBundle>,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let request = http::Request::builder()
        .uri("http://bench.test/")
        .body(Body::empty())?;
    let response = engine.execute(thread, bundle.clone(), request).await?;
    let status = response.status();
    let _ = response.into_body().collect().await?;
    let took = started.elapsed();
    anyhow::ensure!(status == http::StatusCode::OK, "status {status}");
    Ok(took)
}

/// How requests pick a worker and a thread.
#[derive(Debug, Clone, Copy)]
pub enum Pick {
    /// Request i goes to worker i mod n, arriving on thread i mod threads
    /// (every thread sees every worker: the same stream for every mode).
    RoundRobin,
    /// Worker drawn from a Zipf(s) over the workers, thread chosen by the
    /// router's jump hash of the worker id (what a node sees).
    Zipf(f64),
    /// Worker drawn uniformly, thread by jump hash.
    Uniform,
}

/// A closed-loop run: `concurrency` clients, each sending its next request
/// when the previous one answered, until `duration` passes or `max_requests`.
#[derive(Debug, Clone)]
pub struct Run {
    pub concurrency: usize,
    pub duration: Duration,
    pub max_requests: u64,
    pub pick: Pick,
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    /// Cores' worth of CPU the clients' thread and the engine threads used
    /// (CPU seconds ÷ wall seconds), when measured.
    pub client_cores: f64,
    pub engine_cores: f64,
}

impl RunResult {
    pub fn rps(&self) -> f64 {
        ratio(self.requests as f64, self.elapsed.as_secs_f64())
    }
    pub fn p50_us(&self) -> f64 {
        us(percentile(&self.latencies, 0.5))
    }
    pub fn p99_us(&self) -> f64 {
        us(percentile(&self.latencies, 0.99))
    }
}

/// Medians over rounds of a set of runs.
pub fn medians(runs: &[RunResult]) -> (f64, f64, f64, u64) {
    let pick = |f: fn(&RunResult) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    (
        pick(RunResult::rps),
        pick(RunResult::p50_us),
        pick(RunResult::p99_us),
        runs.iter().map(|r| r.errors).sum(),
    )
}

/// Runs `run` against `engine` over `workers`.
pub async fn drive(engine: &Engine, workers: &[Arc<WorkerBundle>], run: &Run) -> RunResult {
    let threads = engine.threads();
    let next = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let latencies = Mutex::new(Vec::new());
    let zipf = match run.pick {
        Pick::Zipf(s) => Some(Zipf::new(workers.len(), s)),
        _ => None,
    };
    let started = Instant::now();
    let deadline = started + run.duration;
    let client = |seed: u64| {
        let (next, errors, latencies, zipf) = (&next, &errors, &latencies, &zipf);
        async move {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut mine = Vec::with_capacity(1024);
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= run.max_requests {
                    break;
                }
                let (worker, thread) = match run.pick {
                    Pick::RoundRobin => {
                        let n = i as usize;
                        (&workers[n % workers.len()], n % threads)
                    }
                    Pick::Zipf(_) | Pick::Uniform => {
                        let u = unit(&mut rng);
                        let index = match zipf {
                            Some(z) => z.sample(u),
                            None => ((u * workers.len() as f64) as usize).min(workers.len() - 1),
                        };
                        let worker = &workers[index];
                        let thread =
                            isolane_placement::thread_for(&worker.id, threads as u32) as usize;
                        (worker, thread)
                    }
                };
                match call(engine, thread, worker).await {
                    Ok(took) => mine.push(took),
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if let Ok(mut all) = latencies.lock() {
                all.extend(mine);
            }
        }
    };
    futures::future::join_all((0..run.concurrency as u64).map(client)).await;
    let elapsed = started.elapsed();
    let latencies = latencies.into_inner().unwrap_or_default();
    RunResult {
        requests: latencies.len() as u64,
        errors: errors.into_inner(),
        elapsed,
        latencies,
        ..RunResult::default()
    }
}

/// Resident set size of this process (`VmRSS`) or its peak (`VmHWM`), bytes.
pub fn memory(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Polls `done` every millisecond until it holds, or fails after `deadline`.
pub async fn wait_for(deadline: Duration, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let until = Instant::now() + deadline;
    while !done() {
        anyhow::ensure!(
            Instant::now() < until,
            "condition not met within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// CPU time so far of this process's threads, in seconds: the calling
/// thread's (the clients', on the bench's current-thread runtime) and the
/// engine threads' (`isolane-engine-*`, every engine's) — from
/// `/proc/self/task/*/schedstat` (nanoseconds on CPU).
pub fn thread_cpu() -> (f64, f64) {
    let me = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    let (mut client, mut engine) = (0.0, 0.0);
    for task in tasks.flatten() {
        let path = task.path();
        let cpu = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |ns| ns / 1e9);
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if me.as_deref() == task.file_name().to_str() {
            client += cpu;
        } else if name.starts_with("isolane-engine") {
            engine += cpu;
        }
    }
    (client, engine)
}
