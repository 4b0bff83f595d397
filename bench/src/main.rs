//! `isolane-bench`: the comparisons of issue 7, one subcommand each.
//! `bench/run.sh` (what `make bench` runs) builds everything, installs the
//! peers and the load generator, runs each subcommand into a results folder
//! and assembles `docs/benchmarks.md` with `report`.
//!
//! Each comparison runs its sides in the same run, interleaved round by
//! round, and reports medians and ratios. Load over HTTP comes from `wrk`
//! as a separate process; the engine comparisons drive the engine API
//! in-process. Every loop is bounded in count and time; traffic goes to
//! 127.0.0.1 only.
#![forbid(unsafe_code)]

mod assets;
mod assets_routed;
mod bundles;
mod cluster;
mod cold;
mod density;
mod distributed;
mod drive;
mod fleet;
mod https;
mod loader;
mod neighbours;
mod node_restart;
mod operator_scale;
mod per_core;
mod placement;
mod pool;
mod profile;
mod queues;
mod quiet;
mod r2_get;
mod report;
mod servers;
mod services;
mod sql;
mod state;
mod stats;
mod upstream;
mod warm;
mod websocket;
mod wrk;
mod zipf;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::report::Section;
use crate::servers::Binaries;

#[derive(Debug, Parser)]
#[command(
    name = "isolane-bench",
    about = "Isolane's benchmarks against its peers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Common {
    /// Where each comparison writes its section (`<name>.md`, `<name>.targets.json`).
    #[arg(long)]
    results: PathBuf,
    /// Where processes write their logs.
    #[arg(long)]
    work: PathBuf,
}

