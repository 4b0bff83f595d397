//! `isolane dev`: flags → validated [`DevConfig`] → engine → HTTP server.
//!
//! Order matters: the engine starts (and initialises V8) on the main thread
//! before the tokio runtime spawns its threads, as the engine requires.

mod routes;
mod scheduled;
mod server;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use isolane_engine::{Engine, EngineConfig, NoopObserver, PoolMode, WorkerBundle};

pub(crate) use routes::Routes;

#[derive(Debug, Args)]
pub struct DevArgs {
    /// The worker script (ES module or service worker) to serve on every path.
    #[arg(required_unless_present = "workers", conflicts_with = "workers")]
    script: Option<PathBuf>,
    /// Serve every Worker YAML (isolane.dev/v1alpha1) in this folder, routed by
    /// host and longest path prefix.
    #[arg(long, env = "ISOLANE_WORKERS")]
    workers: Option<PathBuf>,
    /// Port to listen on.
    #[arg(long, default_value_t = 8787, env = "ISOLANE_PORT")]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1", env = "ISOLANE_HOST")]
    host: IpAddr,
    /// A binding for the worker's `env`, as NAME=VALUE (repeatable; single-file mode).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Engine threads (0: one per core).
    #[arg(long, default_value_t = 0, env = "ISOLANE_THREADS")]
    threads: usize,
    /// Isolate pool mode.
    #[arg(long, default_value = "pinned", env = "ISOLANE_POOL_MODE")]
    pool_mode: PoolMode,
    /// Run the worker's `scheduled` handler on this cron schedule, in UTC
    /// (repeatable; single-file mode: Worker YAMLs give `spec.triggers`).
    /// `GET /__scheduled?cron=…` runs it once, any time.
    #[arg(long = "cron", value_name = "SCHEDULE")]
    crons: Vec<String>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=VALUE"))?;
    if name.is_empty() {
        return Err(format!("{s:?} has an empty name"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Everything `isolane dev` runs with, validated.
#[derive(Debug)]
pub struct DevConfig {
    pub listen: SocketAddr,
    pub engine: EngineConfig,
    pub routes: Routes,
}

impl DevConfig {
    pub fn from_args(args: DevArgs) -> anyhow::Result<Self> {
        let routes = match (&args.script, &args.workers) {
            (Some(script), _) => {
                let schedules = args
                    .crons
                    .iter()
                    .map(|expr| isolane_crds::cron::Schedule::parse(expr, None))
                    .collect::<Result<Vec<_>, _>>()?;
                Routes::single(single_bundle(script, &args.env)?, schedules)
            }
            (None, Some(dir)) => Routes::from_dir(dir)?,
            (None, None) => anyhow::bail!("give a worker script or --workers <dir>"),
        };
        Ok(Self {
            listen: SocketAddr::new(args.host, args.port),
            engine: EngineConfig {
                threads: args.threads,
                pool_mode: args.pool_mode,
                // A developer's own machine: fetch may reach local services
                // (a node refuses them unless its admin opens them).
                egress: isolane_engine::EgressConfig::open(),
                ..EngineConfig::default()
            },
            routes,
        })
    }
}

/// The bundle for `isolane dev <file>`: id `dev/<file stem>`.
fn single_bundle(path: &PathBuf, env: &[(String, String)]) -> anyhow::Result<WorkerBundle> {
    let script =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("worker");
    let env = env.iter().cloned().collect::<BTreeMap<_, _>>();
    Ok(WorkerBundle {
        id: format!("dev/{stem}"),
        // The operator's revision of the same script, env and default limits.
        revision: isolane_crds::Bundle::compute_revision(
            &script,
            &env,
            &isolane_crds::Limits::default(),
        ),
        script,
        env,
        limits: Default::default(),
        allowed_hosts: Vec::new(),
    })
}

pub fn run(config: DevConfig) -> anyhow::Result<()> {
    let engine = Engine::start(config.engine.clone(), Arc::new(NoopObserver))
        .context("starting the engine")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("isolane-http")
        .enable_all()
        .build()
        .context("building the HTTP runtime")?;
    let served = runtime.block_on(server::serve(
        config.listen,
        engine.clone(),
        Arc::new(config.routes),
    ));
    drop(runtime);
    engine.shutdown();
    served
}
