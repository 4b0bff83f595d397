//! The migrations folder of a wrangler project's `[[d1_databases]]`
//! entry: its files, the next file's name (`migrations create`) and the
//! table `migrations list` prints (wrangler's).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use isolane_storage::d1::{Migration, is_table_name};

use crate::deploy::ProjectArgs;

/// One database's migrations, as the project names them.
#[derive(Debug)]
pub struct Folder {
    /// The database's name (`database_name`, else `database_id`).
    pub name: String,
    /// `migrations_dir` (default `migrations`), in the project's folder.
    pub dir: PathBuf,
    /// `migrations_table` (default `d1_migrations`).
    pub table: String,
}

/// Some files were applied, then one failed (or the rest could not be).
#[derive(Debug)]
pub struct Failed {
    pub applied: Vec<String>,
    pub error: anyhow::Error,
}

impl From<anyhow::Error> for Failed {
    fn from(error: anyhow::Error) -> Self {
        Failed {
            applied: Vec::new(),
            error,
        }
    }
}

impl Folder {
    /// The `d1_databases` entry of the project of `project` whose binding
    /// or `database_name` is `database`.
    pub fn of(project: &ProjectArgs, database: &str) -> anyhow::Result<Self> {
        let read = project.read()?;
        let config = read
            .config
            .d1_databases
            .iter()
            .find(|d1| d1.binding == database || d1.database_name.as_deref() == Some(database))
            .with_context(|| {
                format!("{}: no d1_databases entry named {database:?}", read.path())
            })?;
        let name = config
            .database_name
            .as_ref()
            .or(config.database_id.as_ref())
            .with_context(|| format!("{}: {database:?} has no database_name", read.path()))?;
        let table = config
            .migrations_table
            .as_deref()
            .unwrap_or("d1_migrations");
        if !is_table_name(table) {
            anyhow::bail!(
                "{}: migrations_table {table:?} is not a table name (letters, digits and _)",
                read.path()
            );
        }
        Ok(Folder {
            name: name.clone(),
            dir: read
                .dir
                .join(config.migrations_dir.as_deref().unwrap_or("migrations")),
            table: table.to_owned(),
        })
    }

    /// The `*.sql` files, in name order, with their SQL.
    pub fn files(&self) -> anyhow::Result<Vec<Migration>> {
        let mut files = Vec::new();
        for (name, path) in sql_files(&self.dir)? {
            let sql = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
            files.push(Migration { name, sql });
        }
        Ok(files)
    }

    /// The `*.sql` files' names, in order.
    pub fn names(&self) -> anyhow::Result<Vec<String>> {
        Ok(sql_files(&self.dir)?.into_iter().map(|(n, _)| n).collect())
    }
}

/// The `*.sql` files of `folder`, in name order.
fn sql_files(folder: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let entries = std::fs::read_dir(folder)
        .with_context(|| format!("the migrations folder {}", folder.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "sql") && path.is_file() {
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

/// Writes the next migration of `folder` (made when missing):
/// `000N_<message>.sql`, N one more than the highest leading number of
/// the folder's files, spaces in `message` as `_` (wrangler's names).
pub fn create(folder: &Path, message: &str) -> anyhow::Result<PathBuf> {
    let name = message.replace(' ', "_");
    if name.contains(['/', '\\']) {
        anyhow::bail!(
            "the migration name {message:?} contains a path separator (\"/\" or \"\\\"): remove it"
        );
    }
    std::fs::create_dir_all(folder)
        .with_context(|| format!("the migrations folder {}", folder.display()))?;
    let highest = sql_files(folder)?
        .iter()
        .filter_map(|(file, _)| leading_number(file))
        .max()
        .unwrap_or(0);
    let number = format!("{:04}", highest + 1);
    let path = folder.join(format!("{number}_{name}.sql"));
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
    let header = format!("-- Migration number: {number} \t {now}\n");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, header.as_bytes()))
        .with_context(|| path.display().to_string())?;
    Ok(path)
}

/// The number a file's name starts with (`0003_x.sql`: 3), as wrangler
/// reads it (the digits before the first `_`).
fn leading_number(file: &str) -> Option<u64> {
    let head = file.split('_').next()?;
    let digits: String = head.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// What `migrations list` prints for `pending`: wrangler's words and
/// table (cli-table3's borders).
pub fn pending_table(pending: &[String]) -> String {
    if pending.is_empty() {
        return "\u{2705} No migrations to apply!\n".to_owned();
    }
    let width = pending
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(0)
        .max("Name".len());
    let rule = "\u{2500}".repeat(width + 2);
    let row = |text: &str| {
        let pad = " ".repeat(width - text.chars().count());
        format!("\u{2502} {text}{pad} \u{2502}\n")
    };
    let middle = format!("\u{251c}{rule}\u{2524}\n");
    let mut table = format!("Migrations to be applied:\n\u{250c}{rule}\u{2510}\n");
    table.push_str(&row("Name"));
    for name in pending {
        table.push_str(&middle);
        table.push_str(&row(name));
    }
    table.push_str(&format!("\u{2514}{rule}\u{2518}\n"));
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_file_is_numbered_after_the_highest() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("migrations");
        let first = create(&folder, "create users").unwrap();
        assert!(first.ends_with("0001_create_users.sql"), "{first:?}");
        std::fs::write(folder.join("0007_later.sql"), "").unwrap();
        std::fs::write(folder.join("notes.txt"), "").unwrap();
        let next = create(&folder, "add index").unwrap();
        assert!(next.ends_with("0008_add_index.sql"), "{next:?}");
        let text = std::fs::read_to_string(next).unwrap();
        assert!(
            text.starts_with("-- Migration number: 0008 \t 20"),
            "{text:?}"
        );
        assert!(create(&folder, "a/b").is_err());
    }

    #[test]
    fn the_list_is_wrangler_s_table() {
        assert_eq!(pending_table(&[]), "\u{2705} No migrations to apply!\n");
        let table = pending_table(&["0001_init.sql".to_owned(), "0002_x.sql".to_owned()]);
        assert_eq!(
            table,
            "Migrations to be applied:\n\
             ┌───────────────┐\n\
             │ Name          │\n\
             ├───────────────┤\n\
             │ 0001_init.sql │\n\
             ├───────────────┤\n\
             │ 0002_x.sql    │\n\
             └───────────────┘\n"
        );
    }
}