#[derive(Debug, Args)]
struct Http {
    /// The `isolane` binary (release).
    #[arg(long)]
    isolane: PathBuf,
    /// workerd's native binary.
    #[arg(long)]
    workerd: Option<PathBuf>,
    /// The worker script both sides serve.
    #[arg(long, default_value = "examples/hello.js")]
    script: PathBuf,
    /// Another `isolane` binary (an older build) measured in the same
    /// interleaved rounds, so a change is shown before and after
    /// (warm only).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// wrk connections, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    connections: Vec<usize>,
    /// Rounds (each visits every concurrency and every server).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Seconds per wrk run.
    #[arg(long, default_value_t = 5)]
    secs: u64,
    /// Send POSTs with a body of this many bytes instead of GETs (0: GETs).
    #[arg(long, default_value_t = 0)]
    post_bytes: usize,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// 1. Warm hello world: `isolane dev` vs workerd.
    Warm {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        http: Http,
    },
    /// 2. Router → node over gRPC vs `isolane dev` (and workerd).
    Distributed {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        http: Http,
        /// Folder with the release `isolane-node` and `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// The same of an older build, measured in the same interleaved
        /// rounds (in a control plane of its own).
        #[arg(long)]
        baseline_bin_dir: Option<PathBuf>,
        /// Node restarts each way (snapshot cached, built) after the rounds.
        #[arg(long, default_value_t = 5)]
        restarts: usize,
    },
    /// 3. Cold start: engine API, and process start vs workerd.
    Cold {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        isolane: PathBuf,
        #[arg(long)]
        workerd: Option<PathBuf>,
        #[arg(long, default_value = "examples/hello.js")]
        script: PathBuf,
        /// Never-seen workers per engine.
        #[arg(long, default_value_t = 200)]
        workers: usize,
        /// Process starts per server.
        #[arg(long, default_value_t = 10)]
        starts: usize,
        /// Another `isolane` binary (an older build) started in the same
        /// alternating rounds, with no flags beyond the port.
        #[arg(long)]
        baseline: Option<PathBuf>,
    },
    /// 4. Pool modes legacy / shared / pinned.
    Pool {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Seconds per mode per round.
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
    },
    /// 5. Density: idle isolates, many workers through the LRU.
    Density {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 1000)]
        idle: usize,
        #[arg(long, default_value_t = 10_000)]
        distinct: usize,
        /// Seconds per traffic shape.
        #[arg(long, default_value_t = 10)]
        secs: u64,
    },
    /// Section 13, static assets: `isolane dev` vs `wrangler dev` (workerd)
    /// serving one wrangler project folder (issue 59).
    Assets {
        #[command(flatten)]
        common: Common,
        /// The `isolane` binary (release).
        #[arg(long)]
        isolane: PathBuf,
        /// Node.js 22 or later, which wrangler needs.
        #[arg(long, default_value = "node")]
        node: PathBuf,
        /// wrangler's `bin/wrangler.js`.
        #[arg(long, default_value = "compat/node_modules/wrangler/bin/wrangler.js")]
        wrangler: PathBuf,
        #[arg(long, default_value_t = 4)]
        secs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long, default_value_t = 16)]
        connections: usize,
        /// The cores the servers run on (`taskset -c`).
        #[arg(long, default_value = "0")]
        server_cpus: String,
        /// The cores wrk runs on.
        #[arg(long, default_value = "1")]
        load_cpus: String,
    },
    /// Section 15, static assets through router + node vs workerd serving
    /// the same folder, and `isolane deploy` of a 20 MiB assets project to
    /// its first answer (issue 59).
    AssetsCluster {
        #[command(flatten)]
        common: Common,
        /// The `isolane` binary (`isolane deploy`).
        #[arg(long)]
        isolane: PathBuf,
        /// Folder with `isolane-operator`, `isolane-node`, `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// workerd's native binary: its `disk` service on the same folder.
        #[arg(long)]
        workerd: Option<PathBuf>,
        #[arg(long, default_value_t = 4)]
        secs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long, default_value_t = 16)]
        connections: usize,
        /// MiB of assets in the timed deploy.
        #[arg(long, default_value_t = 20)]
        deploy_mib: usize,
    },
    /// Section 14: HTTPS through the router vs plain HTTP in the same run
    /// (issue 61), with keep-alive and a new connection per request.
    Https {
        #[command(flatten)]
        common: Common,
        /// Folder with `isolane-operator`, `isolane-node`, `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// workerd's native binary: the same Worker over its own HTTPS.
        #[arg(long)]
        workerd: Option<PathBuf>,
        #[arg(long, default_value_t = 10)]
        secs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[arg(long, default_value_t = 16)]
        connections: usize,
    },
    /// 15. Worker Loader and dispatch (issue 60).
    ///
    /// Never-seen and warm loaded code vs workerd's `workerLoader`, and a
    /// dispatch call vs a direct route through the router and a node.
    Loader {
        #[command(flatten)]
        common: Common,
        /// The `isolane` binary.
        #[arg(long)]
        isolane: PathBuf,
        /// workerd's native binary (run with `--experimental`).
        #[arg(long)]
        workerd: Option<PathBuf>,
        /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// Never-seen ids per side per round.
        #[arg(long, default_value_t = 200)]
        ids: usize,
        /// Calls per long request of the warm rows.
        #[arg(long, default_value_t = 500)]
        calls: usize,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// wrk connections of the dispatch rows, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "16,64")]
        connections: Vec<usize>,
        /// Seconds per wrk run.
        #[arg(long, default_value_t = 5)]
        secs: u64,
    },
    /// 6. Placement: format placement_bench's output.
    Placement {
        #[command(flatten)]
        common: Common,
        /// The example's captured output.
        #[arg(long)]
        input: PathBuf,
    },
    /// 7. Operator: N Workers to Ready.
    Operator {
        #[command(flatten)]
        common: Common,
        /// Folder with the release `isolane-operator`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        #[arg(long, value_delimiter = ',', default_value = "1000,5000,10000")]
        counts: Vec<usize>,
        /// Seconds to wait for each count.
        #[arg(long, default_value_t = 600)]
        deadline: u64,
    },
    /// 8. A neighbour's latency beside a CPU hog on its thread.
    Neighbours {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Seconds per cell per round.
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
    },
    /// 11. State: Durable Objects and KV, router → node, vs workerd.
    State {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        workerd: Option<PathBuf>,
        /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// Never-seen objects per side per round.
        #[arg(long, default_value_t = 200)]
        first: usize,
        /// Requests per measure per side per round.
        #[arg(long, default_value_t = 300)]
        requests: usize,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// 17. SQL objects, D1 and R2 (issue 58), router → node.
    ///
    /// Against workerd's local SQLite objects and the S3 server read directly.
    Sql {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: sql::Args,
    },
    /// 19. Queues and Workflows (issue 57), router → node, PostgreSQL.
    ///
    /// Send → ack throughput, send → consumer start, workflow step overhead.
    Queues {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: queues::Args,
    },
    /// 18. Service bindings and JS RPC (issue 56).
    ///
    /// Warm RPC and `fetch` calls vs workerd's service bindings, and a
    /// gateway chain through router + node vs a single Worker.
    Services {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: services::Args,
    },
    /// 9. WebSockets: echo round trips vs workerd, idle sockets on a node.
    Websocket {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        isolane: PathBuf,
        #[arg(long)]
        workerd: Option<PathBuf>,
        /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// Socket counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
        sockets: Vec<usize>,
        /// Messages per socket per round.
        #[arg(long, default_value_t = 20)]
        messages: usize,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Idle sockets opened on the node for the memory measure.
        #[arg(long, default_value_t = 10_000)]
        idle: usize,
    },
    /// 10. Fleet simulation: warm-hit ratio per node memory budget.
    Fleet {
        /// Where the section is written (`10-fleet.md`); without it, printed.
        #[arg(long)]
        results: Option<PathBuf>,
        #[arg(long, default_value_t = 1_000_000)]
        workers: usize,
        #[arg(long, default_value_t = 16)]
        nodes: usize,
        #[arg(long, default_value_t = 8)]
        threads: u32,
        #[arg(long, default_value_t = 1.1)]
        zipf: f64,
        /// Requests counted.
        #[arg(long, default_value_t = 5_000_000)]
        requests: u64,
        /// Requests before counting starts: the pools fill, and the 1 M
        /// Workers are seen on the nodes their spills reach, as in a fleet
        /// that has run for long (each Worker's first request on a node is
        /// cold once, whatever the budget).
        #[arg(long, default_value_t = 20_000_000)]
        warmup: u64,
        /// What one warm isolate costs, MiB: by default the idle isolate's
        /// RSS that section 5 measured into the results folder, or
        /// `fleet::IDLE_ISOLATE_MIB` without one.
        #[arg(long)]
        isolate_mib: Option<f64>,
        /// Node memory budgets, GiB, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1,2,4,8,16,32,64,128,256"
        )]
        budgets_gib: Vec<u64>,
        /// A count bound per thread besides memory (none by default).
        #[arg(long)]
        isolates_per_thread: Option<usize>,
        /// Requests in flight per node for the router's load bound (0: none).
        #[arg(long, default_value_t = 16)]
        in_flight: usize,
        /// Bound every request at the load factor, lone ones too (the
        /// router's rule before `NodeSet::choose_for`).
        #[arg(long)]
        bound_every_request: bool,
        /// Without the router's standby prewarms (before they were sent).
        #[arg(long)]
        no_standby: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The idle-isolate goal to compare budgets at, MiB.
        #[arg(long, default_value_t = 1.5)]
        goal_mib: f64,
    },
    /// 12. Never-seen 8 and 64 MiB bundles: router + node vs workerd.
    ///
    /// First answers: apply → 200 through the router, spawn → 200 for workerd.
    Bundles {
        #[command(flatten)]
        common: Common,
        /// The `isolane` binary (`isolane push`).
        #[arg(long)]
        isolane: PathBuf,
        #[arg(long)]
        workerd: Option<PathBuf>,
        /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
        #[arg(long, default_value = "target/release")]
        bin_dir: PathBuf,
        /// Bundle sizes in MiB, comma-separated (at most 64: the artifact limit).
        #[arg(long, value_delimiter = ',', default_value = "8,64")]
        sizes_mib: Vec<usize>,
        /// Samples per size and case.
        #[arg(long, default_value_t = 5)]
        samples: usize,
    },
    /// Assemble docs/benchmarks.md from the results folder.
    Report {
        #[arg(long)]
        results: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        quick: bool,
        /// When the run started (UTC).
        #[arg(long)]
        started: String,
        /// How long the run took, in seconds.
        #[arg(long, default_value_t = 0.0)]
        took: f64,
    },
}

