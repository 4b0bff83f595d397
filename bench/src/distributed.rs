//! Section 2, the distributed path: the router → node hop as processes (a
//! control plane, the operator, one node, the router) against `isolane dev`
//! (no hop) and workerd, and, when given, an older build's router and node
//! in the same interleaved rounds; then the node restarted in place
//! (`node_restart.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::cluster::{self, Cluster, ClusterBinaries};
use crate::node_restart;
use crate::quiet;
use crate::report::{Section, Table, Target};
use crate::servers::{self, Binaries, Server};
use crate::stats;
use crate::warm::{self, Measured};

/// What to run and how hard.
#[derive(Debug)]
pub struct Plan {
    pub bins: Binaries,
    pub script: PathBuf,
    /// Folder with the release router, node and operator.
    pub bin_dir: PathBuf,
    /// The same of an older build, run in its own control plane.
    pub baseline_bin_dir: Option<PathBuf>,
    pub warm: warm::Plan,
    pub secs: u64,
    /// Node restarts each way after the rounds (`node_restart.rs`).
    pub restarts: usize,
}

/// Where each side sits in the measured rounds.
struct Sides {
    router: usize,
    dev: usize,
    workerd: Option<usize>,
    baseline: Option<usize>,
}

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    let script = std::fs::read_to_string(&plan.script)
        .with_context(|| format!("reading {}", plan.script.display()))?;
    let mut cluster = start(&plan.bin_dir, work, &script).await?;
    let baseline = match &plan.baseline_bin_dir {
        Some(dir) => {
            let mut cluster = start(dir, &work.join("baseline"), &script).await?;
            cluster.router.name = "router → node (baseline)";
            Some(cluster)
        }
        None => None,
    };
    let isolane = servers::isolane_dev(&plan.bins, &plan.script, work, &[]);
    isolane.wait_ok(Duration::from_secs(60)).await?;
    let config = servers::workerd_config(&plan.script, &work.join("workerd-dist"))?;
    let workerd = servers::workerd(&plan.bins, &config, work).ok();
    if let Some(workerd) = &workerd {
        workerd.wait_ok(Duration::from_secs(60)).await?;
    }
    let mut under_load: Vec<&Server> = vec![&cluster.router, &isolane];
    let workerd_at = workerd.as_ref().map(|w| push(&mut under_load, w));
    let baseline_at = baseline.as_ref().map(|b| push(&mut under_load, &b.router));
    let sides = Sides {
        router: 0,
        dev: 1,
        workerd: workerd_at,
        baseline: baseline_at,
    };
    let pids = servers::pids(&under_load);
    let mark = quiet::Mark::now(&pids);
    let measured = warm::measure(&under_load, &plan.warm).await?;
    let others = mark.others(&pids);
    let mut section = report(plan, &sides, &measured, others);
    if plan.restarts > 0 {
        let (markdown, target) = node_restart::measure(&mut cluster, work, plan.restarts).await?;
        section.markdown.push_str(&markdown);
        section.targets.push(target);
    }
    drop(baseline);
    drop(cluster);
    Ok(section)
}

fn push<'a>(sides: &mut Vec<&'a Server>, server: &'a Server) -> usize {
    sides.push(server);
    sides.len() - 1
}

async fn start(bin_dir: &Path, work: &Path, script: &str) -> anyhow::Result<Cluster> {
    std::fs::create_dir_all(work)?;
    let bins = ClusterBinaries::in_dir(bin_dir)?;
    cluster::start(&bins, work, "hello", script, "hello.bench.test")
        .await
        .with_context(|| format!("the router and node of {}", bin_dir.display()))
}

fn report(plan: &Plan, sides: &Sides, measured: &Measured, others: f64) -> Section {
    let mut markdown = format!(
        "## 2. Distributed path: router → node over gRPC\n\n\
         The same script as a `Worker` applied to a local kube-apiserver (isolane-testenv: \
         etcd + kube-apiserver), made Ready by the release operator, served by one release \
         `isolane-node` (threads = cores, per-thread gRPC listeners) behind the release \
         `isolane-router` (HTTP/1.1 in, gRPC/HTTP/2 to the node, mutual TLS), requests routed \
         by `Host`. Against `isolane dev` (router and node in one process, no hop) and \
         workerd, all running at once, alternating, {} rounds of {} s. etcd, the apiserver \
         and the operator idle on the same 2 cores. `CPU µs/req` counts the router's and the \
         node's processes together: what a request costs of the cores they use.{} {}\n\n",
        plan.warm.rounds,
        plan.secs,
        match &plan.baseline_bin_dir {
            Some(dir) => format!(
                " `router → node (baseline)` is an older build's router and node (`{}`), in \
                 a control plane of its own, under the same load in the same rounds.",
                dir.display()
            ),
            None => String::new(),
        },
        quiet::describe(others)
    );
    let mut against = vec![sides.dev];
    against.extend(sides.baseline);
    markdown.push_str(&measured.table(&against));
    markdown.push('\n');
    markdown.push_str("What the router → node hop costs against `isolane dev`:\n\n");
    markdown.push_str(&hop_table(sides, measured));
    markdown.push('\n');
    Section {
        markdown,
        targets: targets(sides, measured),
    }
}

/// Latency added at each concurrency and the throughput the hop keeps (and
/// the baseline's, when there is one).
fn hop_table(sides: &Sides, measured: &Measured) -> String {
    let mut columns = vec![">connections", ">p50 added by the hop", ">throughput kept"];
    if sides.baseline.is_some() {
        columns.push(">throughput kept, baseline");
    }
    let mut hop = Table::new(&columns);
    for (ci, c) in measured.connections.iter().enumerate() {
        let (router, dev) = (
            measured.summary(sides.router, ci),
            measured.summary(sides.dev, ci),
        );
        let kept =
            |side: usize| format!("{:.0}%", measured.round_ratio(side, sides.dev, ci) * 100.0);
        let mut row = vec![
            c.to_string(),
            stats::fmt_us(router.p50_us - dev.p50_us),
            kept(sides.router),
        ];
        row.extend(sides.baseline.map(kept));
        hop.row(row);
    }
    hop.render()
}

/// Issue 7's and issue 35's targets for the hop.
fn targets(sides: &Sides, measured: &Measured) -> Vec<Target> {
    let mut targets = Vec::new();
    if let Some(workerd) = sides.workerd {
        targets.push(measured.ratio_target(
            "warm hello through router + node ≥ workerd's throughput",
            sides.router,
            workerd,
            1.0,
        ));
        targets.push(measured.ratio_target(
            "router + node ≥ 1.5× workerd's throughput at every concurrency (issue 35)",
            sides.router,
            workerd,
            1.5,
        ));
        targets.push(measured.per_core_target(
            "per core used: router + node ≥ 1.2× workerd's requests per CPU second at 16 and \
             64 connections (issue 63)",
            (sides.router, workerd),
            1.2,
            &[16, 64],
        ));
    }
    targets.push(measured.ratio_target(
        "the hop keeps ≥ 60% of `isolane dev`'s throughput: router + node ≥ 0.6× \
         `isolane dev` (issue 35)",
        sides.router,
        sides.dev,
        0.6,
    ));
    targets
}
