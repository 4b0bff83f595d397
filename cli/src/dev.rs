//! `isolane dev`: the cluster's request path in one process. The router's
//! proxy ([`isolane_router::Proxy`]) matches, splits, places, limits, maps
//! outcomes to statuses and counts each request exactly as in a cluster, and
//! hands it to the node's own `Execute` service over the engine in this
//! process ([`node::InProcessNode`]) instead of a node over gRPC. The
//! router's server accepts connections; the router's cron loop runs the
//! schedules; the admin server serves both components' `/metrics`.
//!
//! Order matters: the engine starts (and initialises V8) on the main thread
//! before the tokio runtimes spawn their threads, as the engine requires.

mod dev_worker;
mod node;
mod project;
mod reload;
mod serving;
mod tail;
mod wrangler;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use isolane_engine::{Engine, EngineConfig, EngineObserver, PoolMode};
use isolane_node::{Admission, BundleIndex, NodeMetrics, NodeService};
use isolane_router::server::RouterWorkers;
use isolane_router::{Proxy, ProxyConfig, RouterMetrics};
use isolane_telemetry::{AdminServer, Readiness};
use isolane_worker::TailFormat;
use tokio_util::sync::CancellationToken;

pub use project::Source;

#[derive(Debug, Args)]
pub struct DevArgs {
    /// The worker script (ES module or service worker) to serve on every
    /// path. Without it (and without --workers), the wrangler project in
    /// this folder (wrangler.json, wrangler.jsonc or wrangler.toml).
    #[arg(conflicts_with_all = ["workers", "config"])]
    script: Option<PathBuf>,
    /// The wrangler project's config file (wrangler.toml, wrangler.json or
    /// wrangler.jsonc), read as `wrangler dev` reads it (docs/wrangler.md).
    #[arg(short = 'c', long, value_name = "FILE", conflicts_with = "workers")]
    config: Option<PathBuf>,
    /// Serve every Worker YAML (isolane.dev/v1alpha1) in this folder, routed by
    /// host and longest path prefix.
    #[arg(long, env = "ISOLANE_WORKERS")]
    workers: Option<PathBuf>,
    /// Port to listen on.
    #[arg(long, default_value_t = 8787, env = "ISOLANE_PORT")]
    port: u16,
    /// Address to listen on (the admin server too).
    #[arg(long, default_value = "127.0.0.1", env = "ISOLANE_HOST")]
    host: IpAddr,
    /// Port of the admin server: `/metrics` (the router's and the node's),
    /// `/ready`, `/live`. 0 picks a free port, printed at start.
    #[arg(long, default_value_t = 0, env = "ISOLANE_ADMIN_PORT")]
    admin_port: u16,
    /// A binding for the worker's `env`, as NAME=VALUE (repeatable;
    /// single-file mode); in a wrangler project, a bare NAME selects the
    /// environment `[env.NAME]`, as `wrangler dev --env NAME`.
    #[arg(short = 'e', long = "env", value_name = "NAME=VALUE|ENV", value_parser = parse_env)]
    env: Vec<EnvArg>,
    /// A KV namespace binding, as BINDING or BINDING=NAMESPACE (the
    /// namespace named as the binding when not given; repeatable;
    /// single-file mode: Worker YAMLs give `spec.bindings`).
    #[arg(long = "kv", value_name = "BINDING[=NAMESPACE]", value_parser = parse_kv, conflicts_with = "workers")]
    kv: Vec<isolane_worker::Binding>,
    /// Bind a Durable Object class the script exports
    /// (`BINDING=ClassName`; repeatable; single-file mode: Worker YAMLs
    /// give `spec.bindings` with `durableObject`).
    #[arg(long = "durable-object", value_name = "BINDING=CLASS", value_parser = parse_durable_object, conflicts_with = "workers")]
    durable_objects: Vec<isolane_worker::Binding>,
    /// CPU time one request may use, in ms (single-file mode; Worker YAMLs give `spec.limits`).
    #[arg(long, value_name = "MS", default_value_t = isolane_worker::Limits::DEFAULT_CPU_MS, conflicts_with = "workers")]
    cpu_ms: u32,
    /// Wall-clock time one request may take, in ms (single-file mode).
    #[arg(long, value_name = "MS", default_value_t = isolane_worker::Limits::DEFAULT_WALL_MS, conflicts_with = "workers")]
    wall_ms: u32,
    /// Memory the worker's isolate may hold, in MiB (single-file mode).
    #[arg(long = "memory-mib", value_name = "MIB", default_value_t = isolane_worker::Limits::DEFAULT_MEMORY_MIB, conflicts_with = "workers")]
    memory_mib: u32,
    /// Outbound `fetch` calls one request may make (single-file mode).
    #[arg(long, value_name = "N", default_value_t = isolane_worker::Limits::DEFAULT_SUBREQUESTS, conflicts_with = "workers")]
    subrequests: u32,
    /// Engine threads (0: one per core).
    #[arg(long, default_value_t = 0, env = "ISOLANE_THREADS")]
    threads: usize,
    /// HTTP threads of their own (0: none, connections are served on the
    /// engine threads, so a request is read, run and answered on one; N:
    /// N threads that hand each request to its engine thread, for
    /// comparison).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        env = "ISOLANE_HTTP_THREADS"
    )]
    http_threads: usize,
    /// Isolate pool mode.
    #[arg(long, default_value = "pinned", env = "ISOLANE_POOL_MODE")]
    pool_mode: PoolMode,
    /// Run the worker's `scheduled` handler on this cron schedule, in UTC
    /// (repeatable; single-file mode: Worker YAMLs give `spec.triggers`).
    /// `GET /__scheduled?cron=…` runs it once, any time.
    #[arg(long = "cron", value_name = "SCHEDULE")]
    crons: Vec<String>,
    /// The compatibility date, YYYY-MM-DD (single-file mode; Worker YAMLs
    /// give `spec.compatibilityDate`): it turns on what workerd turns on
    /// from that date, Node.js compatibility from 2026-08-04.
    #[arg(long, value_name = "YYYY-MM-DD", conflicts_with = "workers")]
    compatibility_date: Option<String>,
    /// Compatibility flags, comma-separated or repeated (single-file mode),
    /// e.g. `nodejs_compat`; see docs/nodejs.md.
    #[arg(
        long,
        value_name = "FLAG",
        value_delimiter = ',',
        conflicts_with = "workers"
    )]
    compatibility_flags: Vec<String>,
    /// Do not reload when the script or the Worker folder changes.
    #[arg(long)]
    no_reload: bool,
    /// Where KV namespaces and Durable Objects keep their data (an SQLite file, made on first
    /// use), like wrangler's `--persist-to`; kept across restarts.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".isolane/state",
        env = "ISOLANE_STATE"
    )]
    state: PathBuf,
    /// The queue messages one Kubernetes namespace's queues may hold in all
    /// (a node's flag of the same name): a send past it is refused
    /// (`Queue send failed: Storage Limit Exceeded: …`). 0: no bound.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    queue_namespace_max_messages: u64,
    /// The bytes one Kubernetes namespace's queues may hold in all, in MiB
    /// (a node's flag of the same name). 0: no bound.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    queue_namespace_max_mib: u64,
    /// How long a queue message is kept after it was sent, in seconds
    /// (a node's flag of the same name; Cloudflare's 4 days). 0: for ever.
    #[arg(long, value_name = "SECS", default_value_t = 345_600)]
    queue_retention_secs: u64,
    /// How the Workers' invocations and console lines are printed on
    /// stdout (`isolane tail`'s output): `pretty` or `json` (one object a line).
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "pretty",
        env = "ISOLANE_TAIL_FORMAT"
    )]
    tail_format: TailFormat,
    /// Do not print the Workers' invocations and console lines.
    #[arg(long, env = "ISOLANE_NO_TAIL")]
    no_tail: bool,
    /// Where the engine keeps its startup snapshot between runs, one file
    /// per build, checked before use, and big modules' V8 code caches (in
    /// its `code/` folder) (default: `isolane/snapshots` in the user's
    /// cache folder, `$XDG_CACHE_HOME` or `~/.cache`).
    #[arg(long, value_name = "DIR", env = isolane_node::SNAPSHOT_CACHE_DIR_ENV)]
    snapshot_cache_dir: Option<PathBuf>,
    /// Build the startup snapshot at every start and compile every module
    /// from its source; read and write no cache.
    #[arg(long, conflicts_with = "snapshot_cache_dir")]
    no_snapshot_cache: bool,
    /// A PEM bundle of CA certificates that Workers' TLS (HTTPS `fetch`,
    /// WebSockets, `connect()` and `startTls()`) trusts besides the public
    /// web PKI roots, as a node's `--fetch-extra-ca`.
    #[arg(long, value_name = "PEM", env = "ISOLANE_FETCH_EXTRA_CA")]
    fetch_extra_ca: Option<PathBuf>,
    /// A DNS-over-HTTPS server (its JSON API) that `node:dns` asks, through
    /// the Workers' own `fetch`, as a node's `--dns-over-https` (default:
    /// none, `node:dns` asks this machine's resolver).
    #[arg(long, value_name = "URL", env = isolane_node::DNS_OVER_HTTPS_ENV, value_parser = isolane_node::parse_dns_over_https)]
    dns_over_https: Option<String>,
    #[command(flatten)]
    websocket: isolane_node::WebSocketArgs,
    #[command(flatten)]
    objects: isolane_node::ObjectArgs,
}

