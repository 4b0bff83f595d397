//! Warm hello world per core: `isolane dev` with one engine thread and
//! workerd (one event loop), each held to the same one CPU, the load
//! generator on another. The comparison the page leads with: all cores
//! against one workerd thread says more about the core count than about
//! either server.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::quiet;
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
    let pids = servers::pids(&[&isolane, &workerd]);
    let mark = quiet::Mark::now(&pids);
    let measured = warm::measure(&[&isolane, &workerd], &plan).await?;
    let others = mark.others(&pids);
    let markdown = format!(
        "Per core: `isolane dev --threads 1` and one `workerd serve`, every thread of \
         each held to CPU {SERVER_CPU} (`taskset -a -p`), wrk on CPU {LOAD_CPU}; the same \
         rounds. {}\n\n{}",
        quiet::describe(others),
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
