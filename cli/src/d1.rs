//! `isolane d1 migrations apply|list|create <DATABASE>`: wrangler's
//! migrations folder (`migrations_dir`, default `migrations/`: `*.sql`
//! files applied in name order) and its migrations table
//! (`migrations_table`, default `d1_migrations`, wrangler's columns).
//!
//! As with wrangler, `apply` and `list` run against the local database
//! unless `--remote` is given: `isolane dev`'s state folder (`--local`,
//! [`local`]), or the cluster (`--remote`, [`remote`]: through the
//! Kubernetes API server, or `--endpoint`), where the router checks the
//! caller's Kubernetes rights and the database's owner node applies the
//! files. Either way each file and its row in the table are
//! one transaction, made durable before the next file (docs/d1.md,
//! "Migrations").

mod files;
mod local;
mod remote;

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::deploy::ProjectArgs;
use files::Folder;

#[derive(Debug, Args)]
pub struct D1Args {
    #[command(subcommand)]
    command: D1Command,
}

#[derive(Debug, Subcommand)]
enum D1Command {
    /// Migrations of a D1 database.
    Migrations {
        #[command(subcommand)]
        command: MigrationsCommand,
    },
}

#[derive(Debug, Subcommand)]
enum MigrationsCommand {
    /// Apply the migrations not applied yet, in name order.
    Apply {
        /// The database: its binding or its `database_name`.
        database: String,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Name the migrations not applied yet.
    List {
        /// The database: its binding or its `database_name`.
        database: String,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Write the next numbered migration file, `000N_<message>.sql`.
    Create {
        /// The database: its binding or its `database_name`.
        database: String,
        /// What the migration does (spaces become `_`).
        message: String,
        #[command(flatten)]
        project: ProjectArgs,
    },
}

/// Where `apply` and `list` run.
#[derive(Debug, Args)]
struct Target {
    /// Against `isolane dev`'s state folder (the default, as wrangler's).
    #[arg(long, conflicts_with = "remote")]
    local: bool,
    /// Against the cluster of your kubeconfig, through the Kubernetes API
    /// server (or `--endpoint`).
    #[arg(long)]
    remote: bool,
    /// `isolane dev`'s state folder (`--local`).
    #[arg(long, default_value = ".isolane/state")]
    state: PathBuf,
    /// The router's own tail endpoint, which serves D1 migrations too
    /// (`--remote`), e.g. http://isolane-router-tail:8081 (default: through
    /// the Kubernetes API server, the router's aggregated API).
    #[arg(long, env = "ISOLANE_TAIL_ENDPOINT")]
    endpoint: Option<String>,
    /// The kubeconfig context to use (default: current).
    #[arg(long)]
    context: Option<String>,
}

pub async fn run(args: D1Args) -> anyhow::Result<()> {
    let D1Command::Migrations { command } = args.command;
    match command {
        MigrationsCommand::Apply {
            database,
            target,
            project,
        } => {
            let folder = Folder::of(&project, &database)?;
            let applied = if target.remote {
                remote::apply(&remote_of(&target), &project, &folder).await
            } else {
                local::apply(&target.state, &project, &folder).await
            };
            print_applied(applied)
        }
        MigrationsCommand::List {
            database,
            target,
            project,
        } => {
            let folder = Folder::of(&project, &database)?;
            let pending = if target.remote {
                remote::pending(&remote_of(&target), &project, &folder).await?
            } else {
                local::pending(&target.state, &project, &folder).await?
            };
            print!("{}", files::pending_table(&pending));
            Ok(())
        }
        MigrationsCommand::Create {
            database,
            message,
            project,
        } => {
            let folder = Folder::of(&project, &database)?;
            let path = files::create(&folder, &message)?;
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            println!("\u{2705} Successfully created Migration '{name}'!\n");
            println!("The migration is available for editing here");
            println!("{}", path.display());
            Ok(())
        }
    }
}

/// Where `--remote` sends the migrations.
fn remote_of(target: &Target) -> remote::Remote {
    remote::Remote {
        endpoint: target.endpoint.clone(),
        context: target.context.clone(),
    }
}

/// Prints `Applied <file>` for each file applied (or `No migrations to
/// apply.`), then the failure, if any.
fn print_applied(applied: Result<Vec<String>, files::Failed>) -> anyhow::Result<()> {
    let (applied, failure) = match applied {
        Ok(applied) => (applied, None),
        Err(failed) => (failed.applied, Some(failed.error)),
    };
    if applied.is_empty() && failure.is_none() {
        println!("No migrations to apply.");
    }
    for file in applied {
        println!("Applied {file}");
    }
    failure.map_or(Ok(()), Err)
}