/// This process's arguments as a command line, without `--results <dir>`.
fn command_line_without_results() -> String {
    let mut line = "isolane-bench".to_owned();
    let mut skip = false;
    for arg in std::env::args().skip(1) {
        if std::mem::take(&mut skip) || arg.starts_with("--results=") {
            continue;
        }
        if arg == "--results" {
            skip = true;
            continue;
        }
        line.push(' ');
        line.push_str(&arg);
    }
    line
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ISOLANE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Warm { common, http } => {
            let section = runtime()?.block_on(warm_section(&common, &http))?;
            section.write(&common.results, "1-warm")
        }
        Command::Distributed {
            common,
            http,
            bin_dir,
            baseline_bin_dir,
            restarts,
        } => {
            let plan = distributed::Plan {
                bins: Binaries {
                    isolane: http.isolane.clone(),
                    workerd: http.workerd.clone(),
                },
                script: http.script.clone(),
                bin_dir,
                baseline_bin_dir,
                warm: warm_plan(&http),
                secs: http.secs,
                restarts,
            };
            let section = runtime()?.block_on(distributed::run(&plan, &common.work))?;
            section.write(&common.results, "2-distributed")
        }
        Command::Cold {
            common,
            isolane,
            workerd,
            script,
            workers,
            starts,
            baseline,
        } => {
            // Engines first, on the main thread, before any runtime thread.
            let engines = cold::engines()?;
            let bins = Binaries { isolane, workerd };
            let plan = cold::Plan {
                workers,
                starts,
                baseline,
            };
            let section =
                runtime()?.block_on(cold::run(&plan, &engines, &bins, &script, &common.work))?;
            section.write(&common.results, "3-cold")
        }
        Command::Pool {
            common,
            rounds,
            secs,
        } => {
            let engines = pool::engines()?;
            let plan = pool::Plan {
                rounds,
                duration: Duration::from_secs_f64(secs),
            };
            let section = runtime()?.block_on(pool::run(&plan, &engines))?;
            section.write(&common.results, "4-pool")
        }
        Command::Density {
            common,
            idle,
            distinct,
            secs,
        } => {
            let plan = density::Plan {
                idle,
                distinct,
                duration: Duration::from_secs(secs),
            };
            let engines = density::engines(&plan)?;
            let (section, idle_bytes) = runtime()?.block_on(density::run(&plan, &engines))?;
            std::fs::create_dir_all(&common.results)?;
            std::fs::write(
                common.results.join(density::IDLE_ISOLATE_FILE),
                format!("{idle_bytes:.0}\n"),
            )?;
            section.write(&common.results, "5-density")
        }
        Command::Fleet {
            results,
            workers,
            nodes,
            threads,
            zipf,
            requests,
            warmup,
            isolate_mib,
            budgets_gib,
            isolates_per_thread,
            in_flight,
            bound_every_request,
            no_standby,
            seed,
            goal_mib,
        } => {
            let isolate_mib =
                isolate_mib.unwrap_or_else(|| fleet::measured_isolate_mib(results.as_deref()));
            anyhow::ensure!(
                workers > 0 && nodes > 0 && threads > 0 && isolate_mib > 0.0,
                "workers, nodes, threads and --isolate-mib must be positive"
            );
            let plan = fleet::section::Plan {
                fleet: fleet::Setup {
                    workers,
                    nodes,
                    threads,
                    zipf,
                    requests,
                    warmup,
                    isolate_bytes: (isolate_mib * f64::from(1 << 20)) as usize,
                    budgets: budgets_gib.iter().map(|g| g << 30).collect(),
                    isolates_per_thread,
                    in_flight,
                    lone_stays: !bound_every_request,
                    standby: !no_standby,
                    seed,
                },
                density_requests: 12_314,
                goal_mib,
                command: command_line_without_results(),
            };
            let section = fleet::section::run(&plan);
            match results {
                Some(dir) => section.write(&dir, "10-fleet"),
                None => {
                    print!("{}", section.markdown);
                    Ok(())
                }
            }
        }
        Command::Assets {
            common,
            isolane,
            node,
            wrangler,
            secs,
            rounds,
            connections,
            server_cpus,
            load_cpus,
        } => {
            // The servers run in the project folder: no relative paths.
            let absolute = |path: PathBuf| {
                std::fs::canonicalize(&path).with_context(|| format!("{}", path.display()))
            };
            let plan = assets::Plan {
                isolane: absolute(isolane)?,
                node,
                wrangler: absolute(wrangler)?,
                secs,
                rounds,
                connections,
                server_cpus,
                load_cpus,
            };
            let section = runtime()?.block_on(assets::run(&plan, &common.work))?;
            section.write(&common.results, "13-assets")
        }
        Command::AssetsCluster {
            common,
            isolane,
            bin_dir,
            workerd,
            secs,
            rounds,
            connections,
            deploy_mib,
        } => {
            // `isolane deploy` runs in the project folder: no relative paths.
            let isolane = std::fs::canonicalize(&isolane)
                .with_context(|| format!("{}", isolane.display()))?;
            let plan = assets_routed::Plan {
                isolane,
                bin_dir,
                workerd,
                secs,
                rounds,
                connections,
                deploy_mib,
            };
            let section = runtime()?.block_on(assets_routed::run(&plan, &common.work))?;
            section.write(&common.results, "15-assets-cluster")
        }
        Command::Https {
            common,
            bin_dir,
            workerd,
            secs,
            rounds,
            connections,
        } => {
            let plan = https::Plan {
                bin_dir,
                workerd,
                secs,
                rounds,
                connections,
            };
            let section = runtime()?.block_on(https::run(&plan, &common.work))?;
            section.write(&common.results, "14-https")
        }
        Command::Loader {
            common,
            isolane,
            workerd,
            bin_dir,
            ids,
            calls,
            rounds,
            connections,
            secs,
        } => {
            anyhow::ensure!(
                ids > 0 && calls > 0 && calls < 1000 && rounds > 0,
                "--ids, --calls and --rounds must be positive, --calls below 1000 (the caller's subrequests)"
            );
            let plan = loader::Plan {
                bins: Binaries { isolane, workerd },
                bin_dir,
                ids,
                calls,
                rounds,
                warm: warm::Plan {
                    connections,
                    rounds,
                    duration: Duration::from_secs(secs),
                    warmup: Duration::from_secs(1),
                    post_bytes: 0,
                    load_cpus: None,
                },
            };
            let section = runtime()?.block_on(loader::run(&plan, &common.work))?;
            section.write(&common.results, "16-loader")
        }
        Command::Placement { common, input } => {
            let output = std::fs::read_to_string(&input)
                .with_context(|| format!("reading {}", input.display()))?;
            placement::section(&output).write(&common.results, "6-placement")
        }
        Command::Operator {
            common,
            bin_dir,
            counts,
            deadline,
        } => {
            let plan = operator_scale::Plan {
                operator: bin_dir.join("isolane-operator"),
                counts,
                deadline: Duration::from_secs(deadline),
            };
            let section = runtime()?.block_on(operator_scale::run(&plan, &common.work))?;
            section.write(&common.results, "7-operator")
        }
        Command::Neighbours {
            common,
            rounds,
            secs,
        } => {
            let engines = neighbours::engines()?;
            let plan = neighbours::Plan {
                rounds,
                duration: Duration::from_secs_f64(secs),
            };
            let section = runtime()?.block_on(neighbours::run(&plan, &engines))?;
            section.write(&common.results, "8-neighbours")
        }
        Command::State {
            common,
            workerd,
            bin_dir,
            first,
            requests,
            rounds,
        } => {
            let cluster = cluster::ClusterBinaries::in_dir(&bin_dir)?;
            let setup = state::Setup {
                cluster: &cluster,
                workerd: workerd.as_deref(),
                work: &common.work,
                bin_dir: &bin_dir,
            };
            let plan = state::Plan {
                first,
                requests,
                rounds,
            };
            let section = runtime()?.block_on(state::section(&setup, &plan))?;
            section.write(&common.results, "11-state")
        }
        Command::Sql { common, args } => {
            let section = runtime()?.block_on(sql::run(&args, &common.work))?;
            section.write(&common.results, "17-sql")
        }
        Command::Queues { common, args } => {
            let section = runtime()?.block_on(queues::run(&args, &common.work))?;
            section.write(&common.results, "19-queues")
        }
        Command::Services { common, args } => {
            let section = runtime()?.block_on(services::run(&args, &common.work))?;
            section.write(&common.results, "18-services")
        }
        Command::Websocket {
            common,
            isolane,
            workerd,
            bin_dir,
            sockets,
            messages,
            rounds,
            idle,
        } => {
            std::fs::create_dir_all(&common.work)?;
            let plan = websocket::Plan {
                sockets,
                messages,
                rounds,
            };
            let setup = websocket::Setup {
                bins: &Binaries { isolane, workerd },
                cluster: &cluster::ClusterBinaries::in_dir(&bin_dir)?,
                work: &common.work,
                plan: &plan,
                idle,
            };
            let section = runtime()?.block_on(websocket::section(&setup))?;
            section.write(&common.results, "9-websocket")
        }
        Command::Bundles {
            common,
            isolane,
            workerd,
            bin_dir,
            sizes_mib,
            samples,
        } => {
            anyhow::ensure!(
                samples > 0 && sizes_mib.iter().all(|&m| (1..=64).contains(&m)),
                "--samples must be positive and --sizes-mib between 1 and 64"
            );
            let plan = bundles::Plan { sizes_mib, samples };
            let setup = bundles::Setup {
                bins: &Binaries { isolane, workerd },
                cluster: &cluster::ClusterBinaries::in_dir(&bin_dir)?,
                work: &common.work,
                plan: &plan,
            };
            let section = runtime()?.block_on(bundles::section(&setup))?;
            section.write(&common.results, "12-bundles")
        }
        Command::Report {
            results,
            out,
            quick,
            started,
            took,
        } => {
            let markdown = report::assemble(&results, quick, &started, took)?;
            std::fs::write(&out, markdown).with_context(|| format!("writing {}", out.display()))
        }
    }
}

