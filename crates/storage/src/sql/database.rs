//! [`ObjectDatabase`]: one object's SQLite database, in a private
//! temporary folder (removed when it drops), opened from the object's log
//! and run synchronously on the object's thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use rusqlite::limits::Limit;

use super::authorize::Policy;
use super::exec::{self, Executed, RowSink, SqlParam};
use super::limits::{self, SqlError, code_of};
use super::pages::{self, SqlRecord};

/// The page size of a new database.
const PAGE_SIZE: u32 = 4096;
/// The log since its snapshot may grow to twice the database and this
/// before the next record is a snapshot.
const LOG_SLACK: u64 = 1 << 20;
/// The largest database a snapshot is taken of (it is one record, held in
/// memory): past it the log keeps growing (docs: "not built yet").
const MAX_SNAPSHOT: u64 = 64 << 20;

/// One object's database.
pub struct ObjectDatabase {
    /// Closed before `dir` goes.
    conn: Connection,
    dir: tempfile::TempDir,
    policy: Arc<Policy>,
    /// Set by SQLite's commit hook: a transaction committed since the WAL
    /// was last read.
    commits: Arc<AtomicBool>,
    /// The most bytes the database may hold.
    limit: u64,
    page_size: u32,
    /// `transactionSync` calls open (savepoints).
    depth: u32,
    /// Commits not yet handed to the store.
    pending: Option<SqlRecord>,
    /// Bytes of the store's log since its last snapshot.
    log_bytes: u64,
}

