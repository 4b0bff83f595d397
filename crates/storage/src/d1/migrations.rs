//! wrangler's D1 migrations on a database: the files of a migrations
//! folder (`0001_init.sql`, …, in name order), each run with its row in
//! the migrations table (`d1_migrations` by default: `id`, `name`,
//! `applied_at`, wrangler's columns) in one transaction, appended to the
//! database's log (fenced by the owner epoch, [`Store::d1_flush`]) before
//! the next file starts. `isolane d1 migrations apply --local` runs it on
//! `isolane dev`'s state folder; on a cluster the database's owner node
//! runs it (docs/d1.md, "Migrations").

use std::time::{Duration, Instant};

use crate::sql::{ObjectDatabase, RowSink, SqlError, SqlParam, SqlValue};
use crate::{Store, StoreError};

use super::D1Database;

/// How long one file's statements may run: D1's longest query (30 s).
/// Worker calls to the database wait for a file, so it is bounded.
pub const MIGRATION_TIME: Duration = Duration::from_secs(30);

/// One migration file: its name in the folder and its SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    pub name: String,
    pub sql: String,
}

/// Why migrations were not all applied.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("migrations_table {0:?} is not a table name (letters, digits and _)")]
    Table(String),
    #[error("{0:?} is not a migration file name (a name ending in .sql)")]
    FileName(String),
    /// A file's SQL failed: it was rolled back; `applied` were applied
    /// before it.
    #[error("{file} failed; it and the files after it were not applied: {source}")]
    Failed {
        file: String,
        applied: Vec<String>,
        #[source]
        source: SqlError,
    },
    /// The database could not be opened, or a commit not made durable
    /// (another owner took it since, the quota): `applied` are durable.
    #[error("{source}")]
    Store {
        applied: Vec<String>,
        #[source]
        source: StoreError,
    },
}

impl MigrationError {
    /// The files applied (and durable) before the failure.
    pub fn applied(&self) -> &[String] {
        match self {
            MigrationError::Failed { applied, .. } | MigrationError::Store { applied, .. } => {
                applied
            }
            _ => &[],
        }
    }
}

/// Whether `table` may be named in SQL as it is: letters, digits and `_`,
/// not starting with a digit.
pub fn is_table_name(table: &str) -> bool {
    let mut chars = table.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `name` may name a migration file: a path relative to the
/// migrations folder (`0001_init.sql`, or nested as wrangler's
/// `migrations_pattern` finds them, `0001_init/migration.sql`), its parts
/// joined by `/`, none empty, hidden or `..`, no control characters,
/// ending in `.sql`.
pub fn is_file_name(name: &str) -> bool {
    name.len() <= 1024
        && name.ends_with(".sql")
        && !name.contains('\\')
        && !name.chars().any(char::is_control)
        && name
            .split('/')
            .all(|part| !part.is_empty() && part.len() <= 255 && !part.starts_with('.'))
}

/// The order migrations run in, wrangler's (4.x): part by part of their
/// paths, by each part's leading number (`9_b.sql` before `10_c.sql`;
/// numbered before unnumbered), then by name; a path before the longer
/// paths it starts.
pub fn migration_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a_parts, mut b_parts) = (a.split('/'), b.split('/'));
    loop {
        let (a, b) = match (a_parts.next(), b_parts.next()) {
            (Some(a), Some(b)) => (a, b),
            (a, b) => return a.is_some().cmp(&b.is_some()),
        };
        let by_number = match (leading_number(a), leading_number(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (x, y) => y.is_some().cmp(&x.is_some()),
        };
        let order = by_number.then_with(|| a.cmp(b));
        if order.is_ne() {
            return order;
        }
    }
}

