//! Comparison 4: the seed's pool-mode comparison on the real engine. Three
//! engines (legacy, shared, pinned) run side by side in this process; each
//! scenario visits them round by round with the same request stream: request
//! i goes to worker i mod n and arrives on engine thread i mod threads, and
//! each mode does what it does with it (pinned: the thread's own isolate;
//! shared: the global pool, hopping to the isolate's thread; legacy: a fresh
//! isolate).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{Engine, PoolMode, WorkerBundle};

use crate::drive::{self, Pick, Run, RunResult};
use crate::report::{Section, Table, Target};
use crate::stats::{fmt_rate, fmt_ratio, fmt_us, median, ratio};

/// Iterations of the CPU-bound worker's loop (about 1 ms of arithmetic on
/// the development machine; the table reports what it measured).
pub const CPU_LOOP: u64 = 1_500_000;

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

fn cpu_script() -> String {
    format!(
        "export default {{ fetch() {{ let x = 0; for (let i = 0; i < {CPU_LOOP}; i++) {{ x = (x * 31 + i) | 0; }} return new Response(String(x)); }} }};"
    )
}

fn io_script(upstream: std::net::SocketAddr, ms: u64) -> String {
    format!(
        "export default {{ async fetch() {{ const r = await fetch('http://{upstream}/{ms}'); await r.text(); return new Response('io'); }} }};"
    )
}

struct Scenario {
    name: String,
    what: String,
    workers: Vec<Arc<WorkerBundle>>,
    concurrency: usize,
}

/// How long and how often.
#[derive(Debug, Clone)]
pub struct Plan {
    pub rounds: usize,
    pub duration: Duration,
}

const MODES: [PoolMode; 3] = [PoolMode::Legacy, PoolMode::Shared, PoolMode::Pinned];

