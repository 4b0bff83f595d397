//! `isolane-node`: parse and validate the configuration (invalid: exit 64,
//! before any port is bound), start the engine on the main thread, then run
//! the node on a tokio runtime until SIGTERM or SIGINT, drain, and exit 0.

use std::sync::Arc;

use anyhow::Context;
use isolane_engine::{Engine, EngineObserver};
use isolane_node::{Args, Node, NodeMetrics};
use isolane_telemetry::{EXIT_USAGE, parse_args, shutdown_signal};

/// mimalloc, as `isolane dev` and `isolane-router` have: glibc's malloc and
/// free were 13 % of an engine thread's instructions per request (callgrind,
/// docs/benchmark-history-hop.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let args: Args = parse_args();
    let log_format = args.admin.log_format;
    let mut config = match args.validate() {
        Ok(config) => config,
        Err(error) => {
            let _ = isolane_telemetry::usage_error("isolane-node", error);
            std::process::exit(i32::from(EXIT_USAGE));
        }
    };
    // Kept until exit (after the runtime and engine stop): dropping it
    // sends the last spans.
    let _telemetry = match isolane_telemetry::init_tracing(log_format, "info", "isolane-node") {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("isolane-node: invalid log or trace settings: {error}");
            std::process::exit(i32::from(EXIT_USAGE));
        }
    };

    let registry = prometheus::Registry::new();
    let metrics = Arc::new(
        NodeMetrics::register(&registry, config.threads()).context("registering metrics")?,
    );
    // The store counts its operations per namespace on /metrics.
    config.engine.store = config
        .engine
        .store
        .take()
        .map(|store| store.with_observer(metrics.storage.clone()));
    // Before the engine's threads exist: they write its slots.
    let turn_map = isolane_node::open_turn_map(&mut config);
    // V8 is initialised here, on the main thread, before any other thread
    // exists (the tokio runtime comes next).
    let observer: Arc<dyn EngineObserver> = metrics.clone();
    let engine = Engine::start(config.engine.clone(), observer).context("starting the engine")?;

    let result = run_node(config, engine.clone(), metrics, registry);
    engine.shutdown();
    // Stopped in order: the next process reports no crash.
    if let Some(map) = turn_map {
        map.close_clean();
    }
    result?;
    tracing::info!("exiting");
    Ok(())
}

/// Runs the node on a tokio runtime until SIGTERM or SIGINT, and drops the
/// runtime before the engine stops.
fn run_node(
    config: isolane_node::Config,
    engine: Engine,
    metrics: Arc<NodeMetrics>,
    registry: prometheus::Registry,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("isolane-node")
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(async {
        let client = isolane_apiclient::infer()
            .await
            .context("connecting to the Kubernetes API")?;
        let node = Node {
            config,
            engine,
            metrics,
            registry,
            client,
        };
        node.run(async {
            shutdown_signal().await;
        })
        .await
        .context("running the node")
    })
}
