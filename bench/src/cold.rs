//! Comparison 3: cold start. In-process over the engine API: the first
//! request to a never-seen worker with and without spare isolates,
//! interleaved, and the isolate-ready times the engine reports. As
//! processes: `isolane dev` and `workerd serve` started on the same script,
//! interleaved, timed from spawn to the first 200.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use isolane_engine::{Engine, PoolMode};

use crate::drive::{self, Counters};
use crate::report::{Section, Table, Target};
use crate::servers::{self, Binaries};
use crate::stats::{fmt_ratio, fmt_us, median, percentile, ratio, us};

const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

/// How many of each.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Never-seen workers per engine.
    pub workers: usize,
    /// Process starts per server.
    pub starts: usize,
    /// An older `isolane` binary started in the same rounds.
    pub baseline: Option<std::path::PathBuf>,
}

/// The two engines of the in-process part: no spares, and one. With more,
/// a thread that sees a miss in every sample keeps more than one (as many
/// as its misses of the last second), and would make the second while the
/// next sample's first request arrives: that request would wait for an
/// isolate's creation, which is what the second request measures.
pub struct Engines {
    pub no_spare: (Engine, std::sync::Arc<Counters>),
    pub spare: (Engine, std::sync::Arc<Counters>),
}

/// Starts both engines, one thread each (call on the main thread first).
pub fn engines() -> anyhow::Result<Engines> {
    // Not pinned: both engines' single threads would share the first core.
    let config = |spares| isolane_engine::EngineConfig {
        spare_isolates: spares,
        isolates_per_thread: 100_000,
        heap_budget_bytes: usize::MAX,
        pin_threads: false,
        ..drive::config(PoolMode::Pinned, 1)
    };
    Ok(Engines {
        no_spare: drive::start(config(0))?,
        spare: drive::start(config(1))?,
    })
}

pub async fn run(
    plan: &Plan,
    engines: &Engines,
    bins: &Binaries,
    script: &Path,
    dir: &Path,
) -> anyhow::Result<Section> {
    // Warm the request path of both engines with one worker each.
    for (engine, counters) in [&engines.no_spare, &engines.spare] {
        let _ = drive::call(engine, 0, &drive::bundle("cold/warmup", HELLO)).await;
        counters.take_created();
    }
    let mut first = [Vec::new(), Vec::new()];
    let mut second = Vec::new();
    let mut warm = Vec::new();
    for i in 0..plan.workers {
        let workers = [0, 1].map(|k| drive::bundle(format!("cold-{k}/{i}"), HELLO));
        for (k, (engine, _)) in [&engines.no_spare, &engines.spare].into_iter().enumerate() {
            if let Ok(took) = drive::call(engine, 0, &workers[k]).await {
                first[k].push(took);
            }
            if k == 1
                && let Ok(took) = drive::call(engine, 0, &workers[k]).await
            {
                second.push(took);
            }
        }
        // The next sample starts once the spare engine has made the spare
        // this one used (1 warm-up worker, i + 1 workers, its one spare).
        let (engine, counters) = &engines.spare;
        let want = 1 + (i + 1) + engine.config().spare_isolates;
        drive::wait_for(Duration::from_secs(10), || counters.isolates().0 >= want)
            .await
            .context("waiting for the spare refill")?;
        if let Ok(took) = drive::call(engine, 0, &workers[1]).await {
            warm.push(took);
        }
    }
    let created = |counters: &Counters, spare: bool| -> Vec<Duration> {
        counters
            .take_created()
            .into_iter()
            .filter(|(_, s)| *s == spare)
            .map(|(d, _)| d)
            .collect()
    };
    let ready_blank = created(&engines.no_spare.1, false);
    let ready_spare = created(&engines.spare.1, true);

    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 3. Cold start\n\n\
         In-process over the engine API, one engine thread: {} never-seen hello workers per \
         engine, each hit once, the two engines alternating request by request; the next \
         sample waits until the engine has replaced the spare used (so each first request \
         finds one). The spare engine keeps one spare: with more, a thread that misses in \
         every sample makes a second while the next sample arrives. The second request to \
         the same worker follows the first at once, and may wait for the spare the first one used to be made again (the thread makes it at \
         once when none is left); a third follows the refill. \"Isolate ready\" is what the \
         engine reports: a new isolate from the snapshot (or a spare), its context, the worker's \
         compile and top-level run. Isolate creation alone (snapshot → context, no worker) is \
         the difference of the two medians.\n",
        plan.workers
    );
    let mut table = Table::new(&[">what", ">p50", ">p99", ">samples"]);
    let row = |table: &mut Table, what: &str, samples: &[Duration]| {
        table.row(vec![
            what.to_owned(),
            fmt_us(us(percentile(samples, 0.5))),
            fmt_us(us(percentile(samples, 0.99))),
            samples.len().to_string(),
        ]);
    };
    row(
        &mut table,
        "first request, never-seen worker, spare isolate ready",
        &first[1],
    );
    row(
        &mut table,
        "first request, never-seen worker, no spare",
        &first[0],
    );
    row(
        &mut table,
        "second request, same worker, at once (behind the spare's refill)",
        &second,
    );
    row(
        &mut table,
        "third request, same worker, after the refill (warm)",
        &warm,
    );
    row(
        &mut table,
        "isolate ready from a spare (compile + run)",
        &ready_spare,
    );
    row(
        &mut table,
        "isolate ready without a spare (snapshot → context → compile + run)",
        &ready_blank,
    );
    let blank = us(percentile(&ready_blank, 0.5)) - us(percentile(&ready_spare, 0.5));
    table.row(vec![
        "isolate creation alone (difference of the two medians above)".into(),
        fmt_us(blank),
        "–".into(),
        "–".into(),
    ]);
    md.push_str(&table.render());
    md.push('\n');

    let cold_p50 = us(percentile(&first[1], 0.5));
    let mut targets = vec![Target::new(
        "cold first request to a never-seen worker, p50 < 1 ms",
        format!(
            "{} with a spare ({}); {} without",
            fmt_us(cold_p50),
            if cold_p50 < 1000.0 {
                "met".to_owned()
            } else {
                format!("{:.1}× the target", cold_p50 / 1000.0)
            },
            fmt_us(us(percentile(&first[0], 0.5)))
        ),
        cold_p50 < 1000.0,
    )];

    match process_starts(plan, bins, script, dir).await {
        Ok(starts) => {
            let _ = writeln!(
                md,
                "As processes, {} starts each, alternating: spawn → first `200` on `GET /` \
                 (polled every millisecond). `isolane dev` initialises V8 and reads its \
                 startup snapshot from its cache folder (written by an untimed start before \
                 the rounds); with `--no-snapshot-cache` it builds the snapshot at every \
                 start, as before the cache.{} workerd parses its config and compiles the \
                 worker.\n",
                plan.starts,
                match &plan.baseline {
                    Some(path) => format!(
                        " The baseline is an older build (`{}`), started with no flags.",
                        path.display()
                    ),
                    None => String::new(),
                }
            );
            let mut table = Table::new(&["server", ">median", ">min", ">max", ">÷ workerd"]);
            let medians: Vec<f64> = starts.iter().map(|(_, samples)| median(samples)).collect();
            let workerd = medians.last().copied().unwrap_or(f64::NAN);
            for ((name, samples), m) in starts.iter().zip(&medians) {
                let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
                let max = samples.iter().copied().fold(0.0, f64::max);
                table.row(vec![
                    (*name).to_owned(),
                    fmt_us(*m),
                    fmt_us(min),
                    fmt_us(max),
                    fmt_ratio(ratio(*m, workerd)),
                ]);
            }
            md.push_str(&table.render());
            md.push('\n');
            let cached = medians[0];
            let built = medians[1];
            targets.push(Target::new(
                "process start to first response: `isolane dev` (snapshot cached) no slower than workerd",
                format!(
                    "{} vs {} ({}); building the snapshot at start: {}",
                    fmt_us(cached),
                    fmt_us(workerd),
                    fmt_ratio(ratio(cached, workerd)),
                    fmt_us(built)
                ),
                cached <= workerd,
            ));
        }
        Err(error) => {
            let _ = writeln!(md, "Process starts not measured: {error:#}\n");
        }
    }
    Ok(Section {
        markdown: md,
        targets,
    })
}