impl std::fmt::Debug for ObjectDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectDatabase")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl ObjectDatabase {
    /// The database `records` (the object's log, in order) make, holding
    /// at most `limit` bytes ([`limits::DEFAULT_MAX_BYTES`] when `None`).
    pub fn open(records: &[Vec<u8>], limit: Option<u64>) -> Result<Self, SqlError> {
        let dir = tempfile::Builder::new().prefix("isolane-sql-").tempdir()?;
        let path = dir.path().join("db");
        let page_size = if records.is_empty() {
            PAGE_SIZE
        } else {
            pages::rebuild(&path, records)?
        };
        let conn = Connection::open(&path)?;
        let limit = limit.unwrap_or(limits::DEFAULT_MAX_BYTES);
        configure(&conn, limit / u64::from(page_size))?;
        let policy = Policy::install(&conn);
        let commits = Arc::new(AtomicBool::new(false));
        let hook = commits.clone();
        conn.commit_hook(Some(move || {
            hook.store(true, Ordering::Relaxed);
            false
        }));
        Ok(Self {
            conn,
            dir,
            policy,
            commits,
            limit,
            page_size,
            depth: 0,
            pending: None,
            log_bytes: records.iter().map(|r| r.len() as u64).sum(),
        })
    }

    fn wal(&self) -> PathBuf {
        self.dir.path().join("db-wal")
    }

    /// SQLite's error as the API throws it.
    fn classify(&self, error: rusqlite::Error) -> SqlError {
        match code_of(&error) {
            // SQLITE_AUTH: the authorizer refused the statement.
            Some(23) if self.policy.transaction() => SqlError::Transaction,
            // SQLITE_FULL: past max_page_count.
            Some(13) => SqlError::Full { limit: self.limit },
            _ => error.into(),
        }
    }

    /// Runs `query` with `params`, its rows to `sink`; `stop` is asked
    /// every few thousand SQLite steps whether to give up (the request's
    /// CPU time, the isolate ending). A commit is kept for [`Self::take`].
    pub fn exec(
        &mut self,
        (query, params): (&str, &[SqlParam]),
        stop: impl FnMut() -> bool + Send + 'static,
        sink: &mut dyn RowSink,
    ) -> Result<Executed, SqlError> {
        self.conn.progress_handler(1000, Some(stop));
        let classify = |e: rusqlite::Error| self.classify(e);
        let done = exec::run(&self.conn, (query, params), sink, &classify);
        self.conn.progress_handler(1000, None::<fn() -> bool>);
        let done = done?;
        self.committed()?;
        Ok(done)
    }

    /// `transactionSync`: opens a savepoint (they nest).
    pub fn begin(&mut self) -> Result<(), SqlError> {
        let sql = format!("SAVEPOINT _cf_sync_{}", self.depth);
        self.trusted(&sql)?;
        self.depth += 1;
        Ok(())
    }

    /// Ends the innermost `transactionSync`: kept, or rolled back.
    pub fn end(&mut self, keep: bool) -> Result<(), SqlError> {
        let Some(depth) = self.depth.checked_sub(1) else {
            return Ok(());
        };
        self.depth = depth;
        if !keep {
            self.trusted(&format!("ROLLBACK TO _cf_sync_{depth}"))?;
        }
        self.trusted(&format!("RELEASE _cf_sync_{depth}"))?;
        self.committed()
    }

    /// Bytes the database's pages in use hold (`sql.databaseSize`).
    pub fn size(&self) -> Result<u64, SqlError> {
        let pages: i64 = self.policy.trusted(|| {
            self.conn.query_row(
                "SELECT (SELECT * FROM pragma_page_count) - (SELECT * FROM pragma_freelist_count)",
                [],
                |row| row.get(0),
            )
        })?;
        Ok(u64::try_from(pages).unwrap_or(0) * u64::from(self.page_size))
    }

    /// SQLite's `total_changes()` and `last_insert_rowid()` on this
    /// connection (D1's `meta.changes` and `meta.last_row_id`).
    pub fn counters(&self) -> Result<(i64, i64), SqlError> {
        let sql = "SELECT total_changes(), last_insert_rowid()";
        let counters = self.policy.trusted(|| {
            self.conn
                .query_row(sql, [], |row| Ok((row.get(0)?, row.get(1)?)))
        })?;
        Ok(counters)
    }

    /// Whether commits wait for [`Self::take`].
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The commits since the last call, as one record for the log, and
    /// whether it is a snapshot (the store then drops the records before
    /// it); `None` when nothing was committed.
    pub fn take(&mut self) -> Result<Option<(Vec<u8>, bool)>, SqlError> {
        let Some(record) = self.pending.take() else {
            return Ok(None);
        };
        let bytes = record.encode();
        let size = u64::from(record.db_pages) * u64::from(self.page_size);
        let grown = self.log_bytes + bytes.len() as u64 > 2 * size + LOG_SLACK;
        if grown && size <= MAX_SNAPSHOT {
            let path = self.dir.path().join("db");
            let whole = pages::snapshot(&path, self.page_size)?.encode();
            self.log_bytes = whole.len() as u64;
            return Ok(Some((whole, true)));
        }
        self.log_bytes += bytes.len() as u64;
        Ok(Some((bytes, false)))
    }

    /// After a statement: when no transaction is open and it committed,
    /// its pages are kept for the log and the WAL is emptied.
    fn committed(&mut self) -> Result<(), SqlError> {
        if self.depth > 0
            || !self.conn.is_autocommit()
            || !self.commits.swap(false, Ordering::Relaxed)
        {
            return Ok(());
        }
        let Some(record) = pages::read_wal(&self.wal())? else {
            return Ok(());
        };
        self.trusted("PRAGMA wal_checkpoint(TRUNCATE)")?;
        match &mut self.pending {
            Some(pending) => pending.merge(record),
            None => self.pending = Some(record),
        }
        Ok(())
    }

    /// Runs the engine's own `sql`, whatever the authorizer says.
    fn trusted(&self, sql: &str) -> Result<(), SqlError> {
        self.policy
            .trusted(|| self.conn.execute_batch(sql))
            .map_err(|e| self.classify(e))
    }
}

/// The settings every object's database runs with: the WAL kept by this
/// connection alone (no shared memory) and checkpointed by
/// [`ObjectDatabase::committed`] only, no fsync (the log in the store is
/// what is durable), foreign keys enforced, Cloudflare's limits.
fn configure(conn: &Connection, max_pages: u64) -> Result<(), SqlError> {
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "max_page_count", max_pages.clamp(2, i64::MAX as u64))?;
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, limits::MAX_STATEMENT_BYTES)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, limits::MAX_VALUE_BYTES)?;
    conn.set_limit(Limit::SQLITE_LIMIT_VARIABLE_NUMBER, limits::MAX_PARAMETERS)?;
    conn.set_limit(Limit::SQLITE_LIMIT_COLUMN, limits::MAX_COLUMNS)?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    Ok(())
}

#[cfg(test)]
mod tests;