/// `isolane/snapshots` in the user's cache folder, if there is one.
fn user_snapshot_cache() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("isolane").join("snapshots"))
}

fn parse_kv(s: &str) -> Result<isolane_worker::Binding, String> {
    let (name, namespace) = s.split_once('=').unwrap_or((s, s));
    let binding = isolane_worker::Binding::kv(name, namespace);
    isolane_worker::check_bindings([], std::slice::from_ref(&binding))
        .map_err(|error| error.to_string())?;
    Ok(binding)
}

fn parse_durable_object(s: &str) -> Result<isolane_worker::Binding, String> {
    let (name, class) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not BINDING=ClassName"))?;
    let binding = isolane_worker::Binding::durable_object(name, class);
    isolane_worker::check_bindings([], std::slice::from_ref(&binding))
        .map_err(|error| error.to_string())?;
    Ok(binding)
}

/// One `--env`: a binding (`NAME=VALUE`) or a wrangler environment (`NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvArg {
    Binding(String, String),
    Environment(String),
}

fn parse_env(s: &str) -> Result<EnvArg, String> {
    let Some((name, value)) = s.split_once('=') else {
        if s.is_empty() {
            return Err("an empty --env".to_owned());
        }
        return Ok(EnvArg::Environment(s.to_owned()));
    };
    if name.is_empty() {
        return Err(format!("{s:?} has an empty name"));
    }
    Ok(EnvArg::Binding(name.to_owned(), value.to_owned()))
}

