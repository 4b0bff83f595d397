//! Comparison 8: a neighbour's latency beside a CPU hog on its thread.
//!
//! A benign worker (hello, namespace `web`) is asked for on engine thread 0,
//! one request at a time; alone, then while a hog namespace answers every
//! request after an integer loop (no limit is hit), driven by `HOG_CLIENTS`
//! clients that rotate over `HOG_WORKERS` Workers of that one namespace, all
//! asked for on the same thread. Two hogs: long turns (tens of ms each) and
//! short ones (under the 5 ms "long turn" mark, one after another). Two
//! engines, interleaved round by round: two threads (the engine moves the
//! hog's neighbours to a thread clear of it) and one thread (nowhere to move:
//! the thread's schedule by namespace is all there is). Reports the
//! neighbour's p50/p99 and their ratios to the neighbour alone.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{Engine, Limits, PoolMode, WorkerBundle};

use crate::drive;
use crate::report::{Section, Table, Target};
use crate::stats::{fmt_ratio, fmt_us, median, percentile, ratio, us};

/// Iterations of the long hog's loop per request (tens of milliseconds here).
const HOG_LOOP: u64 = 20_000_000;
/// Iterations of the short hog's loop: an eighth, a few milliseconds.
const SHORT_LOOP: u64 = HOG_LOOP / 8;
const HOG_CLIENTS: usize = 4;
/// Workers of the hog's namespace its clients rotate over.
const HOG_WORKERS: usize = 4;

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

fn hog_script(iterations: u64) -> String {
    format!(
        "export default {{ fetch() {{ let x = 0; for (let i = 0; i < {iterations}; i++) {{ x = (x * 31 + i) | 0; }} return new Response(String(x)); }} }};"
    )
}

/// The Workers of one hog namespace, each looping `iterations` per request.
fn hog_workers(kind: &str, iterations: u64) -> Vec<Arc<WorkerBundle>> {
    (0..HOG_WORKERS)
        .map(|i| {
            let mut hog = WorkerBundle::new(format!("hog/{kind}{i}"), "r1", hog_script(iterations));
            // Generous: the hog never hits it.
            hog.limits = Limits {
                cpu_ms: 2_000,
                ..Limits::default()
            };
            Arc::new(hog)
        })
        .collect()
}

/// How long and how often.
#[derive(Debug, Clone)]
pub struct Plan {
    pub rounds: usize,
    pub duration: Duration,
}

/// The two engines: two threads, and one.
pub fn engines() -> anyhow::Result<[Engine; 2]> {
    let two = drive::start(drive::config(PoolMode::Pinned, 2))?.0;
    let one = drive::start(drive::config(PoolMode::Pinned, 1))?.0;
    Ok([two, one])
}

/// The neighbour's latencies for `duration`, with `hogs` clients hammering
/// the hog's Workers meanwhile (0: alone).
async fn neighbour(
    engine: &Engine,
    neighbour: &Arc<WorkerBundle>,
    hog: &[Arc<WorkerBundle>],
    hogs: usize,
    duration: Duration,
) -> anyhow::Result<Vec<Duration>> {
    let until = Instant::now() + duration;
    let mut hog_clients = Vec::new();
    for client in 0..hogs {
        let engine = engine.clone();
        let hog = hog.to_vec();
        hog_clients.push(tokio::task::spawn_local(async move {
            let mut next = client;
            while Instant::now() < until {
                drive::call(&engine, 0, &hog[next % hog.len()]).await?;
                next += 1;
            }
            anyhow::Ok(())
        }));
    }
    // Let the hog's first turns happen before measuring.
    if hogs > 0 {
        drive::call(engine, 0, &hog[0]).await?;
    }
    let mut samples = Vec::new();
    while Instant::now() < until && samples.len() < 100_000 {
        samples.push(drive::call(engine, 0, neighbour).await?);
    }
    for client in hog_clients {
        client.await??;
    }
    Ok(samples)
}

pub async fn run(plan: &Plan, engines: &[Engine; 2]) -> anyhow::Result<Section> {
    let local = tokio::task::LocalSet::new();
    local.run_until(run_local(plan, engines)).await
}

/// Per round: (p50, p99) in µs and the number of samples.
type Cell = Vec<(f64, f64, usize)>;

