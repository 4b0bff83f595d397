//! The `isolane` command. `isolane dev` serves workers locally through the
//! real engine: router and node in one process, no Kubernetes.
#![forbid(unsafe_code)]

mod dev;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Isolane: JavaScript workers on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "isolane", version, about)]
struct Cli {
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Plain, env = "ISOLANE_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Plain,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a worker file (or a folder of Worker YAML) on a local port.
    Dev(dev::DevArgs),
}

/// Exit status for an invalid configuration (EX_USAGE), before any port is bound.
const EXIT_CONFIG: u8 = 64;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    match cli.command {
        Command::Dev(args) => {
            let config = match dev::DevConfig::from_args(args) {
                Ok(config) => config,
                Err(error) => {
                    tracing::error!(%error, "invalid configuration");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match dev::run(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "isolane dev failed");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ISOLANE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Plain => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