/// Everything `isolane dev` runs with, validated.
#[derive(Debug)]
pub struct DevConfig {
    pub listen: SocketAddr,
    pub admin: SocketAddr,
    /// HTTP threads of their own; `None`: connections are served on the
    /// engine threads.
    pub http_threads: Option<NonZeroUsize>,
    pub engine: EngineConfig,
    pub source: Source,
    /// The Workers as read at start (a bad one is a usage error then; after
    /// a reload it is only logged).
    pub project: project::Project,
    pub reload: bool,
    /// How the Workers' invocations are printed; `None`: not at all.
    pub tail: Option<TailFormat>,
    /// Where the turn map is kept (`--state`), as a node keeps it: a crash
    /// says at the next start which Worker was running.
    pub state: PathBuf,
}

/// The source of `isolane dev` run in a wrangler project (neither a script
/// nor `--workers`): the single script's flags are refused, `--env` names
/// at most one of the project's environments.
fn project_source(
    args: &DevArgs,
    bindings: &BTreeMap<String, String>,
    mut environments: Vec<String>,
) -> anyhow::Result<Source> {
    if !bindings.is_empty() {
        anyhow::bail!(
            "--env NAME=VALUE binds a single script's env: a wrangler project's vars are in its config"
        );
    }
    let script_flags = [
        ("--kv", !args.kv.is_empty()),
        ("--durable-object", !args.durable_objects.is_empty()),
        ("--cron", !args.crons.is_empty()),
        ("--compatibility-date", args.compatibility_date.is_some()),
        (
            "--compatibility-flags",
            !args.compatibility_flags.is_empty(),
        ),
    ];
    if let Some((flag, _)) = script_flags.iter().find(|(_, given)| *given) {
        anyhow::bail!("{flag} is for a single script: a wrangler project's config gives it");
    }
    if environments.len() > 1 {
        anyhow::bail!(
            "--env selects one environment; got {}",
            environments.join(", ")
        );
    }
    wrangler_source(args.config.as_deref(), environments.pop())
}

