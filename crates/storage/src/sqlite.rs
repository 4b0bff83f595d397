//! The SQLite backend: one file, one connection behind a mutex (SQLite
//! serialises writers anyway), in WAL mode so a crash loses nothing
//! acknowledged. Called only from tokio's blocking pool (`Store::blocking`).
//!
//! Keys are BLOBs of their UTF-8 bytes, so order and prefix ranges are
//! byte order, as Cloudflare lists them. An expired entry is invisible to
//! reads and lists, and removed when a read finds it.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::StoreError;
use crate::kv::{
    self, KvEntry, KvList, KvListOptions, KvScope, KvWrite, expiration_of, limits, stored,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    namespace TEXT NOT NULL,
    kv TEXT NOT NULL,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    metadata TEXT,
    expiration INTEGER,
    PRIMARY KEY (namespace, kv, key)
) WITHOUT ROWID;
-- Bytes each Kubernetes namespace stores (keys, values, metadata), kept by
-- triggers on every path that changes kv.
CREATE TABLE IF NOT EXISTS kv_usage (
    namespace TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS kv_usage_insert AFTER INSERT ON kv BEGIN
    INSERT OR IGNORE INTO kv_usage (namespace, bytes) VALUES (NEW.namespace, 0);
    UPDATE kv_usage SET bytes = bytes + length(NEW.key) + length(NEW.value)
        + coalesce(length(CAST(NEW.metadata AS BLOB)), 0) WHERE namespace = NEW.namespace;
END;
CREATE TRIGGER IF NOT EXISTS kv_usage_update AFTER UPDATE ON kv BEGIN
    UPDATE kv_usage SET bytes = bytes
        - length(OLD.key) - length(OLD.value) - coalesce(length(CAST(OLD.metadata AS BLOB)), 0)
        + length(NEW.key) + length(NEW.value) + coalesce(length(CAST(NEW.metadata AS BLOB)), 0)
        WHERE namespace = NEW.namespace;
END;
CREATE TRIGGER IF NOT EXISTS kv_usage_delete AFTER DELETE ON kv BEGIN
    UPDATE kv_usage SET bytes = bytes - length(OLD.key) - length(OLD.value)
        - coalesce(length(CAST(OLD.metadata AS BLOB)), 0) WHERE namespace = OLD.namespace;
END;
-- A file written before the usage table: count what it holds, once.
INSERT OR IGNORE INTO kv_usage (namespace, bytes)
    SELECT namespace, sum(length(key) + length(value) + coalesce(length(CAST(metadata AS BLOB)), 0))
    FROM kv GROUP BY namespace;
";

pub(crate) struct Sqlite {
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite").finish_non_exhaustive()
    }
}

