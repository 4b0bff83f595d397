//! Comparison 5: density. Memory per idle isolate (RSS of this process
//! before and after warming N distinct workers on one thread), and 10,000
//! distinct workers cycling through the per-thread LRU under Zipf and
//! uniform traffic (hit ratio, latency, RSS).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use isolane_engine::{Engine, PoolMode};

use crate::drive::{self, Counters, Pick, Run};
use crate::report::{Section, Table, Target};
use crate::stats::{fmt_mib, fmt_rate, fmt_us, ratio};

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

/// Sizes and durations.
#[derive(Debug, Clone)]
pub struct Plan {
    pub idle: usize,
    pub distinct: usize,
    pub duration: Duration,
}

/// The engines: one thread, room for every idle isolate; and the default
/// shape (all cores, 100 warm isolates per thread) for the LRU runs.
pub struct Engines {
    idle: (Engine, std::sync::Arc<Counters>),
    lru: (Engine, std::sync::Arc<Counters>),
}

/// Starts the engines (call on the main thread first).
pub fn engines(plan: &Plan) -> anyhow::Result<Engines> {
    Ok(Engines {
        idle: drive::start(isolane_engine::EngineConfig {
            spare_isolates: 0,
            isolates_per_thread: plan.idle + 10,
            heap_budget_bytes: usize::MAX,
            ..drive::config(PoolMode::Pinned, 1)
        })?,
        lru: drive::start(drive::config(PoolMode::Pinned, 0))?,
    })
}

/// The results file that holds the measured RSS of one idle isolate, in
/// bytes (the fleet simulation prices its isolates with it).
pub const IDLE_ISOLATE_FILE: &str = "5-density.idle-isolate-bytes";

/// The section, and the RSS of one idle isolate in bytes.
pub async fn run(plan: &Plan, engines: &Engines) -> anyhow::Result<(Section, f64)> {
    // The LRU first, from a process with no isolates yet: memory freed by
    // the idle engine would otherwise be reused and hide its growth.
    let (lru, zipf) = lru(plan, engines).await?;
    let (mut section, per_isolate) = idle(plan, engines).await?;
    section.markdown.push_str(&lru);
    section.targets.extend(zipf);
    Ok((section, per_isolate))
}

/// Memory per idle isolate: RSS and V8 heap before and after warming
/// `plan.idle` workers on the idle engine's one thread.
async fn idle(plan: &Plan, engines: &Engines) -> anyhow::Result<(Section, f64)> {
    let mut md = String::new();
    let mut targets = Vec::new();

    // Idle isolates.
    let (engine, counters) = &engines.idle;
    drive::call(engine, 0, &drive::bundle("idle/warmup", HELLO)).await?;
    let rss_before = drive::memory("VmRSS:");
    let heap_before = counters.isolates().1;
    let started = Instant::now();
    for i in 0..plan.idle {
        drive::call(engine, 0, &drive::bundle(format!("idle/{i}"), HELLO)).await?;
    }
    let took = started.elapsed();
    // Let the thread finish its bookkeeping (gauges, GC) before reading RSS.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss = drive::memory("VmRSS:").saturating_sub(rss_before) as f64;
    let (live, heap) = counters.isolates();
    let heap = heap.saturating_sub(heap_before) as f64;
    let per_isolate = rss / plan.idle as f64;
    let _ = writeln!(
        md,
        "## 5. Density\n\n\
         ### Memory per idle isolate\n\n\
         {} distinct hello workers warmed one after another on one engine thread (no spares, \
         room for all); RSS of the process before and after, and the V8 used heap the engine \
         reports. {live} isolates live at the end; warming took {:.1} s.\n",
        plan.idle,
        took.as_secs_f64()
    );
    let mut table = Table::new(&[">what", ">total", ">per isolate"]);
    table.row(vec![
        "RSS increase".into(),
        fmt_mib(rss),
        format!("{:.0} KiB", per_isolate / 1024.0),
    ]);
    table.row(vec![
        "V8 used heap".into(),
        fmt_mib(heap),
        format!("{:.0} KiB", heap / plan.idle as f64 / 1024.0),
    ]);
    md.push_str(&table.render());
    md.push('\n');
    // Issue 35's goal (issue 7's was < 2 MiB).
    let target_bytes = 1.5 * f64::from(1 << 20);
    targets.push(Target::new(
        "idle isolate ≤ 1.5 MiB RSS",
        format!(
            "{:.2} MiB RSS per isolate ({:.0}% of the budget)",
            per_isolate / f64::from(1 << 20),
            per_isolate / target_bytes * 100.0
        ),
        per_isolate <= target_bytes,
    ));
    let section = Section {
        markdown: md,
        targets,
    };
    Ok((section, per_isolate))
}