/// Where `isolane dev`'s Workers come from: one script (with the flags'
/// bindings, limits and compatibility) or a folder of Worker YAML.
fn source_of(args: &DevArgs) -> anyhow::Result<Source> {
    let (mut bindings, mut environments) = (BTreeMap::new(), Vec::new());
    for arg in &args.env {
        match arg {
            EnvArg::Binding(name, value) => {
                bindings.insert(name.clone(), value.clone());
            }
            EnvArg::Environment(env) => environments.push(env.clone()),
        }
    }
    if args.script.is_some() || args.workers.is_some() {
        if let Some(env) = environments.first() {
            anyhow::bail!(
                "--env {env:?} is not NAME=VALUE (a bare name selects a wrangler project's environment)"
            );
        }
    } else {
        return project_source(args, &bindings, environments);
    }
    match (&args.script, &args.workers) {
        (Some(path), _) => {
            let limits = isolane_worker::Limits {
                cpu_ms: args.cpu_ms,
                wall_ms: args.wall_ms,
                memory_mib: args.memory_mib,
                subrequests: args.subrequests,
            };
            limits.validate()?;
            let compatibility = project::Compatibility {
                date: args.compatibility_date.clone(),
                flags: args.compatibility_flags.clone(),
            };
            compatibility.check()?;
            Ok(Source::Script {
                path: path.clone(),
                env: bindings,
                kv: args
                    .kv
                    .iter()
                    .chain(&args.durable_objects)
                    .cloned()
                    .collect(),
                limits,
                crons: args.crons.clone(),
                compatibility,
            })
        }
        (None, Some(dir)) => Ok(Source::Folder(dir.clone())),
        (None, None) => anyhow::bail!("give a worker script or --workers <dir>"),
    }
}

/// The wrangler project of `--config`, or of the config file in this folder.
fn wrangler_source(config: Option<&Path>, env: Option<String>) -> anyhow::Result<Source> {
    let file = match config {
        Some(file) => file.to_path_buf(),
        None => crate::wrangler::find(Path::new(".")).ok_or_else(|| {
            anyhow::anyhow!(
                "give a worker script, --workers <dir> or --config <wrangler config>: this folder has no {}",
                crate::wrangler::CONFIG_FILES.join(", ")
            )
        })?,
    };
    Ok(Source::Wrangler { file, env })
}

impl DevConfig {
    pub fn from_args(args: DevArgs) -> anyhow::Result<Self> {
        let source = source_of(&args)?;
        let project = source.load()?;
        let extra_ca_pem = match &args.fetch_extra_ca {
            Some(path) => Some(
                std::fs::read(path)
                    .with_context(|| format!("--fetch-extra-ca {}", path.display()))?,
            ),
            None => None,
        };
        let snapshot_cache = if args.no_snapshot_cache {
            None
        } else {
            args.snapshot_cache_dir.or_else(user_snapshot_cache)
        };
        Ok(Self {
            listen: SocketAddr::new(args.host, args.port),
            admin: SocketAddr::new(args.host, args.admin_port),
            http_threads: NonZeroUsize::new(args.http_threads),
            engine: EngineConfig {
                families: isolane_runtime::families(),
                threads: args.threads,
                pool_mode: args.pool_mode,
                // A developer's own machine: fetch may reach local services
                // (a node refuses them unless its admin opens them).
                egress: isolane_engine::EgressConfig {
                    extra_ca_pem,
                    dns_over_https: args.dns_over_https,
                    ..isolane_engine::EgressConfig::open()
                },
                websocket: args.websocket.config(),
                object_idle: args.objects.idle(),
                store: Some(
                    isolane_storage::Store::sqlite(&args.state)
                        .with_queue_quota_if(isolane_storage::QueueQuota::from_flags(
                            args.queue_namespace_max_messages,
                            args.queue_namespace_max_mib,
                        ))
                        .with_queue_retention(Duration::from_secs(args.queue_retention_secs)),
                ),
                snapshot_cache: snapshot_cache.clone(),
                // Big modules' V8 code caches, in `code/` of the same folder.
                code_cache: snapshot_cache
                    .map(|dir| isolane_engine::CodeCacheConfig::new(dir.join("code"))),
                ..EngineConfig::default()
            },
            source,
            project,
            reload: !args.no_reload,
            tail: (!args.no_tail).then_some(args.tail_format),
            state: args.state,
        })
    }
}