/// The number a migration's first path part starts with, as wrangler reads
/// it (the digits before the first `_`): `0003_x.sql` and `0003_x/m.sql`
/// are 3.
pub fn leading_number(name: &str) -> Option<u64> {
    let head = name.split(['_', '/']).next()?;
    let digits = head.bytes().take_while(u8::is_ascii_digit).count();
    head.get(..digits)?.parse().ok()
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

/// Runs `sql` on `db`, stopped past `deadline`; column 0 of the last
/// statement's rows.
fn exec(
    db: &mut ObjectDatabase,
    sql: &str,
    params: &[SqlParam],
    deadline: Instant,
) -> Result<Vec<String>, SqlError> {
    let mut names = Names(Vec::new());
    db.exec((sql, params), move || Instant::now() > deadline, &mut names)?;
    Ok(names.0)
}

fn locked(db: &D1Database) -> Result<std::sync::MutexGuard<'_, ObjectDatabase>, SqlError> {
    db.lock().ok_or(SqlError::Reset)
}

impl Store {
    /// The migrations table of database `name` of `namespace`, made when
    /// missing (as wrangler does), and the names it holds.
    pub async fn d1_applied_migrations(
        &self,
        (namespace, name): (&str, &str),
        table: &str,
    ) -> Result<(std::sync::Arc<D1Database>, Vec<String>), MigrationError> {
        if !is_table_name(table) {
            return Err(MigrationError::Table(table.to_owned()));
        }
        let store = |source| MigrationError::Store {
            applied: Vec::new(),
            source,
        };
        let db = self.d1_open(namespace, name).await.map_err(store)?;
        let done = {
            let mut locked = locked(&db).map_err(|e| store(e.into()))?;
            let deadline = Instant::now() + MIGRATION_TIME;
            let create = format!(
                "CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
            );
            exec(&mut locked, &create, &[], deadline).map_err(|e| store(e.into()))?;
            let select = format!("SELECT name FROM {table} ORDER BY id");
            exec(&mut locked, &select, &[], deadline).map_err(|e| store(e.into()))?
        };
        self.d1_flush(&db).await.map_err(store)?;
        Ok((db, done))
    }

    /// Applies the `files` (sorted here, [`migration_order`]) not yet named in `table`
    /// to database `name` of `namespace`; the names applied. Each file
    /// and its row are one transaction, durable before the next starts; a
    /// file that fails is rolled back and ends the run.
    pub async fn d1_migrate(
        &self,
        database: (&str, &str),
        table: &str,
        mut files: Vec<Migration>,
    ) -> Result<Vec<String>, MigrationError> {
        if let Some(bad) = files.iter().find(|f| !is_file_name(&f.name)) {
            return Err(MigrationError::FileName(bad.name.clone()));
        }
        files.sort_by(|a, b| migration_order(&a.name, &b.name));
        let (db, done) = self.d1_applied_migrations(database, table).await?;
        let mut applied = Vec::new();
        for file in files.into_iter().filter(|f| !done.contains(&f.name)) {
            // Off the async threads: a file may run for MIGRATION_TIME.
            let (db_file, table_file) = (std::sync::Arc::clone(&db), table.to_owned());
            let ran = tokio::task::spawn_blocking(move || {
                let ran = run_file(&db_file, &table_file, &file);
                (file, ran)
            })
            .await;
            let (file, ran) = ran.map_err(|_| MigrationError::Store {
                applied: applied.clone(),
                source: StoreError::Gone,
            })?;
            if let Err(source) = ran {
                return Err(MigrationError::Failed {
                    file: file.name,
                    applied,
                    source,
                });
            }
            if let Err(source) = self.d1_flush(&db).await {
                return Err(MigrationError::Store { applied, source });
            }
            applied.push(file.name);
        }
        Ok(applied)
    }
}

