//! Section 15, static assets the way a cluster serves them (issue 59): a
//! control plane, the operator, one node and the router as processes, and a
//! local CNCF Distribution registry. First `isolane deploy` of a project of
//! `deploy_mib` MiB of assets is timed to its first answer: the command
//! (the artifact pushed by digest, the Worker applied), then the Worker
//! Ready, then the first asset through the router. Then section 13's
//! project (a Worker, `public/index.html` of 2 KiB and a hashed script of
//! 100 KiB), deployed the same way, is loaded through the router with
//! section 13's three requests, against workerd serving the same `public/`
//! folder in the same rounds, interleaved.
//!
//! workerd's side is its own native file server: a `disk` service on its
//! socket, no Worker in front (workerd's fastest way to answer a file; it
//! enters no isolate either). It sends no `ETag` and answers no conditional
//! request, so the `If-None-Match` row shows what it does with that request
//! (the whole file again) and has no ratio. The CPU per request counts the
//! router's and the node's processes together, and workerd's process. The
//! node's metrics say how many requests it answered from the assets and how
//! many reached an isolate during the rounds.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use isolane_testenv::workers::wait_ready;
use isolane_testenv::{Process, Registry, free_port, workerd};

use crate::assets::{self, CELLS, SCRIPT_PATH};
use crate::cluster::{self, Cluster, ClusterBinaries, NAMESPACE, PULL_SECRET};
use crate::report::{Section, Table, Target};
use crate::servers::{self, process_cpu_secs};
use crate::stats;
use crate::wrk::{self, LoadSpec};

/// What to run and how hard.
#[derive(Debug)]
pub struct Plan {
    /// The `isolane` binary (`isolane deploy`).
    pub isolane: PathBuf,
    /// Folder with `isolane-operator`, `isolane-node`, `isolane-router`.
    pub bin_dir: PathBuf,
    /// workerd's native binary.
    pub workerd: Option<PathBuf>,
    pub secs: u64,
    pub rounds: usize,
    pub connections: usize,
    /// Size of the timed deploy's assets, MiB (files of 1 MiB).
    pub deploy_mib: usize,
}

/// The loaded project's host.
const HOST: &str = "assets.bench.test";
/// The timed deploy's host.
const BIG_HOST: &str = "big-assets.bench.test";
/// The most a deploy may take to its first answer.
const FIRST_ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// One side under load: where it listens, the `Host` it is asked with,
/// its path of `index.html` and the processes whose CPU time counts.
struct Side {
    name: &'static str,
    addr: SocketAddr,
    host: Option<&'static str>,
    index: &'static str,
    pids: Vec<u32>,
}

impl Side {
    fn cpu_secs(&self) -> f64 {
        self.pids
            .iter()
            .filter_map(|pid| process_cpu_secs(*pid))
            .sum()
    }
}

/// `isolane deploy` to its first answer, in steps.
#[derive(Debug, Clone, Copy)]
struct DeployTimes {
    /// The command: artifact pushed, Worker applied.
    command: Duration,
    /// Then the Worker Ready (the operator pulled and checked it).
    ready: Duration,
    /// Then the first asset through the router (the node pulled it).
    first_answer: Duration,
    bytes: u64,
}

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    std::fs::create_dir_all(work)?;
    let registry = Registry::start("bench", "bench-pull")
        .context("starting the registry (hack/install-deps.sh builds it)")?;
    let bins = ClusterBinaries::in_dir(&plan.bin_dir)?;
    let dir = work.join("assets-cluster");
    std::fs::create_dir_all(&dir)?;
    let cluster = cluster::start_with_registry(&bins, &dir, &registry, &[]).await?;
    let deployer = Deployer {
        plan,
        registry: &registry,
        cluster: &cluster,
    };
    let big = work.join("assets-big");
    let bytes = write_big_project(&big, plan.deploy_mib)?;
    let mut timed = deployer
        .deploy(&big, "big-assets", BIG_HOST, "/files/0.bin")
        .await?;
    timed.bytes = bytes;
    eprintln!("assets: deploy of {} MiB: {timed:?}", plan.deploy_mib);
    let project = work.join("assets-routed");
    assets::write_project(&project, Some(HOST))?;
    deployer.deploy(&project, "assets-bench", HOST, "/").await?;
    let router = Side {
        name: "router → node",
        addr: cluster.router.addr,
        host: Some(HOST),
        index: "/",
        pids: servers::pids(&[&cluster.router]),
    };
    let (workerd_process, workerd_side) = match &plan.workerd {
        Some(bin) => {
            let (process, side) = start_workerd(bin, &project.join("public"), work)?;
            (Some(process), Some(side))
        }
        None => (None, None),
    };
    let mut sides = vec![&router];
    sides.extend(workerd_side.as_ref());
    let before = NodeCounts::read(&cluster).await;
    let measured = measure(plan, &sides).await?;
    let after = NodeCounts::read(&cluster).await;
    let mut node = after.since(&before);
    // One request to the Worker's own path: the count that stayed at 0
    // above counts it (it is not a counter that never moves).
    servers::get_status_of(cluster.router.addr, Some(HOST), "/__seen").await;
    node.worker_check = NodeCounts::read(&cluster)
        .await
        .since(&after)
        .isolate_lookups;
    drop(workerd_process);
    drop(cluster);
    Ok(section(plan, &sides, &measured, &node, &timed))
}