/// How long in-flight connections get after Ctrl-C.
const GRACE: Duration = Duration::from_secs(10);

/// How long a request for a revision not loaded yet waits for it (a node's
/// default `--revision-wait`).
const REVISION_WAIT: Duration = Duration::from_secs(2);

/// Revisions of a Worker kept after a reload, for requests already routed
/// to them.
const REVISIONS_KEPT: usize = 3;

pub fn run(mut config: DevConfig) -> anyhow::Result<()> {
    let registry = prometheus::Registry::new();
    let threads = config.engine.resolved_threads();
    let turn_map = open_turn_map(&config.state, threads);
    config.engine.turn_map = turn_map.clone();
    let node_metrics = Arc::new(
        NodeMetrics::register(&registry, threads).context("registering the node's metrics")?,
    );
    let observer: Arc<dyn EngineObserver> = node_metrics.clone();
    let engine = Engine::start(config.engine.clone(), observer).context("starting the engine")?;
    let control = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("isolane-dev-control")
        .enable_all()
        .build()
        .context("building the control runtime")?;
    let served = control.block_on(serve(config, engine.clone(), registry, node_metrics));
    drop(control);
    engine.shutdown();
    if let Some(map) = turn_map {
        map.close_clean();
    }
    served
}

/// The turn map in `state` (`isolane_engine::TurnMap`): a previous run that
/// crashed is reported with the Workers that were in a turn.
fn open_turn_map(state: &std::path::Path, threads: usize) -> Option<Arc<isolane_engine::TurnMap>> {
    let path = isolane_turnmap::path_in(state, "dev");
    let started = isolane_membership::crash::unix_ms();
    match isolane_engine::TurnMap::open(&path, threads, started) {
        Ok((map, isolane_engine::Previous::Run(run))) => {
            if run.crashed() {
                tracing::warn!(in_turn = ?run.in_turn, "the previous isolane dev crashed; these workers were in a turn");
            }
            Some(map)
        }
        Ok((map, _)) => Some(map),
        Err(error) => {
            tracing::warn!(%error, "no turn map");
            None
        }
    }
}

