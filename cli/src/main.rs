//! The `isolane` command. `isolane dev` serves workers locally through the
//! real engine: router and node in one process, no Kubernetes.
#![forbid(unsafe_code)]

mod assets;
mod bundle;
mod cluster;
mod d1;
mod deploy;
mod dev;
mod push;
mod rules;
mod secret;
mod tail;
mod wrangler;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use isolane_telemetry::{EXIT_USAGE, LogFormat, init_tracing, parse_args};

/// mimalloc instead of the system allocator: the request path (router
/// proxy, node service, engine host) allocates small, short-lived objects
/// on every request, where glibc's malloc spent about a tenth of the CPU
/// time of a warm request in profiles.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a worker file (or a folder of Worker YAML) on a local port.
    Dev(dev::DevArgs),
    /// Push a Worker's code (a main module and its imports, or wrangler's
    /// output folder) to an OCI registry and print the Worker that names
    /// it by digest (docs/bundles.md).
    Push(push::PushArgs),
    /// Deploy a wrangler project (wrangler.toml, wrangler.json or
    /// wrangler.jsonc) as a Worker with your kubeconfig, or print it with
    /// --dry-run (docs/wrangler.md).
    Deploy(deploy::DeployArgs),
    /// Manage the secrets a wrangler project's Worker reads (docs/wrangler.md).
    Secret(secret::SecretArgs),
    /// D1 databases' migrations: `d1 migrations apply|list <DATABASE>`
    /// (`--local`, the default, or `--remote`) and `d1 migrations create
    /// <DATABASE> <MESSAGE>` (docs/d1.md).
    D1(d1::D1Args),
    /// Stream a Worker's invocations and console lines from a cluster, with
    /// your kubeconfig's credentials (docs/tail.md).
    Tail(tail::TailArgs),
}

fn main() -> ExitCode {
    // A wrong command line exits 64 (EX_USAGE), before any port is bound.
    let cli: Cli = parse_args();
    // Kept until exit: dropping it sends the last spans (`isolane dev`).
    let _telemetry = match init_tracing(cli.log_format, "info", "isolane-dev") {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("isolane: invalid log or trace settings: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match cli.command {
        Command::Push(args) => block_on("push", push::run(args)),
        Command::Tail(args) => block_on("tail", tail::run(args)),
        Command::Deploy(args) => block_on("deploy", deploy::run(args)),
        Command::Secret(args) => block_on("secret", secret::run(args)),
        Command::D1(args) => block_on("d1", d1::run(args)),
        Command::Dev(args) => {
            let config = match dev::DevConfig::from_args(args) {
                Ok(config) => config,
                Err(error) => {
                    tracing::error!(%error, "invalid configuration");
                    return ExitCode::from(EXIT_USAGE);
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

/// Runs a command's future on a current-thread runtime: its errors print
/// as `isolane <name>: …` and exit 1.
fn block_on(
    name: &str,
    command: impl std::future::Future<Output = anyhow::Result<()>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "could not start");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("isolane {name}: {error:#}");
            ExitCode::FAILURE
        }
    }
}
