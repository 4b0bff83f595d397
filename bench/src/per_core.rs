//! Warm hello world per core: `isolane dev` with one engine thread and
//! workerd (one event loop), each held to the same one CPU, the load
//! generator on another. The comparison the page leads with: all cores
//! against one workerd thread says more about the core count than about
//! either server.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::report::Target;
use crate::servers::{self, Binaries, Server};
use crate::warm;

/// The CPU both servers run on, and the load generator's.
const SERVER_CPU: &str = "0";
const LOAD_CPU: &str = "1";

/// The table and its target, or `None` on a machine of one CPU (no core
/// is left for the load generator).
pub async fn measure(
    bins: &Binaries,
    script: &std::path::Path,
    work: &std::path::Path,
    plan: &warm::Plan,
) -> anyhow::Result<Option<(String, Target)>> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return Ok(None);
    }
    let mut isolane = servers::isolane_dev(bins, script, work, &["--threads", "1", "--no-tail"]);
    isolane.name = "isolane dev, 1 core";
    let config = servers::workerd_config(script, &work.join("workerd-per-core"))?;
    let mut workerd = servers::workerd(bins, &config, work)?;
    workerd.name = "workerd, 1 core";
    isolane.wait_ok(Duration::from_secs(60)).await?;
    workerd.wait_ok(Duration::from_secs(60)).await?;
    pin(&isolane, SERVER_CPU)?;
    pin(&workerd, SERVER_CPU)?;
    let plan = warm::Plan {
        load_cpus: Some(LOAD_CPU.to_owned()),
        ..plan.clone()
    };
    let before = load_average();
    let measured = warm::measure(&[&isolane, &workerd], &plan).await?;
    let after = load_average();
    let markdown = format!(
        "Per core: `isolane dev --threads 1` and one `workerd serve`, every thread of \
         each held to CPU {SERVER_CPU} (`taskset -a -p`), wrk on CPU {LOAD_CPU}; the same \
         rounds. Load average {before} before, {after} after (the machine was {}).\n\n{}",
        if quiet(&before) && quiet(&after) {
            "quiet"
        } else {
            "not quiet: other work shared the cores"
        },
        measured.table(&[1])
    );
    let target = measured.ratio_target(
        "warm hello per core: `isolane dev` ≥ 1.5× workerd's throughput",
        0,
        1,
        1.5,
    );
    Ok(Some((markdown, target)))
}

/// Holds every thread of `server`'s process (and those it starts later)
/// to `cpus`.
fn pin(server: &Server, cpus: &str) -> anyhow::Result<()> {
    let Some(process) = &server.process else {
        bail!("{} has no process to pin", server.name);
    };
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &process.pid().to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .context("running taskset (util-linux)")?;
    if !status.success() {
        bail!("taskset could not pin {}: {status}", server.name);
    }
    Ok(())
}

/// The 1-minute load average, as `/proc/loadavg` gives it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Under 1: nothing else kept a core busy.
fn quiet(load: &str) -> bool {
    load.parse::<f64>().is_ok_and(|l| l < 1.0)
}