impl Sqlite {
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let connection = Connection::open(path)?;
        // First: another connection may hold the file as this one
        // switches it to WAL.
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.execute_batch(SCHEMA)?;
        connection.execute_batch(durable::SCHEMA)?;
        connection.execute_batch(sql_log::SCHEMA)?;
        queue::migrate(&connection)?;
        connection.execute_batch(workflow::SCHEMA)?;
        alarm::migrate(&connection)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(
        &self,
        scope: &KvScope,
        key: &str,
        now: u64,
        admit: impl FnOnce(usize) -> bool,
    ) -> Result<Option<KvEntry>, StoreError> {
        limits::check_key("GET", key)?;
        let db = self.lock();
        let head: Option<(i64, Option<i64>)> = db
            .query_row(
                "SELECT length(value), expiration FROM kv WHERE namespace = ?1 AND kv = ?2 AND key = ?3",
                params![scope.namespace, scope.kv, key.as_bytes()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let Some((len, expiration)) = head else {
            return Ok(None);
        };
        if expiration_of(expiration).is_some_and(|at| at <= now) {
            db.execute(
                "DELETE FROM kv WHERE namespace = ?1 AND kv = ?2 AND key = ?3 AND expiration <= ?4",
                params![scope.namespace, scope.kv, key.as_bytes(), stored(Some(now))],
            )?;
            return Ok(None);
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if !admit(len) {
            return Err(StoreError::Refused { len });
        }
        let entry = db
            .query_row(
                "SELECT value, metadata, expiration FROM kv WHERE namespace = ?1 AND kv = ?2 AND key = ?3",
                params![scope.namespace, scope.kv, key.as_bytes()],
                |row| {
                    Ok(KvEntry {
                        value: row.get(0)?,
                        metadata: row.get(1)?,
                        expiration: expiration_of(row.get(2)?),
                    })
                },
            )
            .optional()?;
        Ok(entry)
    }

    /// Writes `write`; with a `quota`, a write that grows what the
    /// namespace stores past it is refused and undone.
    pub(crate) fn put(
        &self,
        scope: &KvScope,
        write: &KvWrite,
        now: u64,
        quota: Option<u64>,
    ) -> Result<(), StoreError> {
        let expiration = write.check(now)?;
        let mut db = self.lock();
        let tx = db.transaction()?;
        let old: Option<i64> = tx
            .query_row(
                "SELECT length(key) + length(value) + coalesce(length(CAST(metadata AS BLOB)), 0)
                 FROM kv WHERE namespace = ?1 AND kv = ?2 AND key = ?3",
                params![scope.namespace, scope.kv, write.key.as_bytes()],
                |row| row.get(0),
            )
            .optional()?;
        tx.execute(
            "INSERT INTO kv (namespace, kv, key, value, metadata, expiration) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (namespace, kv, key) DO UPDATE SET value = excluded.value,
                 metadata = excluded.metadata, expiration = excluded.expiration",
            params![
                scope.namespace,
                scope.kv,
                write.key.as_bytes(),
                write.value,
                write.metadata,
                stored(expiration)
            ],
        )?;
        if let Some(quota) = quota.filter(|_| kv::grows(write, old)) {
            let used: i64 = tx.query_row(
                "SELECT bytes FROM kv_usage WHERE namespace = ?1",
                params![scope.namespace],
                |row| row.get(0),
            )?;
            if u64::try_from(used).unwrap_or(0) > quota {
                // Dropping the transaction rolls the write back.
                return Err(kv::KvError::QuotaExceeded { quota }.into());
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Bytes `namespace` stores (keys, values, metadata).
    #[cfg(test)]
    pub(crate) fn usage(&self, namespace: &str) -> Result<i64, StoreError> {
        let used = self
            .lock()
            .query_row(
                "SELECT bytes FROM kv_usage WHERE namespace = ?1",
                params![namespace],
                |row| row.get(0),
            )
            .optional()?;
        Ok(used.unwrap_or(0))
    }

    pub(crate) fn delete(&self, scope: &KvScope, key: &str) -> Result<(), StoreError> {
        self.lock().execute(
            "DELETE FROM kv WHERE namespace = ?1 AND kv = ?2 AND key = ?3",
            params![scope.namespace, scope.kv, key.as_bytes()],
        )?;
        Ok(())
    }

    pub(crate) fn list(
        &self,
        scope: &KvScope,
        options: &KvListOptions,
        now: u64,
    ) -> Result<KvList, StoreError> {
        let query = kv::ListQuery::new(options)?;
        let db = self.lock();
        let mut statement = db.prepare_cached(
            "SELECT key, expiration, metadata FROM kv
             WHERE namespace = ?1 AND kv = ?2
               AND (key > ?3 OR (?6 AND key = ?3))
               AND (?4 IS NULL OR key < ?4)
               AND (expiration IS NULL OR expiration > ?5)
             ORDER BY key LIMIT ?7",
        )?;
        let rows = statement
            .query_map(
                params![
                    scope.namespace,
                    scope.kv,
                    query.start,
                    query.end,
                    stored(Some(now)),
                    query.inclusive,
                    query.fetch
                ],
                |row| Ok((row.get(0)?, expiration_of(row.get(1)?), row.get(2)?)),
            )?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(query.page(rows)?)
    }
}

/// Adds the columns of `added` (name, its `ALTER TABLE`) that `table`
/// lacks: a database made by an older build.
fn add_columns(
    db: &Connection,
    table: &str,
    added: &[(&str, &str)],
) -> Result<(), rusqlite::Error> {
    let columns = db
        .prepare("SELECT name FROM pragma_table_info(?1)")?
        .query_map([table], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    for (column, add) in added {
        if !columns.iter().any(|c| c == column) {
            db.execute_batch(add)?;
        }
    }
    Ok(())
}

mod alarm;
mod durable;
mod queue;
mod sql_log;
mod workflow;

#[cfg(test)]
mod tests;
