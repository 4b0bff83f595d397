//! The migrations folder of a wrangler project's `[[d1_databases]]`
//! entry: its files, the next file's name (`migrations create`) and the
//! table `migrations list` prints (wrangler's).
//!
//! As wrangler 4's: the files are those under `migrations_dir` (default
//! `migrations`) that `migrations_pattern` matches (a glob from the
//! project's folder, default `<migrations_dir>/*.sql`; `*` stays within a
//! folder, `**` crosses them), named by their path in `migrations_dir`
//! (`0001_init.sql`, or `0001_init/migration.sql` for drizzle's layout),
//! in wrangler's order ([`migration_order`]: by leading number, then name).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use globset::{GlobBuilder, GlobMatcher};
use isolane_storage::d1::{Migration, is_table_name, leading_number, migration_order};

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
    /// `migrations_pattern`, as written (normalized).
    pub pattern: String,
    /// The pattern from `dir`.
    matcher: GlobMatcher,
    /// How deep under `dir` a match can be (`None`: any depth, `**`).
    depth: Option<usize>,
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
        let dir = config.migrations_dir.as_deref();
        let pattern = config.migrations_pattern.as_deref();
        Self::in_project(&read.dir, dir, pattern)
            .map(|folder| Folder {
                name: name.clone(),
                table: table.to_owned(),
                ..folder
            })
            .with_context(|| read.path())
    }

    /// The folder of `migrations_dir` `dir` and `migrations_pattern`
    /// `pattern` in the project folder `project` (for database `DB`,
    /// table `d1_migrations`).
    fn in_project(
        project: &Path,
        dir: Option<&str>,
        pattern: Option<&str>,
    ) -> anyhow::Result<Self> {
        let (dir, pattern) = pattern_of(dir, pattern)?;
        let (matcher, depth) = matcher(&pattern, &dir)?;
        Ok(Folder {
            name: "DB".to_owned(),
            dir: project.join(&dir),
            table: "d1_migrations".to_owned(),
            pattern,
            matcher,
            depth,
        })
    }

    /// The migrations, in order, with their SQL.
    pub fn files(&self) -> anyhow::Result<Vec<Migration>> {
        let mut files = Vec::new();
        for name in self.names()? {
            let path = self.dir.join(&name);
            let sql = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
            files.push(Migration { name, sql });
        }
        Ok(files)
    }

    /// The migrations' names (their paths in `dir`), in order.
    pub fn names(&self) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        self.walk(&self.dir, "", 1, &mut names)?;
        names.sort_by(|a, b| migration_order(a, b));
        Ok(names)
    }

    /// The files under `folder` (`prefix` in `dir`, `depth` parts deep)
    /// that the pattern matches, as wrangler walks them: no hidden files or
    /// folders, no symbolic links followed, no deeper than a match can be.
    fn walk(
        &self,
        folder: &Path,
        prefix: &str,
        depth: usize,
        names: &mut Vec<String>,
    ) -> anyhow::Result<()> {
        let entries = std::fs::read_dir(folder)
            .with_context(|| format!("the migrations folder {}", folder.display()))?;
        for entry in entries {
            let entry = entry?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with('.') {
                continue;
            }
            let name = format!("{prefix}{file_name}");
            let kind = entry.file_type()?;
            if kind.is_dir() && self.depth.is_none_or(|most| depth < most) {
                self.walk(&entry.path(), &format!("{name}/"), depth + 1, names)?;
            } else if kind.is_file() && self.matcher.is_match(&name) {
                names.push(name);
            }
        }
        Ok(())
    }
}

/// `migrations_dir` (default `migrations`) and `migrations_pattern`
/// (default `<dir>/*.sql`), both normalized, checked as wrangler checks
/// them: a pattern needs a `migrations_dir`, and must start with it.
fn pattern_of(dir: Option<&str>, pattern: Option<&str>) -> anyhow::Result<(String, String)> {
    let Some(raw) = pattern else {
        let dir = normalize(dir.unwrap_or("migrations"));
        let pattern = normalize(&format!("{dir}/*.sql"));
        return Ok((dir, pattern));
    };
    let Some(dir) = dir.map(normalize) else {
        anyhow::bail!(
            "migrations_pattern {raw:?} is set without migrations_dir: set migrations_dir too (the folder the pattern starts with, e.g. \"migrations\")"
        );
    };
    let pattern = normalize(raw);
    if pattern_in(&pattern, &dir).is_none() {
        anyhow::bail!(
            "migrations_pattern {raw:?} must start with {dir}/ (migrations_dir): e.g. \"{dir}/*.sql\""
        );
    }
    Ok((dir, pattern))
}

/// The matcher of `pattern` from `dir` (`*` within a folder, `**` across
/// them), and how many parts deep a match can be (`None`: any, `**`).
fn matcher(pattern: &str, dir: &str) -> anyhow::Result<(GlobMatcher, Option<usize>)> {
    let from_dir = pattern_in(pattern, dir).unwrap_or(pattern);
    let matcher = GlobBuilder::new(from_dir)
        .literal_separator(true)
        .build()
        .with_context(|| format!("migrations_pattern {pattern:?}"))?
        .compile_matcher();
    let depth = (!from_dir.contains("**")).then(|| from_dir.split('/').count());
    Ok((matcher, depth))
}

