//! `isolane-node`: parse and validate the configuration (invalid: exit 64,
//! before any port is bound), start the engine on the main thread, then run
//! the node on a tokio runtime until SIGTERM or SIGINT, drain, and exit 0.

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use isolane_engine::{Engine, EngineObserver};
use isolane_node::{Args, EXIT_USAGE, Node, NodeMetrics};

fn main() -> anyhow::Result<()> {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            let _ = error.print();
            std::process::exit(EXIT_USAGE);
        }
    };
    let log_format = args.admin.log_format;
    let config = match args.validate() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("isolane-node: invalid configuration: {error}");
            std::process::exit(EXIT_USAGE);
        }
    };
    isolane_telemetry::init_tracing(log_format, "info")?;

    let registry = prometheus::Registry::new();
    let metrics = Arc::new(
        NodeMetrics::register(&registry, config.threads()).context("registering metrics")?,
    );
    // V8 is initialised here, on the main thread, before any other thread
    // exists (the tokio runtime comes next).
    let observer: Arc<dyn EngineObserver> = metrics.clone();
    let engine = Engine::start(config.engine.clone(), observer).context("starting the engine")?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("isolane-node")
        .build()
        .context("building the tokio runtime")?;
    let result = runtime.block_on(async {
        let client = kube::Client::try_default()
            .await
            .context("connecting to the Kubernetes API")?;
        let node = Node {
            config,
            engine: engine.clone(),
            metrics,
            registry,
            client,
        };
        node.run(shutdown_signal())
            .await
            .context("running the node")
    });
    drop(runtime);
    engine.shutdown();
    result?;
    tracing::info!("exiting");
    Ok(())
}

/// SIGTERM (Kubernetes) or SIGINT (a terminal).
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!(signal = "SIGINT", "shutting down"),
            }
        }
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the node");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