/// Spawn → first 200, in µs, alternating: `isolane dev` with its snapshot
/// cached, `isolane dev --no-snapshot-cache`, the baseline build if given,
/// and workerd (last, the reference; without workerd nothing is measured).
async fn process_starts(
    plan: &Plan,
    bins: &Binaries,
    script: &Path,
    dir: &Path,
) -> anyhow::Result<Vec<(&'static str, Vec<f64>)>> {
    let config = servers::workerd_config(script, &dir.join("workerd-cold"))?;
    let cache = dir.join("snapshot-cache");
    let cache = cache.display().to_string();
    let cached = ["--snapshot-cache-dir", cache.as_str()];
    // Untimed: writes the cache the timed starts read.
    start_once(servers::isolane_dev(bins, script, dir, &cached)).await?;
    let mut starts = vec![
        ("`isolane dev`", Vec::new()),
        ("`isolane dev --no-snapshot-cache`", Vec::new()),
        ("workerd", Vec::new()),
    ];
    let baseline = plan.baseline.as_ref().map(|isolane| Binaries {
        isolane: isolane.clone(),
        workerd: None,
    });
    if baseline.is_some() {
        starts.insert(2, ("baseline `isolane dev`", Vec::new()));
    }
    for _ in 0..plan.starts {
        if let Some(bins) = &baseline {
            let server = servers::isolane_dev(bins, script, dir, &[]);
            starts[2].1.push(start_once(server).await?);
        }
        let server = servers::isolane_dev(bins, script, dir, &cached);
        starts[0].1.push(start_once(server).await?);
        let server = servers::isolane_dev(bins, script, dir, &["--no-snapshot-cache"]);
        starts[1].1.push(start_once(server).await?);
        let server = servers::workerd(bins, &config, dir)?;
        let workerd = starts.len() - 1;
        starts[workerd].1.push(start_once(server).await?);
    }
    Ok(starts)
}

/// Spawn → first 200 of `server`, in µs; then stops it.
async fn start_once(mut server: servers::Server) -> anyhow::Result<f64> {
    let took = us(server.wait_ok(Duration::from_secs(30)).await?);
    if let Some(mut process) = server.process.take() {
        process.kill();
    }
    Ok(took)
}