/// `file`'s SQL and its row in `table`, in one transaction: kept when both
/// ran, else rolled back.
fn run_file(db: &D1Database, table: &str, file: &Migration) -> Result<(), SqlError> {
    let mut locked = locked(db)?;
    let deadline = Instant::now() + MIGRATION_TIME;
    locked.begin()?;
    let record = format!("INSERT INTO {table} (name) VALUES (?)");
    let ran = exec(&mut locked, &file.sql, &[], deadline).and_then(|_| {
        exec(
            &mut locked,
            &record,
            &[SqlParam::Text(file.name.clone())],
            deadline,
        )
    });
    match ran {
        Ok(_) => locked.end(true),
        Err(error) => {
            locked.end(false)?;
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, sql: &str) -> Migration {
        Migration {
            name: name.to_owned(),
            sql: sql.to_owned(),
        }
    }

    #[tokio::test]
    async fn each_file_once_in_name_order_and_a_failing_one_is_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let db = ("a", "shop");
        let files = vec![
            file("0002_more.sql", "INSERT INTO t VALUES (2);"),
            file(
                "0001_init.sql",
                "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);",
            ),
        ];
        let applied = store.d1_migrate(db, "d1_migrations", files.clone()).await;
        assert_eq!(applied.unwrap(), ["0001_init.sql", "0002_more.sql"]);
        let again = store.d1_migrate(db, "d1_migrations", files.clone()).await;
        assert!(again.unwrap().is_empty());
        let mut bad = files;
        // Its first statement runs, its second fails as it runs.
        bad.push(file(
            "0003_bad.sql",
            "INSERT INTO t VALUES (3); SELECT abs(-9223372036854775807 - 1);",
        ));
        bad.push(file("0004_after.sql", "INSERT INTO t VALUES (4);"));
        let error = store
            .d1_migrate(db, "d1_migrations", bad)
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("0003_bad.sql failed")
                && error.to_string().contains("integer overflow"),
            "{error}"
        );
        // This process's copy (the one its Workers read) has no row 3.
        let live = store.d1_open("a", "shop").await.unwrap();
        let deadline = Instant::now() + MIGRATION_TIME;
        let rows = exec(
            &mut live.lock().unwrap(),
            "SELECT group_concat(x) FROM t",
            &[],
            deadline,
        );
        assert_eq!(rows.unwrap(), ["1,2"]);
        // Another process reads the log: files 1 and 2 only, row 3 rolled back.
        let other = Store::sqlite(dir.path());
        let (_, names) = other
            .d1_applied_migrations(db, "d1_migrations")
            .await
            .unwrap();
        assert_eq!(names, ["0001_init.sql", "0002_more.sql"]);
        let db = other.d1_open("a", "shop").await.unwrap();
        let deadline = Instant::now() + MIGRATION_TIME;
        let rows = exec(
            &mut db.lock().unwrap(),
            "SELECT group_concat(x) FROM t",
            &[],
            deadline,
        );
        assert_eq!(rows.unwrap(), ["1,2"]);
    }

    #[tokio::test]
    async fn hostile_names_are_refused_before_any_sql() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let table = store
            .d1_migrate(("a", "x"), "t; DROP TABLE y", vec![])
            .await;
        assert!(matches!(table, Err(MigrationError::Table(_))));
        let name = store
            .d1_migrate(("a", "x"), "d1_migrations", vec![file("../x.sql", "")])
            .await;
        assert!(matches!(name, Err(MigrationError::FileName(_))));
    }

    #[test]
    fn names_are_relative_paths_in_the_folder() {
        for good in ["0001_init.sql", "0001_init/migration.sql", "a/b/c.sql"] {
            assert!(is_file_name(good), "{good}");
        }
        for bad in [
            "../x.sql",
            "a/../x.sql",
            "/x.sql",
            "a//x.sql",
            ".hidden.sql",
            "a/.x/y.sql",
            "a\\x.sql",
            "x.txt",
            "x\n.sql",
        ] {
            assert!(!is_file_name(bad), "{bad}");
        }
    }

    #[test]
    fn migrations_run_in_wrangler_s_order() {
        let mut names = vec![
            "notes.sql",
            "10_c.sql",
            "9_b.sql",
            "0002_x/migration.sql",
            "1_a.sql",
            "0002_x/extra.sql",
            "0001_a/migration.sql",
            "b.sql",
        ];
        names.sort_by(|a, b| migration_order(a, b));
        assert_eq!(
            names,
            [
                "0001_a/migration.sql",
                "1_a.sql",
                "0002_x/extra.sql",
                "0002_x/migration.sql",
                "9_b.sql",
                "10_c.sql",
                "b.sql",
                "notes.sql",
            ]
        );
        assert_eq!(leading_number("0003_x/m.sql"), Some(3));
        assert_eq!(leading_number("0003x_y.sql"), Some(3));
        assert_eq!(leading_number("x_0003.sql"), None);
    }
}
