//! Comparison 8: a neighbour's latency beside a CPU hog on its thread.
//!
//! A benign worker (hello) is asked for on engine thread 0, one request at a
//! time; alone, then while a hog worker placed on the same thread answers
//! every request after a long integer loop (no limit is hit, so no
//! quarantine), driven by `HOG_CLIENTS` clients. Two engines, interleaved
//! round by round: two threads (the engine moves the hog's neighbours to a
//! thread clear of its long turns) and one thread (nowhere to move: what
//! every neighbour saw before the rule). Reports the neighbour's p50/p99
//! and their ratios to the neighbour alone.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{Engine, Limits, PoolMode, WorkerBundle};

use crate::drive;
use crate::report::{Section, Table, Target};
use crate::stats::{fmt_ratio, fmt_us, median, percentile, ratio, us};

/// Iterations of the hog's loop per request (tens of milliseconds here).
const HOG_LOOP: u64 = 20_000_000;
const HOG_CLIENTS: usize = 4;

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

fn hog_script() -> String {
    format!(
        "export default {{ fetch() {{ let x = 0; for (let i = 0; i < {HOG_LOOP}; i++) {{ x = (x * 31 + i) | 0; }} return new Response(String(x)); }} }};"
    )
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
/// the hog meanwhile (0: alone).
async fn neighbour(
    engine: &Engine,
    neighbour: &Arc<WorkerBundle>,
    hog: &Arc<WorkerBundle>,
    hogs: usize,
    duration: Duration,
) -> anyhow::Result<Vec<Duration>> {
    let until = Instant::now() + duration;
    let mut hog_clients = Vec::new();
    for _ in 0..hogs {
        let engine = engine.clone();
        let hog = hog.clone();
        hog_clients.push(tokio::task::spawn_local(async move {
            while Instant::now() < until {
                drive::call(&engine, 0, &hog).await?;
            }
            anyhow::Ok(())
        }));
    }
    // Let the hog's first long turns happen before measuring.
    if hogs > 0 {
        drive::call(engine, 0, hog).await?;
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

async fn run_local(plan: &Plan, engines: &[Engine; 2]) -> anyhow::Result<Section> {
    let neighbour_worker = drive::bundle("neighbour", HELLO);
    // Its own CPU limit is generous: the hog never hits it (a hog that did
    // would be quarantined after three strikes).
    let mut hog = WorkerBundle::new("hog", "r1", hog_script());
    hog.limits = Limits {
        cpu_ms: 2_000,
        ..Limits::default()
    };
    let hog = Arc::new(hog);
    // Warm both workers on both engines.
    for engine in engines {
        drive::call(engine, 0, &neighbour_worker).await?;
        drive::call(engine, 0, &hog).await?;
    }
    let names = ["2 threads (neighbours move)", "1 thread (nowhere to move)"];
    // [engine][alone, attacked] → per-round (p50, p99) in µs
    let mut results = vec![[Vec::new(), Vec::new()]; 2];
    for _ in 0..plan.rounds {
        for (e, engine) in engines.iter().enumerate() {
            for (a, hogs) in [0, HOG_CLIENTS].into_iter().enumerate() {
                let samples =
                    neighbour(engine, &neighbour_worker, &hog, hogs, plan.duration).await?;
                results[e][a].push((
                    us(percentile(&samples, 0.5)),
                    us(percentile(&samples, 0.99)),
                    samples.len(),
                ));
            }
        }
    }
    let mut table = Table::new(&[
        "engine",
        "neighbour alone p50 / p99",
        "beside the hog p50 / p99",
        "p50 ratio",
        "p99 ratio",
        "requests (alone / beside)",
    ]);
    let mut p99_ratios = Vec::new();
    for (e, name) in names.iter().enumerate() {
        let med = |a: usize, f: fn(&(f64, f64, usize)) -> f64| {
            median(&results[e][a].iter().map(f).collect::<Vec<_>>())
        };
        let (alone50, alone99) = (med(0, |r| r.0), med(0, |r| r.1));
        let (hog50, hog99) = (med(1, |r| r.0), med(1, |r| r.1));
        let count = |a: usize| results[e][a].iter().map(|r| r.2).sum::<usize>();
        p99_ratios.push(ratio(hog99, alone99));
        table.row(vec![
            (*name).to_owned(),
            format!("{} / {}", fmt_us(alone50), fmt_us(alone99)),
            format!("{} / {}", fmt_us(hog50), fmt_us(hog99)),
            fmt_ratio(ratio(hog50, alone50)),
            fmt_ratio(ratio(hog99, alone99)),
            format!("{} / {}", count(0), count(1)),
        ]);
    }
    let mut markdown = String::new();
    writeln!(
        markdown,
        "A hello worker asked for on engine thread 0, one request at a time, alone and \
         beside a hog placed on the same thread ({HOG_CLIENTS} clients, each request a \
         {HOG_LOOP}-iteration integer loop, under its CPU limit); {} rounds of {:.1} s per \
         cell, interleaved; medians over rounds.\n",
        plan.rounds,
        plan.duration.as_secs_f64()
    )?;
    markdown.push_str(&table.render());
    let moved = p99_ratios[0];
    Ok(Section {
        markdown,
        targets: vec![Target::new(
            "a neighbour beside a CPU hog on its thread: p99 < 2× alone",
            format!(
                "{} with 2 threads ({} with 1)",
                fmt_ratio(moved),
                fmt_ratio(p99_ratios[1])
            ),
            moved < 2.0,
        )],
    })
}
