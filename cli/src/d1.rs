//! `isolane d1 migrations apply <DATABASE> --local`: wrangler's migrations
//! folder (`migrations_dir`, default `migrations/`: `*.sql` files applied
//! in name order) run against a D1 database of `isolane dev`'s state
//! folder, each file and its row in the migrations table
//! (`migrations_table`, default `d1_migrations`, wrangler's columns) in one
//! transaction, then appended to the database's log before the next. The
//! database is opened as `isolane dev` opens it (`Store::d1_open`), which
//! fences a running `isolane dev`'s copy (docs/d1.md, "Migrations").

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use isolane_storage::Store;
use isolane_storage::sql::{ObjectDatabase, RowSink, SqlParam, SqlValue};

use crate::deploy::ProjectArgs;

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
        /// Against `isolane dev`'s state folder (the only place D1 runs
        /// today; required).
        #[arg(long)]
        local: bool,
        /// `isolane dev`'s state folder.
        #[arg(long, default_value = ".isolane/state")]
        state: PathBuf,
        #[command(flatten)]
        project: ProjectArgs,
    },
}

pub async fn run(args: D1Args) -> anyhow::Result<()> {
    let D1Command::Migrations {
        command:
            MigrationsCommand::Apply {
                database,
                local,
                state,
                project,
            },
    } = args.command;
    if !local {
        anyhow::bail!(
            "applying D1 migrations to a cluster is not built yet: pass --local to apply to isolane dev's state folder (docs/d1.md)"
        );
    }
    let read = project.read()?;
    let config = read
        .config
        .d1_databases
        .iter()
        .find(|d1| d1.binding == database || d1.database_name.as_deref() == Some(&database))
        .with_context(|| format!("{}: no d1_databases entry named {database:?}", read.path()))?;
    let name = config
        .database_name
        .as_ref()
        .or(config.database_id.as_ref())
        .with_context(|| format!("{}: {database:?} has no database_name", read.path()))?;
    let folder = read
        .dir
        .join(config.migrations_dir.as_deref().unwrap_or("migrations"));
    let table = config
        .migrations_table
        .as_deref()
        .unwrap_or("d1_migrations");
    if !crate::wrangler::spec::is_identifier(table) {
        anyhow::bail!(
            "{}: migrations_table {table:?} is not a table name (letters, digits and _)",
            read.path()
        );
    }
    // `isolane dev` serves a wrangler project in namespace `dev`; a Worker
    // YAML's database lives in its own namespace (`--namespace`).
    let namespace = if project.namespace == "default" {
        "dev"
    } else {
        project.namespace.as_str()
    };
    let applied = apply(&Store::sqlite(&state), (namespace, name), &folder, table).await?;
    if applied.is_empty() {
        println!("No migrations to apply.");
    }
    for file in applied {
        println!("Applied {file}");
    }
    Ok(())
}

/// The `*.sql` files of `folder`, in name order.
fn migrations(folder: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let entries = std::fs::read_dir(folder)
        .with_context(|| format!("the migrations folder {}", folder.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "sql") {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push((name, path));
        }
    }
    files.sort();
    Ok(files)
}

/// The text of column 0 of each row.
struct Names(Vec<String>);

impl RowSink for Names {
    fn statement(&mut self, _: &[&str]) {
        self.0.clear();
    }
    fn row(&mut self, values: &[SqlValue<'_>]) -> bool {
        if let Some(SqlValue::Text(text)) = values.first() {
            self.0.push(String::from_utf8_lossy(text).into_owned());
        }
        true
    }
}

fn exec(db: &mut ObjectDatabase, sql: &str, params: &[SqlParam]) -> anyhow::Result<Vec<String>> {
    let mut names = Names(Vec::new());
    db.exec((sql, params), || false, &mut names)?;
    Ok(names.0)
}

/// Applies the files of `folder` not yet in `table` to database `name` of
/// `namespace`; the files applied.
async fn apply(
    store: &Store,
    (namespace, name): (&str, &str),
    folder: &Path,
    table: &str,
) -> anyhow::Result<Vec<String>> {
    let files = migrations(folder)?;
    let db = store.d1_open(namespace, name).await?;
    let done = {
        let mut locked = db.lock().context("the database was reset; retry")?;
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
        );
        exec(&mut locked, &create, &[])?;
        exec(&mut locked, &format!("SELECT name FROM {table}"), &[])?
    };
    store.d1_flush(&db).await?;
    let mut applied = Vec::new();
    for (file, path) in files.into_iter().filter(|(file, _)| !done.contains(file)) {
        let sql = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        {
            let mut locked = db.lock().context("the database was reset; retry")?;
            locked.begin()?;
            let record = format!("INSERT INTO {table} (name) VALUES (?)");
            let ran = exec(&mut locked, &sql, &[])
                .and_then(|_| exec(&mut locked, &record, &[SqlParam::Text(file.clone())]));
            if let Err(error) = ran {
                locked.end(false)?;
                return Err(error.context(format!(
                    "{file} failed; it and the files after it were not applied"
                )));
            }
            locked.end(true)?;
        }
        store.d1_flush(&db).await?;
        applied.push(file);
    }
    Ok(applied)
}