/// What runs `isolane deploy` against the cluster and the registry.
struct Deployer<'a> {
    plan: &'a Plan,
    registry: &'a Registry,
    cluster: &'a Cluster,
}

impl Deployer<'_> {
    /// `isolane deploy` of `dir` (Worker `name` on `host`), timed to the
    /// Worker Ready and to `path`'s first 200 through the router.
    async fn deploy(
        &self,
        dir: &Path,
        name: &str,
        host: &str,
        path: &str,
    ) -> anyhow::Result<DeployTimes> {
        let started = Instant::now();
        let output = tokio::process::Command::new(&self.plan.isolane)
            .current_dir(dir)
            .args(["deploy", "-n", NAMESPACE, "--plain-http"])
            .args([
                "--repository",
                &format!("{}/bench/{name}", self.registry.host()),
            ])
            .args(["--pull-secret", PULL_SECRET])
            .env("KUBECONFIG", self.cluster.control_plane.kubeconfig_path())
            .env("ISOLANE_REGISTRY_USERNAME", self.registry.username())
            .env("ISOLANE_REGISTRY_PASSWORD", self.registry.password())
            .stdin(Stdio::null())
            .output()
            .await
            .context("running isolane deploy")?;
        if !output.status.success() {
            bail!(
                "isolane deploy of {name} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let command = started.elapsed();
        let client = self.cluster.control_plane.client();
        wait_ready(&client, NAMESPACE, name, FIRST_ANSWER_WITHIN).await;
        let ready = started.elapsed();
        servers::wait_ok_at(
            self.cluster.router.addr,
            Some(host),
            path,
            FIRST_ANSWER_WITHIN,
            Duration::from_millis(5),
        )
        .await
        .with_context(|| format!("{path} of {name} through the router"))?;
        Ok(DeployTimes {
            command,
            ready: ready - command,
            first_answer: started.elapsed() - ready,
            bytes: 0,
        })
    }
}

/// An assets-only project of `mib` files of 1 MiB each (different text
/// each, little to compress) and an `index.html`; its bytes.
fn write_big_project(dir: &Path, mib: usize) -> anyhow::Result<u64> {
    let files = dir.join("public/files");
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    std::fs::write(
        dir.join("wrangler.toml"),
        format!(
            "name = \"big-assets\"\ncompatibility_date = \"2025-04-01\"\n\
             routes = [{{ pattern = \"{BIG_HOST}\", custom_domain = true }}]\n\
             [assets]\ndirectory = \"./public\"\n"
        ),
    )?;
    std::fs::write(dir.join("public/index.html"), "<h1>big</h1>")?;
    let mut bytes = 12;
    for i in 0..mib {
        let text = assets::text_of(1 << 20, i as u64 + 1);
        bytes += text.len() as u64;
        std::fs::write(files.join(format!("{i}.bin")), text)?;
    }
    Ok(bytes)
}

/// workerd's `disk` service on `public`, on a socket of its own.
fn start_workerd(bin: &Path, public: &Path, work: &Path) -> anyhow::Result<(Process, Side)> {
    let dir = work.join("workerd-assets");
    std::fs::create_dir_all(&dir)?;
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let config = workerd::write_disk_server_config(&dir, "config.capnp", public, addr)?;
    let process = workerd::serve(bin, &config, &[], &dir.join("workerd.log"))?;
    let side = Side {
        name: "workerd (disk service)",
        addr,
        host: None,
        index: "/index.html",
        pids: vec![process.pid()],
    };
    Ok((process, side))
}

/// Per cell and side: req/s and CPU µs per request, one per round; and
/// the status each side gave each cell.
struct Measured {
    cells: Vec<Vec<(Vec<f64>, Vec<f64>)>>,
    statuses: Vec<Vec<u16>>,
}

/// The rounds: each cell, each side in turn.
async fn measure(plan: &Plan, sides: &[&Side]) -> anyhow::Result<Measured> {
    for side in sides {
        servers::wait_ok_at(
            side.addr,
            side.host,
            side.index,
            Duration::from_secs(60),
            Duration::from_millis(5),
        )
        .await
        .with_context(|| format!("{} did not serve {}", side.name, side.index))?;
    }
    // Both sides are sent Isolane's ETag of the script: workerd has none.
    let etag = assets::etag(sides[0].addr, sides[0].host, SCRIPT_PATH).await?;
    let mut measured = Measured {
        cells: vec![vec![(Vec::new(), Vec::new()); sides.len()]; CELLS.len()],
        statuses: vec![Vec::new(); CELLS.len()],
    };
    for (cell, (_, path, conditional)) in CELLS.iter().enumerate() {
        for side in sides {
            let path = if *path == "/" { side.index } else { path };
            let header = conditional.then(|| format!("If-None-Match: {etag}"));
            measured.statuses[cell].push(status(side, path, header.as_deref()).await?);
        }
    }
    for round in 1..=plan.rounds {
        for (cell, (name, path, conditional)) in CELLS.iter().enumerate() {
            for (at, side) in sides.iter().enumerate() {
                let path = if *path == "/" { side.index } else { path };
                let header = conditional.then(|| format!("If-None-Match: {etag}"));
                let (rps, cpu_us) = load(plan, side, path, header).await?;
                println!(
                    "round {round}: {name}: {}: {rps:.0} req/s, {cpu_us:.0} µs CPU/request",
                    side.name
                );
                measured.cells[cell][at].0.push(rps);
                measured.cells[cell][at].1.push(cpu_us);
            }
        }
    }
    Ok(measured)
}

/// The status `side` answers `path` with (and `header`).
async fn status(side: &Side, path: &str, header: Option<&str>) -> anyhow::Result<u16> {
    let mut curl = tokio::process::Command::new("curl");
    curl.args([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--max-time",
        "10",
    ]);
    for header in side
        .host
        .map(|h| format!("Host: {h}"))
        .iter()
        .map(String::as_str)
        .chain(header)
    {
        curl.args(["-H", header]);
    }
    let output = curl
        .arg(format!("http://{}{path}", side.addr))
        .output()
        .await
        .context("running curl")?;
    let code = String::from_utf8_lossy(&output.stdout);
    code.trim()
        .parse()
        .with_context(|| format!("{}: no status for {path}: {code:?}", side.name))
}

/// One wrk run: req/s, and the side's CPU µs per request.
async fn load(
    plan: &Plan,
    side: &Side,
    path: &str,
    header: Option<String>,
) -> anyhow::Result<(f64, f64)> {
    let spec = LoadSpec {
        url: format!("http://{}{path}", side.addr),
        host: side.host.map(str::to_owned),
        connections: plan.connections,
        duration: Duration::from_secs(plan.secs),
        post_bytes: 0,
        cpus: None,
        headers: header.into_iter().collect(),
    };
    let before = side.cpu_secs();
    let load = wrk::run(&spec).await?;
    if load.errors > 0 {
        bail!("{}: {} errors on {path}", side.name, load.errors);
    }
    let cpu_us = (side.cpu_secs() - before) * 1e6 / load.requests.max(1) as f64;
    Ok((load.rps, cpu_us))
}

/// The node's counts of requests answered from assets and of requests
/// that looked up an isolate (every request the engine ran).
#[derive(Debug, Default, Clone, Copy)]
struct NodeCounts {
    asset_answers: f64,
    isolate_lookups: f64,
    /// Requests that reached an isolate for one request to the Worker's
    /// path after the rounds (1 expected).
    worker_check: f64,
}

impl NodeCounts {
    async fn read(cluster: &Cluster) -> Self {
        let metric = |name| isolane_testenv::http_probe::metric_sum(cluster.node_admin, name, "");
        Self {
            asset_answers: metric("isolane_node_asset_answers_total")
                .await
                .unwrap_or(f64::NAN),
            isolate_lookups: metric("isolane_node_isolate_cache_lookups_total")
                .await
                .unwrap_or(f64::NAN),
            worker_check: 0.0,
        }
    }

    fn since(&self, before: &Self) -> Self {
        Self {
            asset_answers: self.asset_answers - before.asset_answers,
            isolate_lookups: self.isolate_lookups - before.isolate_lookups,
            worker_check: 0.0,
        }
    }
}

fn section(
    plan: &Plan,
    sides: &[&Side],
    measured: &Measured,
    node: &NodeCounts,
    deploy: &DeployTimes,
) -> Section {
    let mut markdown = format!(
        "## 15. Static assets through router + node vs workerd; a {} MiB assets deploy\n\n\
         Section 13's project deployed with `isolane deploy` (a local CNCF Distribution registry, by digest) to a control plane, the operator, one node and the router as processes; wrk (one thread, {} connections, {} s) sends section 13's three requests through the router (by `Host`) and, in the same rounds, interleaved, to workerd serving the same `public/` folder with its own `disk` service on its socket: workerd's native file server, no Worker in front, no isolate, the fastest way workerd answers a file (it sends no `ETag`, no `Content-Type` but `application/octet-stream`, and answers no conditional request). \
         {} rounds; medians; ratio: the median of the rounds' ratios. Nothing is pinned: the processes, wrk, etcd and the apiserver share the machine's cores. CPU per request: the router's and the node's processes together; workerd's process.\n\n",
        plan.deploy_mib, plan.connections, plan.secs, plan.rounds
    );
    let (table, lowest) = table(sides, measured);
    markdown.push_str(&table);
    let _ = writeln!(
        markdown,
        "\nThe node over the rounds: {:.0} requests answered from the assets, {:.0} reached an isolate (`isolane_node_asset_answers_total`, `isolane_node_isolate_cache_lookups_total`); one request to the Worker's own path after the rounds counted {:.0} there.\n",
        node.asset_answers, node.isolate_lookups, node.worker_check
    );
    markdown.push_str(&deploy_text(plan, deploy));
    let targets = targets(lowest, node);
    Section { markdown, targets }
}

/// The table, and the lowest ratio of the cells both sides answered
/// alike (NaN without workerd).
fn table(sides: &[&Side], measured: &Measured) -> (String, f64) {
    let with_workerd = sides.len() > 1;
    let mut table = Table::new(&[
        "request",
        "router → node req/s",
        "workerd req/s",
        "ratio",
        "router + node CPU/request",
        "workerd CPU/request",
        "status (isolane / workerd)",
    ]);
    let mut lowest = f64::NAN;
    for (cell, (name, _, conditional)) in CELLS.iter().enumerate() {
        let row = &measured.cells[cell];
        let statuses = &measured.statuses[cell];
        let same = statuses.first() == statuses.get(1) || !*conditional;
        let ratio = if with_workerd && same {
            let rounds: Vec<f64> = (row[0].0.iter().zip(&row[1].0))
                .map(|(a, b)| stats::ratio(*a, *b))
                .collect();
            let ratio = stats::median(&rounds);
            lowest = if lowest.is_nan() {
                ratio
            } else {
                lowest.min(ratio)
            };
            stats::fmt_ratio(ratio)
        } else {
            "—".to_owned()
        };
        // workerd's median of rates (`rates`) or of CPU, when it ran.
        let other = |rates: bool| {
            row.get(1).map_or_else(
                || "not run".to_owned(),
                |(rps, cpu)| match rates {
                    true => stats::fmt_rate(stats::median(rps)),
                    false => stats::fmt_us(stats::median(cpu)),
                },
            )
        };
        table.row(vec![
            (*name).to_owned(),
            stats::fmt_rate(stats::median(&row[0].0)),
            other(true),
            ratio,
            stats::fmt_us(stats::median(&row[0].1)),
            other(false),
            statuses
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(" / "),
        ]);
    }
    (table.render(), lowest)
}

fn deploy_text(plan: &Plan, deploy: &DeployTimes) -> String {
    let total = deploy.command + deploy.ready + deploy.first_answer;
    format!(
        "`isolane deploy` of an assets-only project of {} MiB ({} files of 1 MiB and an `index.html`, {} bytes) into the same cluster, before the load, to its first answer: {} in all: the command (artifact pushed to the registry by digest, Worker applied) {}, then the Worker Ready (the operator pulled and checked the artifact) {}, then the first file through the router (the node pulled and unpacked it) {}. One sample.\n",
        plan.deploy_mib,
        plan.deploy_mib,
        deploy.bytes,
        fmt_ms(total),
        fmt_ms(deploy.command),
        fmt_ms(deploy.ready),
        fmt_ms(deploy.first_answer),
    )
}

fn fmt_ms(took: Duration) -> String {
    format!("{:.0} ms", took.as_secs_f64() * 1e3)
}

fn targets(lowest: f64, node: &NodeCounts) -> Vec<Target> {
    vec![Target::new(
        "static assets through router + node ≥ 2× workerd's (disk service) req/s, no isolate entered",
        format!(
            "{} at the lowest cell answered alike; {:.0} requests reached an isolate",
            stats::fmt_ratio(lowest),
            node.isolate_lookups
        ),
        lowest >= 2.0 && node.isolate_lookups == 0.0,
    )]
}