/// Issue 35's density goal for the Zipf(1.1) mix.
const ZIPF_WARM_GOAL: f64 = 0.9;

/// Many workers through the LRU engine's pools, Zipf and uniform; the
/// Zipf row's warm share against [`ZIPF_WARM_GOAL`].
async fn lru(plan: &Plan, engines: &Engines) -> anyhow::Result<(String, Option<Target>)> {
    let mut md = String::new();
    let rss_lru_before = drive::memory("VmRSS:");
    let (engine, counters) = &engines.lru;
    let workers: Vec<_> = (0..plan.distinct)
        .map(|i| drive::bundle(format!("tenant-{}/worker-{i}", i % 97), HELLO))
        .collect();
    let config = engine.config();
    let _ = writeln!(
        md,
        "### {} distinct workers through the LRU\n\n\
         {} engine threads, {} warm isolates per thread (the default), 16 closed-loop clients \
         for {:.0} s per row; each request's thread is the router's jump hash of the worker \
         id. Latency includes the isolate creation of every miss. This runs before the idle \
         measurement above, so RSS growth is the process's over these runs (the bench's \
         own client state included).\n",
        plan.distinct,
        engine.threads(),
        config.isolates_per_thread,
        plan.duration.as_secs_f64()
    );
    let mut zipf_target = None;
    let mut table = Table::new(&[
        "traffic",
        ">requests",
        ">req/s",
        ">hit ratio",
        ">p50",
        ">p99",
        ">errors",
        ">isolates live",
        ">V8 heap",
        ">RSS growth",
    ]);
    for (name, pick) in [
        ("Zipf s = 1.1", Pick::Zipf(1.1)),
        ("uniform", Pick::Uniform),
    ] {
        let (hits, misses) = (
            counters.hits.load(Ordering::Relaxed),
            counters.misses.load(Ordering::Relaxed),
        );
        let result = drive::drive(
            engine,
            &workers,
            &Run {
                concurrency: 16,
                duration: plan.duration,
                max_requests: 10_000_000,
                pick,
            },
        )
        .await;
        let hits = counters.hits.load(Ordering::Relaxed) - hits;
        let misses = counters.misses.load(Ordering::Relaxed) - misses;
        eprintln!(
            "density {name}: {} requests, hits {hits} misses {misses}, p99 {:.0} µs",
            result.requests,
            result.p99_us()
        );
        let warm = ratio(hits as f64, (hits + misses) as f64);
        if matches!(pick, Pick::Zipf(_)) {
            zipf_target = Some(Target::new(
                format!(
                    "{} Zipf(1.1) Workers ≥ {:.0}% warm at the default warm capacity",
                    plan.distinct,
                    ZIPF_WARM_GOAL * 100.0
                ),
                format!(
                    "{:.1}% warm, {} isolates live",
                    warm * 100.0,
                    counters.isolates().0
                ),
                warm >= ZIPF_WARM_GOAL,
            ));
        }
        table.row(vec![
            name.to_owned(),
            result.requests.to_string(),
            fmt_rate(result.rps()),
            format!("{:.1}%", warm * 100.0),
            fmt_us(result.p50_us()),
            fmt_us(result.p99_us()),
            result.errors.to_string(),
            counters.isolates().0.to_string(),
            fmt_mib(counters.isolates().1 as f64),
            fmt_mib(drive::memory("VmRSS:").saturating_sub(rss_lru_before) as f64),
        ]);
    }
    md.push_str(&table.render());
    let _ = writeln!(
        md,
        "\nRSS of the bench process after these runs: {}.\n",
        fmt_mib(drive::memory("VmRSS:") as f64)
    );
    Ok((md, zipf_target))
}