async fn run_local(plan: &Plan, engines: &[Engine; 2]) -> anyhow::Result<Section> {
    let neighbour_worker = drive::bundle("web/neighbour", HELLO);
    let hogs = [
        ("long turns", hog_workers("long", HOG_LOOP)),
        ("short turns", hog_workers("short", SHORT_LOOP)),
    ];
    // Warm every worker on both engines.
    for engine in engines {
        drive::call(engine, 0, &neighbour_worker).await?;
        for (_, workers) in &hogs {
            for worker in workers {
                drive::call(engine, 0, worker).await?;
            }
        }
    }
    let names = ["2 threads (neighbours move)", "1 thread (nowhere to move)"];
    // [engine][0: alone, 1 + hog kind]
    let mut results: Vec<Vec<Cell>> = vec![vec![Vec::new(); 1 + hogs.len()]; 2];
    for _ in 0..plan.rounds {
        for (e, engine) in engines.iter().enumerate() {
            // Alone (no hog client), then beside each hog.
            let cells = std::iter::once((0, &hogs[0].1))
                .chain(hogs.iter().map(|(_, workers)| (HOG_CLIENTS, workers)));
            for (c, (clients, workers)) in cells.enumerate() {
                let samples =
                    neighbour(engine, &neighbour_worker, workers, clients, plan.duration).await?;
                results[e][c].push((
                    us(percentile(&samples, 0.5)),
                    us(percentile(&samples, 0.99)),
                    samples.len(),
                ));
            }
        }
    }
    let mut table = Table::new(&[
        "engine",
        "hog",
        "neighbour alone p50 / p99",
        "beside the hog p50 / p99",
        "p50 ratio",
        "p99 ratio",
        "requests (alone / beside)",
    ]);
    // [engine][hog kind] → (p50 ratio, p99 ratio)
    let mut ratios = vec![Vec::new(); 2];
    for (e, name) in names.iter().enumerate() {
        let med = |c: usize, f: fn(&(f64, f64, usize)) -> f64| {
            median(&results[e][c].iter().map(f).collect::<Vec<_>>())
        };
        let count = |c: usize| results[e][c].iter().map(|r| r.2).sum::<usize>();
        let (alone50, alone99) = (med(0, |r| r.0), med(0, |r| r.1));
        for (h, (kind, _)) in hogs.iter().enumerate() {
            let (hog50, hog99) = (med(1 + h, |r| r.0), med(1 + h, |r| r.1));
            ratios[e].push((ratio(hog50, alone50), ratio(hog99, alone99)));
            table.row(vec![
                (*name).to_owned(),
                (*kind).to_owned(),
                format!("{} / {}", fmt_us(alone50), fmt_us(alone99)),
                format!("{} / {}", fmt_us(hog50), fmt_us(hog99)),
                fmt_ratio(ratio(hog50, alone50)),
                fmt_ratio(ratio(hog99, alone99)),
                format!("{} / {}", count(0), count(1 + h)),
            ]);
        }
    }
    let mut markdown = String::new();
    writeln!(
        markdown,
        "## 8. Neighbours of a CPU hog\n\n\
         A hello worker (namespace `web`) asked for on engine thread 0, one request at a \
         time, alone and beside a hog namespace whose {HOG_CLIENTS} clients rotate over \
         {HOG_WORKERS} of its Workers, all asked for on the same thread: long turns \
         ({HOG_LOOP}-iteration integer loop per request) or short ones ({SHORT_LOOP} \
         iterations), under their CPU limit; {} rounds of {:.1} s per cell, interleaved; \
         medians over rounds.\n",
        plan.rounds,
        plan.duration.as_secs_f64()
    )?;
    markdown.push_str(&table.render());
    let targets = hogs
        .iter()
        .enumerate()
        .map(|(h, (kind, _))| {
            let (p50, p99) = ratios[0][h];
            Target::new(
                format!("a neighbour beside a hog with {kind} (2 threads): p50 and p99 < 2× alone"),
                format!(
                    "p50 {} / p99 {} ({} / {} with 1 thread)",
                    fmt_ratio(p50),
                    fmt_ratio(p99),
                    fmt_ratio(ratios[1][h].0),
                    fmt_ratio(ratios[1][h].1)
                ),
                p50 < 2.0 && p99 < 2.0,
            )
        })
        .collect();
    Ok(Section { markdown, targets })
}