async fn serve(
    config: DevConfig,
    engine: Engine,
    registry: prometheus::Registry,
    node_metrics: Arc<NodeMetrics>,
) -> anyhow::Result<()> {
    let threads = engine.threads();
    // The router's and the node's latency exemplars, in one set.
    let exemplars = node_metrics.exemplars().clone();
    let router_metrics = Arc::new(
        RouterMetrics::register(&registry, MAX_WORKER_SERIES)
            .context("registering the router's metrics")?
            .with_exemplars(&exemplars),
    );
    // The Workers' invocations and console lines, on stdout.
    if let Some(format) = config.tail {
        tail::spawn(&engine, format).context("tailing the Workers")?;
    }
    let bundles = Arc::new(BundleIndex::new(REVISIONS_KEPT));
    // Durable Object classes one Worker of the project hosts for another.
    engine.set_workers(bundles.clone());
    // A Worker removed from the project leaves the engine at once.
    tokio::spawn(isolane_node::retire_deleted(
        bundles.clone(),
        engine.clone(),
    ));
    // Durable Object alarms kept in `.isolane/state`, delivered while this
    // runs (the loop ends with the control runtime).
    let _alarms = isolane_node::spawn_alarms(&engine, bundles.clone());
    // Queue messages kept in `.isolane/state`, delivered to the Workers
    // that consume them while this runs (aborted on the way out).
    let queues = isolane_node::spawn_queues(&engine, bundles.clone(), node_metrics.queues.clone());
    let workflows = isolane_node::spawn_workflows(&engine, bundles.clone());
    let admission = Admission::new(threads, config.engine.queue_depth, node_metrics.clone());
    let runtimes = engine.runtimes();
    let local = engine.clone();
    let service = NodeService::new(
        node::NODE_NAME.to_owned(),
        engine,
        bundles.clone(),
        admission,
        node_metrics,
        REVISION_WAIT,
    );
    let proxy = Proxy::builder(
        ProxyConfig {
            // The Worker's own wall limit ends a request (up to the CRD's
            // 300 s), not the router's default deadline.
            request_timeout: Duration::from_secs(301),
            test_scheduled: true,
            // One cap both ways: `--websocket-max-message-kib`.
            websocket: isolane_router::sockets::SocketLimits {
                max_message_bytes: config.engine.websocket.max_message_bytes,
                ..isolane_router::sockets::SocketLimits::default()
            },
            ..ProxyConfig::default()
        },
        router_metrics.clone(),
    )
    .in_process(
        Arc::new(node::InProcessNode {
            service,
            engine: local,
        }),
        node::NODE_NAME,
        u32::try_from(threads).unwrap_or(u32::MAX),
    )
    .build();
    let serving = serving::Serving::new(bundles, proxy.clone());
    serving.apply(&config.project);

    let admin = AdminServer::new(registry, Readiness::new())
        .with_exemplars(exemplars)
        .bind(config.admin)
        .await
        .context("binding the admin server")?;
    let listener = isolane_router::server::bind(config.listen)
        .with_context(|| format!("binding {}", config.listen))?;
    let local = listener.local_addr().context("reading the bound address")?;
    tracing::info!(
        address = %local,
        url = %format!("http://{local}/"),
        metrics = %format!("http://{}/metrics", admin.local_addr()),
        threads,
        "listening"
    );
    let shutdown = CancellationToken::new();
    let admin = tokio::spawn(admin.serve(shutdown.clone().cancelled_owned()));
    let cron = tokio::spawn(isolane_router::cron::run_alone(
        proxy.clone(),
        isolane_router::cron::Reporter::local(router_metrics),
        shutdown.clone(),
    ));
    if config.reload {
        let (source, serving, stop) = (config.source.clone(), serving.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(error) = reload::run(source, serving, stop).await {
                tracing::warn!(error = format!("{error:#}"), "changes will not be reloaded");
            }
        });
    }
    let front = FrontEnd::start(config.http_threads, listener, runtimes, proxy, &shutdown)?;

    isolane_telemetry::shutdown_signal().await;
    tracing::info!("shutting down");
    shutdown.cancel();
    front.join().await?;
    if let Some(workflows) = workflows {
        workflows.abort();
    }
    if let Some(queues) = queues {
        queues.abort();
    }
    let _ = tokio::join!(admin, cron);
    Ok(())
}

/// Where HTTP connections are served.
enum FrontEnd {
    /// On the engine threads: each accepted connection is served to its end
    /// on the next engine thread in turn, so a request whose Worker lives
    /// there is read, run and answered on one thread, with no hand-off
    /// (one, there and back, when it lives on another).
    Engine(tokio::task::JoinHandle<()>),
    /// On HTTP threads of their own (`--http-threads`), which hand each
    /// request to its engine thread, as a router does to a node's.
    Threads(RouterWorkers),
}

impl FrontEnd {
    fn start(
        threads: Option<NonZeroUsize>,
        listener: std::net::TcpListener,
        runtimes: Vec<tokio::runtime::Handle>,
        proxy: Proxy,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<Self> {
        if let Some(threads) = threads {
            return RouterWorkers::spawn(listener, threads, proxy, shutdown.clone(), GRACE)
                .map(Self::Threads)
                .context("starting the HTTP threads");
        }
        let listener =
            tokio::net::TcpListener::from_std(listener).context("registering the listener")?;
        Ok(Self::Engine(tokio::spawn(
            isolane_router::server::serve_over(listener, runtimes, proxy, shutdown.clone(), GRACE),
        )))
    }

    /// Waits for open connections to finish (within the grace) after shutdown.
    async fn join(self) -> anyhow::Result<()> {
        match self {
            Self::Engine(serving) => serving.await.context("serving HTTP"),
            Self::Threads(workers) => tokio::task::spawn_blocking(move || workers.join())
                .await
                .context("joining the HTTP threads"),
        }
    }
}

/// Workers with their own series in the router's per-worker metrics.
const MAX_WORKER_SERIES: usize = 50;