/// `pattern` from `dir`, when it is under it.
fn pattern_in<'a>(pattern: &'a str, dir: &str) -> Option<&'a str> {
    if dir == "." {
        return Some(pattern);
    }
    pattern.strip_prefix(dir)?.strip_prefix('/')
}

/// A relative path or glob with `/` separators, without `.` parts, empty
/// parts or a trailing `/`, its `..` parts resolved where they can be
/// (`./a//b/../c/` is `a/c`); `.` when nothing is left.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Writes the next migration of `folder` (made when missing):
/// `000N_<message>.sql`, N one more than the highest leading number of
/// the folder's migrations, spaces in `message` as `_` (wrangler's
/// names); refused when the pattern would not take it.
pub fn create(folder: &Folder, message: &str) -> anyhow::Result<PathBuf> {
    let name = message.replace(' ', "_");
    if name.contains(['/', '\\']) {
        anyhow::bail!(
            "the migration name {message:?} contains a path separator (\"/\" or \"\\\"): remove it"
        );
    }
    let file = format!("{name}.sql");
    std::fs::create_dir_all(&folder.dir)
        .with_context(|| format!("the migrations folder {}", folder.dir.display()))?;
    let highest = folder
        .names()?
        .iter()
        .filter_map(|file| leading_number(file))
        .max()
        .unwrap_or(0);
    let number = format!("{:04}", highest + 1);
    let file = format!("{number}_{file}");
    if !folder.matcher.is_match(&file) {
        anyhow::bail!(
            "the new migration {file} would not match migrations_pattern {:?}, so apply would not run it: create writes files at the top of migrations_dir only (for a nested layout, use your ORM's command, e.g. drizzle-kit generate)",
            folder.pattern
        );
    }
    let path = folder.dir.join(file);
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
        let folder = Folder::in_project(dir.path(), None, None).unwrap();
        let first = create(&folder, "create users").unwrap();
        assert!(first.ends_with("0001_create_users.sql"), "{first:?}");
        let folder_dir = dir.path().join("migrations");
        std::fs::write(folder_dir.join("0007_later.sql"), "").unwrap();
        std::fs::write(folder_dir.join("notes.txt"), "").unwrap();
        let next = create(&folder, "add index").unwrap();
        assert!(next.ends_with("0008_add_index.sql"), "{next:?}");
        let text = std::fs::read_to_string(next).unwrap();
        assert!(
            text.starts_with("-- Migration number: 0008 \t 20"),
            "{text:?}"
        );
        assert!(create(&folder, "a/b").is_err());
    }

    /// Writes empty files at `paths` under `dir`.
    fn touch(dir: &Path, paths: &[&str]) {
        for path in paths {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
    }

    #[test]
    fn the_pattern_finds_nested_migrations_in_wrangler_s_order() {
        let dir = tempfile::tempdir().unwrap();
        touch(
            dir.path(),
            &[
                "db/10_c/migration.sql",
                "db/9_b/migration.sql",
                "db/0001_a/migration.sql",
                "db/0001_a/notes.txt",
                "db/top.sql",
                "db/9_b/deeper/x/migration.sql",
                "db/.hidden/migration.sql",
            ],
        );
        let nested = Folder::in_project(dir.path(), Some("./db/"), Some("db/*/migration.sql"));
        let nested = nested.unwrap();
        assert_eq!(
            nested.names().unwrap(),
            [
                "0001_a/migration.sql",
                "9_b/migration.sql",
                "10_c/migration.sql"
            ]
        );
        // `create` would write a file the pattern does not take: refused.
        let refused = create(&nested, "more").unwrap_err().to_string();
        assert!(
            refused.contains("would not match migrations_pattern"),
            "{refused}"
        );
        let any = Folder::in_project(dir.path(), Some("db"), Some("db/**/*.sql")).unwrap();
        assert_eq!(any.names().unwrap().len(), 5, "{:?}", any.names());
        let flat = Folder::in_project(dir.path(), Some("db"), None).unwrap();
        assert_eq!(flat.names().unwrap(), ["top.sql"]);
        // As wrangler: a pattern needs migrations_dir, and starts with it.
        let no_dir = Folder::in_project(dir.path(), None, Some("db/*.sql")).unwrap_err();
        assert!(
            no_dir.to_string().contains("without migrations_dir"),
            "{no_dir}"
        );
        let outside = Folder::in_project(dir.path(), Some("db"), Some("schema/*.sql"));
        let outside = outside.unwrap_err().to_string();
        assert!(outside.contains("must start with db/"), "{outside}");
        assert_eq!(normalize("./a//b/../c/"), "a/c");
        assert_eq!(normalize("./"), ".");
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