pub async fn run(plan: &Plan, engines: &[Engine; 3]) -> anyhow::Result<Section> {
    let upstream = crate::upstream::start()?;
    let workers = |prefix: &str, n: usize, script: &str| {
        (0..n)
            .map(|i| drive::bundle(format!("{prefix}/{i}"), script))
            .collect::<Vec<_>>()
    };
    let scenarios = vec![
        Scenario {
            name: "warm-cache hello".into(),
            what: "8 workers, 16 clients".into(),
            workers: workers("hello", 8, HELLO),
            concurrency: 16,
        },
        Scenario {
            name: "CPU-bound".into(),
            what: format!("8 workers, 16 clients, a {CPU_LOOP}-iteration integer loop"),
            workers: workers("cpu", 8, &cpu_script()),
            concurrency: 16,
        },
        Scenario {
            name: "I/O-bound, 5 ms upstream".into(),
            what: "8 workers, 64 clients, each request awaits a local fetch answered after 5 ms"
                .into(),
            workers: workers("io5", 8, &io_script(upstream, 5)),
            concurrency: 64,
        },
        Scenario {
            name: "I/O-bound, 20 ms upstream".into(),
            what: "8 workers, 64 clients, each request awaits a local fetch answered after 20 ms"
                .into(),
            workers: workers("io20", 8, &io_script(upstream, 20)),
            concurrency: 64,
        },
        Scenario {
            name: "extreme contention".into(),
            what: "1 worker, 64 clients, requests arriving on every thread".into(),
            workers: workers("contended", 1, HELLO),
            concurrency: 64,
        },
    ];
    let threads = engines[2].threads();
    // What one CPU-bound request costs alone (sequential, warm, pinned).
    let mut alone = Vec::new();
    for _ in 0..30 {
        if let Ok(took) = drive::call(&engines[2], 0, &scenarios[1].workers[0]).await {
            alone.push(took);
        }
    }
    let cpu_alone = crate::stats::us(crate::stats::percentile(&alone, 0.5));
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 4. Pool modes: legacy / shared / pinned\n\n\
         The engine API in-process (no HTTP), three engines side by side with {threads} \
         threads each, {} rounds of {:.1} s per mode per scenario, modes interleaved within \
         each round. Request i goes to worker i mod n and arrives on thread i mod {threads}; \
         `pinned` serves it from that thread's own isolate, `shared` from the one global \
         mutex-guarded pool (hopping to the isolate's thread), `legacy` from a new isolate. \
         The clients share the 2 cores with the engine threads (machine shared, see above). \
         Throughput ratios are medians of per-round ratios; \"CPU\" is the cores' worth of \
         CPU the clients' thread and the engine threads used (median over rounds; 2 cores \
         exist). One CPU-bound request alone \
         (warm, sequential) takes {} here.\n",
        plan.rounds,
        plan.duration.as_secs_f64(),
        fmt_us(cpu_alone)
    );
    let mut targets = Vec::new();
    let mut pinned_vs_shared = Vec::new();
    for scenario in &scenarios {
        let results = measure(plan, engines, scenario).await;
        let _ = writeln!(md, "### {} ({})\n", scenario.name, scenario.what);
        let mut table = Table::new(&[
            "mode",
            ">req/s (median)",
            ">p50",
            ">p99",
            ">errors",
            ">req/s ÷ shared",
            ">req/s ÷ legacy",
            ">CPU: clients / engine",
        ]);
        for (m, mode) in MODES.iter().enumerate() {
            let (rps, p50, p99, errors) = drive::medians(&results[m]);
            table.row(vec![
                format!("`{mode}`"),
                fmt_rate(rps),
                fmt_us(p50),
                fmt_us(p99),
                errors.to_string(),
                fmt_ratio(round_ratio(&results[m], &results[1])),
                fmt_ratio(round_ratio(&results[m], &results[0])),
                format!(
                    "{:.2} / {:.2}",
                    median(
                        &results[m]
                            .iter()
                            .map(|r| r.client_cores)
                            .collect::<Vec<_>>()
                    ),
                    median(
                        &results[m]
                            .iter()
                            .map(|r| r.engine_cores)
                            .collect::<Vec<_>>()
                    )
                ),
            ]);
        }
        md.push_str(&table.render());
        md.push('\n');
        pinned_vs_shared.push((scenario.name.clone(), round_ratio(&results[2], &results[1])));
    }
    let met = pinned_vs_shared.iter().all(|(_, r)| *r >= 1.0);
    let measured = pinned_vs_shared
        .iter()
        .map(|(name, r)| format!("{name} {}", fmt_ratio(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    targets.push(Target::new(
        "`pinned` ≥ `shared` throughput in every scenario",
        measured,
        met,
    ));
    Ok(Section {
        markdown: md,
        targets,
    })
}

/// `results[mode][round]`.
async fn measure(plan: &Plan, engines: &[Engine; 3], scenario: &Scenario) -> Vec<Vec<RunResult>> {
    // Warm every worker on every thread of every engine first.
    for engine in engines {
        for thread in 0..engine.threads() {
            for worker in &scenario.workers {
                let _ = drive::call(engine, thread, worker).await;
            }
        }
    }
    let run = Run {
        concurrency: scenario.concurrency,
        duration: plan.duration,
        max_requests: 5_000_000,
        pick: Pick::RoundRobin,
    };
    let mut results = vec![Vec::new(); MODES.len()];
    for round in 0..plan.rounds {
        for k in 0..MODES.len() {
            let m = (k + round) % MODES.len();
            let started = Instant::now();
            let (client_cpu, engine_cpu) = drive::thread_cpu();
            let mut result = drive::drive(&engines[m], &scenario.workers, &run).await;
            let (client_after, engine_after) = drive::thread_cpu();
            let wall = started.elapsed().as_secs_f64();
            result.client_cores = ratio(client_after - client_cpu, wall);
            result.engine_cores = ratio(engine_after - engine_cpu, wall);
            eprintln!(
                "pool {} {} round {round}: {:.0} req/s p50 {:.0} µs p99 {:.0} µs errors {} ({:.1} s)",
                scenario.name,
                MODES[m],
                result.rps(),
                result.p50_us(),
                result.p99_us(),
                result.errors,
                started.elapsed().as_secs_f64()
            );
            results[m].push(result);
        }
    }
    results
}

fn round_ratio(a: &[RunResult], b: &[RunResult]) -> f64 {
    median(
        &a.iter()
            .zip(b)
            .map(|(x, y)| ratio(x.rps(), y.rps()))
            .collect::<Vec<_>>(),
    )
}

/// Starts the three engines (call on the main thread, before other threads).
pub fn engines() -> anyhow::Result<[Engine; 3]> {
    let start = |mode| drive::start(drive::config(mode, 0)).map(|(engine, _)| engine);
    Ok([
        start(PoolMode::Legacy)?,
        start(PoolMode::Shared)?,
        start(PoolMode::Pinned)?,
    ])
}