/// A current-thread runtime for the clients and process management (the
/// engine threads, when any, were started before it).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the runtime")
}

fn warm_plan(http: &Http) -> warm::Plan {
    warm::Plan {
        connections: http.connections.clone(),
        rounds: http.rounds,
        duration: Duration::from_secs(http.secs),
        warmup: Duration::from_secs(1),
        post_bytes: http.post_bytes,
        load_cpus: None,
    }
}

async fn warm_section(common: &Common, http: &Http) -> anyhow::Result<Section> {
    std::fs::create_dir_all(&common.work)?;
    let bins = Binaries {
        isolane: http.isolane.clone(),
        workerd: http.workerd.clone(),
    };
    let isolane = servers::isolane_dev(&bins, &http.script, &common.work, &[]);
    let config = servers::workerd_config(&http.script, &common.work.join("workerd-warm"))?;
    let workerd = servers::workerd(&bins, &config, &common.work)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let group = servers::workerd_group(&bins, &config, &common.work, cores)?;
    isolane.wait_ok(Duration::from_secs(60)).await?;
    workerd.wait_ok(Duration::from_secs(60)).await?;
    group.server.wait_ok(Duration::from_secs(60)).await?;
    let baseline = match &http.baseline {
        Some(bin) => {
            let bins = Binaries {
                isolane: bin.clone(),
                workerd: None,
            };
            let mut server = servers::isolane_dev(&bins, &http.script, &common.work, &[]);
            server.name = "isolane dev (baseline)";
            server.wait_ok(Duration::from_secs(60)).await?;
            Some(server)
        }
        None => None,
    };
    let plan = warm_plan(http);
    let mut under_load = vec![&isolane, &workerd, &group.server];
    under_load.extend(baseline.as_ref());
    let pids = servers::pids(&under_load);
    let mark = quiet::Mark::now(&pids);
    let measured = warm::measure(&under_load, &plan).await?;
    let others = mark.others(&pids);
    let mut markdown = format!(
        "## 1. Warm hello world: `isolane dev` vs workerd\n\n\
         `{}` served by `isolane dev` (engine threads = cores = {cores}, pinned pool, HTTP \
         served on the engine threads), by one `workerd serve` (the npm package's binary; one \
         event-loop thread per process, as workerd runs), and by `workerd × cores`: {} \
         `workerd serve` processes, one per core, each on its own listening socket of one \
         shared port (`SO_REUSEPORT`, the kernel spreading connections over them), their CPU \
         time counted together. All cores against all cores is the `workerd × cores` column; \
         the one-process column is all cores against one thread. wrk: 1 thread, keep-alive, {} \
         rounds of {} s per server per concurrency, servers alternating. The load generator \
         and the servers share the cores. {}\n\n",
        http.script.display(),
        group.processes(),
        plan.rounds,
        http.secs,
        quiet::describe(others)
    );
    if let Some(bin) = &http.baseline {
        markdown.push_str(&format!(
            "`isolane dev (baseline)` is another build (`{}`) under the same load in the same \
             interleaved rounds.\n\n",
            bin.display()
        ));
    }
    let against: &[usize] = if baseline.is_some() {
        &[2, 1, 3]
    } else {
        &[2, 1]
    };
    markdown.push_str(&measured.table(against));
    markdown.push('\n');
    let mut targets = vec![measured.ratio_target(
        "warm hello, all cores: `isolane dev` ≥ 1.5× `workerd × cores` (one process per core)",
        0,
        2,
        1.5,
    )];
    // Where `isolane dev`'s time goes at the highest concurrency.
    if let (Some(process), Some(&connections)) = (&isolane.process, plan.connections.last()) {
        let load = wrk::LoadSpec {
            url: isolane.url(),
            host: None,
            connections,
            duration: Duration::from_secs(http.secs),
            post_bytes: http.post_bytes,
            cpus: None,
            headers: Vec::new(),
        };
        markdown.push_str(&format!(
            "Where `isolane dev`'s CPU time goes at {connections} connections (`perf record -F 499` \
             for {} s during a separate wrk run, hottest symbols by self time, all threads):\n\n",
            http.secs
        ));
        match profile::hottest(process.pid(), &load, &common.work, 25).await {
            Ok(block) => markdown.push_str(&block),
            Err(error) => markdown.push_str(&format!("(not profiled: {error:#})\n")),
        }
        markdown.push('\n');
    }
    // The servers above stop before the per-core rows start theirs.
    drop((isolane, workerd, group, baseline));
    if let Some((table, target)) =
        per_core::measure(&bins, &http.script, &common.work, &plan).await?
    {
        markdown.push_str(&table);
        markdown.push('\n');
        targets.push(target);
    }
    Ok(Section { markdown, targets })
}
