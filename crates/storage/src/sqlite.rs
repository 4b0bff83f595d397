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
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute_batch(SCHEMA)?;
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

    pub(crate) fn put(&self, scope: &KvScope, write: &KvWrite, now: u64) -> Result<(), StoreError> {
        let expiration = write.check(now)?;
        self.lock().execute(
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
        Ok(())
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

#[cfg(test)]
mod tests;
