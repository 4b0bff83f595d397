//! `isolane-operator`: flags → validated config (exit 64 when invalid) →
//! tracing → the async runtime → the operator library
//! ([`isolane_operator::lifecycle`]) until SIGTERM or SIGINT.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use isolane_operator::Args;
use isolane_operator::config::Config;
use isolane_operator::lifecycle;
use isolane_telemetry::{EXIT_USAGE, init_tracing, parse_args, shutdown_signal, usage_error};
use tokio_util::sync::CancellationToken;
use tracing::error;

/// How long in-flight reconciles may take to finish after SIGTERM before the
/// process exits anyway (the Lease then expires instead of being released).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let args: Args = parse_args();
    let config = match args.validate() {
        Ok(config) => config,
        Err(error) => return usage_error("isolane-operator", error),
    };
    // Kept until exit: dropping it sends the last spans.
    let _telemetry = match init_tracing(args.admin.log_format, "info", "isolane-operator") {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("isolane-operator: invalid log or trace settings: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            error!(%error, "failed to start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            error!(error = format!("{error:#}"), "operator failed");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    let storage = config.storage.clone();
    // Ports and TLS material first: bad input fails before the API is involved.
    let operator = lifecycle::bind(config).await?;
    let client = isolane_apiclient::infer()
        .await
        .context("failed to configure the Kubernetes client")?;
    let shutdown = CancellationToken::new();
    tokio::spawn(signal_shutdown(shutdown.clone()));
    if let Some(settings) = storage {
        tokio::spawn(isolane_operator::storage::migrate(
            settings,
            shutdown.clone(),
        ));
    }
    operator.run(client, shutdown).await;
    Ok(())
}

/// Cancels `shutdown` on SIGTERM or SIGINT; exits with 1 if shutting down takes
/// longer than [`SHUTDOWN_GRACE`].
async fn signal_shutdown(shutdown: CancellationToken) {
    shutdown_signal().await;
    shutdown.cancel();
    tokio::time::sleep(SHUTDOWN_GRACE).await;
    error!(
        grace_s = SHUTDOWN_GRACE.as_secs(),
        "shutdown took too long; exiting"
    );
    std::process::exit(1);
}
