//! What every Isolane binary shares with the process that runs it: the
//! command line (a wrong one exits 64, `EX_USAGE`, before any port is bound)
//! and the signals that stop it (SIGTERM from Kubernetes, SIGINT from a
//! terminal).

use std::fmt::Display;
use std::process::ExitCode;

/// `EX_USAGE` (sysexits.h): the command line or the environment is wrong.
pub const EXIT_USAGE: u8 = 64;

/// Parses `A` from the command line and the environment. `--help` and
/// `--version` print and exit 0; any other error prints clap's message and
/// exits with [`EXIT_USAGE`] (clap's own default would be 2).
pub fn parse_args<A: clap::Parser>() -> A {
    match A::try_parse() {
        Ok(args) => args,
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            // Printing to a closed stderr is not worth a panic.
            let _ = error.print();
            std::process::exit(i32::from(EXIT_USAGE));
        }
    }
}

/// Reports a configuration that parsed but is invalid, as every binary
/// does, and returns the exit code for `main`.
pub fn usage_error(binary: &str, error: impl Display) -> ExitCode {
    eprintln!("{binary}: invalid configuration: {error}");
    ExitCode::from(EXIT_USAGE)
}

/// Resolves at the first SIGTERM or SIGINT, logged, and returns its name.
/// When SIGTERM cannot be listened for, only SIGINT stops the process (a
/// warning says so).
pub async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let name = match signal(SignalKind::terminate()) {
        Ok(mut terminate) => tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the process");
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    };
    tracing::info!(signal = name, "shutdown requested");
    name
}
