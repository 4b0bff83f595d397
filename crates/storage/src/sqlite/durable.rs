//! Durable Objects' storage in SQLite: the `do_storage` table (one row a
//! key), the bytes each Kubernetes namespace stores (`do_usage`, kept by
//! triggers), each object's alarm (`do_alarm`) and owner epoch
//! (`do_owner`).

use rusqlite::{OptionalExtension as _, params};

use super::Sqlite;
use crate::StoreError;
use crate::durable::{self, ObjectError, ObjectList, ObjectScope, ObjectWrite, WriteQuota};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS do_storage (
    namespace TEXT NOT NULL,
    class TEXT NOT NULL,
    object TEXT NOT NULL,
    key BLOB NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, class, object, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS do_usage (
    namespace TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS do_usage_insert AFTER INSERT ON do_storage BEGIN
    INSERT OR IGNORE INTO do_usage (namespace, bytes) VALUES (NEW.namespace, 0);
    UPDATE do_usage SET bytes = bytes + length(NEW.key) + length(NEW.value)
        WHERE namespace = NEW.namespace;
END;
CREATE TRIGGER IF NOT EXISTS do_usage_update AFTER UPDATE ON do_storage BEGIN
    UPDATE do_usage SET bytes = bytes - length(OLD.key) - length(OLD.value)
        + length(NEW.key) + length(NEW.value) WHERE namespace = NEW.namespace;
END;
CREATE TABLE IF NOT EXISTS do_owner (
    namespace TEXT NOT NULL,
    class TEXT NOT NULL,
    object TEXT NOT NULL,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    PRIMARY KEY (namespace, class, object)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS do_usage_delete AFTER DELETE ON do_storage BEGIN
    UPDATE do_usage SET bytes = bytes - length(OLD.key) - length(OLD.value)
        WHERE namespace = OLD.namespace;
END;
-- Bytes each object stores (its per-object limit), kept by triggers as
-- do_usage; an object that stores nothing has no row.
CREATE TABLE IF NOT EXISTS do_object_usage (
    namespace TEXT NOT NULL,
    class TEXT NOT NULL,
    object TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (namespace, class, object)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS do_object_usage_insert AFTER INSERT ON do_storage BEGIN
    INSERT INTO do_object_usage (namespace, class, object, bytes)
        VALUES (NEW.namespace, NEW.class, NEW.object, length(NEW.key) + length(NEW.value))
        ON CONFLICT (namespace, class, object) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS do_object_usage_update AFTER UPDATE ON do_storage BEGIN
    UPDATE do_object_usage SET bytes = bytes - length(OLD.key) - length(OLD.value)
        + length(NEW.key) + length(NEW.value)
        WHERE namespace = NEW.namespace AND class = NEW.class AND object = NEW.object;
END;
CREATE TRIGGER IF NOT EXISTS do_object_usage_delete AFTER DELETE ON do_storage BEGIN
    UPDATE do_object_usage SET bytes = bytes - length(OLD.key) - length(OLD.value)
        WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object;
    DELETE FROM do_object_usage
        WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object AND bytes <= 0;
END;
-- A file written before the table: count what each object holds, once.
INSERT OR IGNORE INTO do_object_usage (namespace, class, object, bytes)
    SELECT namespace, class, object, sum(length(key) + length(value))
    FROM do_storage GROUP BY namespace, class, object;
";

impl Sqlite {
    pub(crate) fn object_get(
        &self,
        scope: &ObjectScope,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let db = self.lock();
        let mut statement = db.prepare_cached(
            "SELECT value FROM do_storage WHERE namespace = ?1 AND class = ?2 AND object = ?3 AND key = ?4",
        )?;
        keys.iter()
            .map(|key| {
                let value = statement
                    .query_row(
                        params![scope.namespace, scope.class, scope.id, key.as_bytes()],
                        |row| row.get(0),
                    )
                    .optional()?;
                Ok(value)
            })
            .collect()
    }

    /// Applies `write` in one transaction; a write that leaves the
    /// namespace (or the object) storing more than before and more than
    /// its `quota` is undone.
    pub(crate) fn object_write(
        &self,
        scope: &ObjectScope,
        write: &ObjectWrite,
        quota: WriteQuota,
    ) -> Result<(), StoreError> {
        let mut db = self.lock();
        // Immediate: the fence is checked under the write lock, so no take
        // lands between the check and the commit.
        let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if let Some(mine) = write.fence {
            check_fence(&tx, scope, mine)?;
        }
        let before = usage(&tx, scope, quota)?;
        if write.delete_all {
            tx.execute(
                "DELETE FROM do_storage WHERE namespace = ?1 AND class = ?2 AND object = ?3",
                params![scope.namespace, scope.class, scope.id],
            )?;
        }
        for (key, value) in &write.entries {
            match value {
                Some(value) => tx.execute(
                    "INSERT INTO do_storage (namespace, class, object, key, value) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (namespace, class, object, key) DO UPDATE SET value = excluded.value",
                    params![scope.namespace, scope.class, scope.id, key.as_bytes(), value],
                )?,
                None => tx.execute(
                    "DELETE FROM do_storage WHERE namespace = ?1 AND class = ?2 AND object = ?3 AND key = ?4",
                    params![scope.namespace, scope.class, scope.id, key.as_bytes()],
                )?,
            };
        }
        if let Some((ns_before, object_before)) = before {
            let (ns_after, object_after) = usage(&tx, scope, quota)?.unwrap_or_default();
            // Dropping the transaction rolls the write back.
            quota.check((ns_before, ns_after), (object_before, object_after))?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Increments object `scope`'s owner epoch for `owner`; the new epoch.
    pub(crate) fn object_take(&self, scope: &ObjectScope, owner: &str) -> Result<i64, StoreError> {
        let db = self.lock();
        let epoch = db.query_row(
            "INSERT INTO do_owner (namespace, class, object, owner, epoch) VALUES (?1, ?2, ?3, ?4, 1)
             ON CONFLICT (namespace, class, object) DO UPDATE SET owner = excluded.owner, epoch = do_owner.epoch + 1
             RETURNING epoch",
            params![scope.namespace, scope.class, scope.id, owner],
            |row| row.get(0),
        )?;
        Ok(epoch)
    }

    pub(crate) fn object_list(
        &self,
        scope: &ObjectScope,
        options: &ObjectList,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let range = durable::Range::new(options);
        let db = self.lock();
        let sql = format!(
            "SELECT key, value FROM do_storage
             WHERE namespace = ?1 AND class = ?2 AND object = ?3
               AND key >= ?4 AND (?5 IS NULL OR key < ?5)
             ORDER BY key {} LIMIT ?6",
            if range.reverse { "DESC" } else { "ASC" }
        );
        let mut statement = db.prepare_cached(&sql)?;
        let rows = statement
            .query_map(
                params![
                    scope.namespace,
                    scope.class,
                    scope.id,
                    range.low,
                    range.high,
                    range.limit
                ],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<Result<Vec<_>, _>>()?;
        crate::object_store::entries(rows)
    }
}

/// What the namespace and the object store, when `quota` bounds either.
pub(super) fn usage(
    tx: &rusqlite::Transaction<'_>,
    scope: &ObjectScope,
    quota: WriteQuota,
) -> Result<Option<(i64, i64)>, StoreError> {
    if !quota.any() {
        return Ok(None);
    }
    let namespace: Option<i64> = tx
        .query_row(
            "SELECT bytes FROM do_usage WHERE namespace = ?1",
            params![scope.namespace],
            |row| row.get(0),
        )
        .optional()?;
    let object: Option<i64> = tx
        .query_row(
            "SELECT bytes FROM do_object_usage WHERE namespace = ?1 AND class = ?2 AND object = ?3",
            params![scope.namespace, scope.class, scope.id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(Some((namespace.unwrap_or(0), object.unwrap_or(0))))
}

/// Refuses the write unless the object's owner epoch is still `mine`.
pub(super) fn check_fence(
    tx: &rusqlite::Transaction<'_>,
    scope: &ObjectScope,
    mine: i64,
) -> Result<(), StoreError> {
    let current: Option<i64> = tx
        .query_row(
            "SELECT epoch FROM do_owner WHERE namespace = ?1 AND class = ?2 AND object = ?3",
            params![scope.namespace, scope.class, scope.id],
            |row| row.get(0),
        )
        .optional()?;
    let current = current.unwrap_or(0);
    if current != mine {
        return Err(ObjectError::Fenced { mine, current }.into());
    }
    Ok(())
}
