//! SQLite-backed Durable Objects' logs in the SQLite store: `do_sql_log`
//! (one row a record, in `seq` order), whose bytes count in `do_usage` and
//! `do_object_usage` (triggers, as `do_storage`'s).

use rusqlite::params;

use super::Sqlite;
use super::durable::{check_fence, usage};
use crate::StoreError;
use crate::durable::{ObjectScope, SqlAppend, WriteQuota};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS do_sql_log (
    namespace TEXT NOT NULL,
    class TEXT NOT NULL,
    object TEXT NOT NULL,
    seq INTEGER NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (namespace, class, object, seq)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS do_sql_log_insert AFTER INSERT ON do_sql_log BEGIN
    INSERT OR IGNORE INTO do_usage (namespace, bytes) VALUES (NEW.namespace, 0);
    UPDATE do_usage SET bytes = bytes + length(NEW.record) WHERE namespace = NEW.namespace;
    INSERT INTO do_object_usage (namespace, class, object, bytes)
        VALUES (NEW.namespace, NEW.class, NEW.object, length(NEW.record))
        ON CONFLICT (namespace, class, object) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS do_sql_log_delete AFTER DELETE ON do_sql_log BEGIN
    UPDATE do_usage SET bytes = bytes - length(OLD.record) WHERE namespace = OLD.namespace;
    UPDATE do_object_usage SET bytes = bytes - length(OLD.record)
        WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object;
    DELETE FROM do_object_usage
        WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object AND bytes <= 0;
END;
";

impl Sqlite {
    pub(crate) fn sql_log(&self, scope: &ObjectScope) -> Result<Vec<Vec<u8>>, StoreError> {
        let db = self.lock();
        let mut statement = db.prepare_cached(
            "SELECT record FROM do_sql_log WHERE namespace = ?1 AND class = ?2 AND object = ?3 ORDER BY seq",
        )?;
        let rows = statement
            .query_map(params![scope.namespace, scope.class, scope.id], |row| {
                row.get(0)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Appends in one transaction (fence, bounds, the snapshot's drop).
    pub(crate) fn sql_append(
        &self,
        scope: &ObjectScope,
        append: &SqlAppend,
        quota: WriteQuota,
    ) -> Result<(), StoreError> {
        let mut db = self.lock();
        let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if let Some(mine) = append.fence {
            check_fence(&tx, scope, mine)?;
        }
        let before = usage(&tx, scope, quota)?;
        let key = params![scope.namespace, scope.class, scope.id];
        let seq: i64 = tx.query_row(
            "SELECT coalesce(max(seq), 0) + 1 FROM do_sql_log WHERE namespace = ?1 AND class = ?2 AND object = ?3",
            key,
            |row| row.get(0),
        )?;
        if append.snapshot {
            tx.execute(
                "DELETE FROM do_sql_log WHERE namespace = ?1 AND class = ?2 AND object = ?3",
                key,
            )?;
        }
        tx.execute(
            "INSERT INTO do_sql_log (namespace, class, object, seq, record) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![scope.namespace, scope.class, scope.id, seq, append.record],
        )?;
        if let Some((ns_before, object_before)) = before {
            let (ns_after, object_after) = usage(&tx, scope, quota)?.unwrap_or_default();
            // Dropping the transaction rolls the append back.
            quota.check((ns_before, ns_after), (object_before, object_after))?;
        }
        tx.commit()?;
        Ok(())
    }
}
