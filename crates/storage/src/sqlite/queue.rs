//! Queues' messages in SQLite (`queue_message`; see `crate::queue`), and
//! what each namespace's queues hold (`queue_usage`, kept by triggers).

use rusqlite::{OptionalExtension as _, params};

use super::Sqlite;
use crate::StoreError;
use crate::queue::{
    self, QueueDepth, QueueMessage, QueueQuota, QueueReady, QueueScope, QueueSettle,
};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS queue_message (
    namespace TEXT NOT NULL,
    queue TEXT NOT NULL,
    id TEXT NOT NULL,
    body BLOB NOT NULL,
    content_type TEXT NOT NULL,
    sent_at INTEGER NOT NULL,
    visible_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, queue, id)
);
CREATE INDEX IF NOT EXISTS queue_message_ready ON queue_message (namespace, queue, visible_at);
CREATE TABLE IF NOT EXISTS queue_usage (
    namespace TEXT PRIMARY KEY,
    messages INTEGER NOT NULL,
    bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS queue_usage_insert AFTER INSERT ON queue_message BEGIN
    INSERT OR IGNORE INTO queue_usage (namespace, messages, bytes) VALUES (NEW.namespace, 0, 0);
    UPDATE queue_usage SET messages = messages + 1, bytes = bytes + length(NEW.body)
        WHERE namespace = NEW.namespace;
END;
CREATE TABLE IF NOT EXISTS queue_owner (
    namespace TEXT NOT NULL,
    queue TEXT NOT NULL,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    PRIMARY KEY (namespace, queue)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS queue_usage_delete AFTER DELETE ON queue_message BEGIN
    UPDATE queue_usage SET messages = messages - 1, bytes = bytes - length(OLD.body)
        WHERE namespace = OLD.namespace;
END;
";

/// The columns added since the table was first made.
const ADDED: [(&str, &str); 1] = [(
    "lease_epoch",
    "ALTER TABLE queue_message ADD COLUMN lease_epoch INTEGER",
)];

/// The schema, and the columns a database made by an older build lacks.
pub(super) fn migrate(db: &rusqlite::Connection) -> Result<(), rusqlite::Error> {
    db.execute_batch(SCHEMA)?;
    super::add_columns(db, "queue_message", &ADDED)
}

impl Sqlite {
    /// Inserts `rows` sent at `now` in one transaction, refused past `quota`.
    pub(crate) fn queue_send(
        &self,
        scope: &QueueScope,
        rows: &[queue::Row],
        now: i64,
        quota: Option<QueueQuota>,
    ) -> Result<(), StoreError> {
        let mut db = self.lock();
        let tx = db.transaction()?;
        let held: (i64, i64) = tx
            .query_row(
                "SELECT messages, bytes FROM queue_usage WHERE namespace = ?1",
                params![scope.namespace],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?
            .unwrap_or((0, 0));
        let bytes = rows.iter().map(|(_, body, ..)| body.len()).sum();
        queue::over_quota(quota, held, rows.len(), bytes)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO queue_message (namespace, queue, id, body, content_type, sent_at, visible_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (id, body, content_type, visible) in rows {
                insert.execute(params![
                    scope.namespace,
                    scope.queue,
                    id,
                    body,
                    content_type,
                    now,
                    visible
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn queue_ready(
        &self,
        scope: &QueueScope,
        now: i64,
        max: u32,
    ) -> Result<QueueReady, StoreError> {
        let db = self.lock();
        let (ready, oldest): (i64, Option<i64>) = db.query_row(
            "SELECT count(*), min(visible_at) FROM (SELECT visible_at FROM queue_message
             WHERE namespace = ?1 AND queue = ?2 AND visible_at <= ?3 LIMIT ?4)",
            params![scope.namespace, scope.queue, now, max],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let next: Option<i64> = db.query_row(
            "SELECT min(visible_at) FROM queue_message WHERE namespace = ?1 AND queue = ?2",
            params![scope.namespace, scope.queue],
            |row| row.get(0),
        )?;
        Ok(QueueReady {
            ready: u32::try_from(ready).unwrap_or(0),
            oldest_ready_ms: oldest,
            next_visible_ms: next,
        })
    }

    /// Increments `scope`'s owner epoch for `owner` and makes the messages
    /// leased under an older epoch visible again, as of when they were
    /// sent; the new epoch.
    pub(crate) fn queue_take(&self, scope: &QueueScope, owner: &str) -> Result<i64, StoreError> {
        let mut db = self.lock();
        let tx = db.transaction()?;
        let epoch: i64 = tx.query_row(
            "INSERT INTO queue_owner (namespace, queue, owner, epoch) VALUES (?1, ?2, ?3, 1)
             ON CONFLICT (namespace, queue) DO UPDATE SET owner = excluded.owner, epoch = queue_owner.epoch + 1
             RETURNING epoch",
            params![scope.namespace, scope.queue, owner],
            |row| row.get(0),
        )?;
        tx.execute(
            "UPDATE queue_message SET visible_at = sent_at, lease_epoch = NULL
             WHERE namespace = ?1 AND queue = ?2 AND lease_epoch < ?3",
            params![scope.namespace, scope.queue, epoch],
        )?;
        tx.commit()?;
        Ok(epoch)
    }

    pub(crate) fn queue_lease(
        &self,
        scope: &QueueScope,
        fence: Option<i64>,
        now: i64,
        until: i64,
        max: u32,
    ) -> Result<Vec<QueueMessage>, StoreError> {
        // One connection under the lock: the check and the lease are one step.
        let db = self.lock();
        if let Some(mine) = fence {
            let current: i64 = db
                .query_row(
                    "SELECT epoch FROM queue_owner WHERE namespace = ?1 AND queue = ?2",
                    params![scope.namespace, scope.queue],
                    |row| row.get(0),
                )
                .optional()?
                .unwrap_or(0);
            if current != mine {
                return Err(queue::QueueError::Fenced { mine, current }.into());
            }
        }
        let mut lease = db.prepare_cached(
            "UPDATE queue_message SET visible_at = ?4, attempts = attempts + 1, lease_epoch = ?6
             WHERE namespace = ?1 AND queue = ?2 AND id IN (
                 SELECT id FROM queue_message WHERE namespace = ?1 AND queue = ?2 AND visible_at <= ?3
                 ORDER BY visible_at, sent_at LIMIT ?5)
             RETURNING id, sent_at, body, content_type, attempts",
        )?;
        let mut messages = lease
            .query_map(
                params![scope.namespace, scope.queue, now, until, max, fence],
                |row| {
                    Ok(QueueMessage {
                        id: row.get(0)?,
                        timestamp_ms: row.get(1)?,
                        body: row.get(2)?,
                        content_type: row.get(3)?,
                        attempts: row.get(4)?,
                    })
                },
            )?
            .collect::<Result<Vec<_>, _>>()?;
        // RETURNING's order is not the subquery's.
        messages.sort_by_key(|m| m.timestamp_ms);
        Ok(messages)
    }

    pub(crate) fn queue_settle(
        &self,
        scope: &QueueScope,
        settle: &QueueSettle,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut db = self.lock();
        let tx = db.transaction()?;
        {
            let mut delete = tx.prepare_cached(
                "DELETE FROM queue_message WHERE namespace = ?1 AND queue = ?2 AND id = ?3",
            )?;
            let mut retry = tx.prepare_cached(
                "UPDATE queue_message SET visible_at = ?4, lease_epoch = NULL
                 WHERE namespace = ?1 AND queue = ?2 AND id = ?3 AND lease_epoch IS ?5",
            )?;
            let mut move_to = tx.prepare_cached(
                "INSERT OR IGNORE INTO queue_message
                     (namespace, queue, id, body, content_type, sent_at, visible_at, attempts)
                 SELECT namespace, ?4, id, body, content_type, sent_at, ?5, 0 FROM queue_message
                 WHERE namespace = ?1 AND queue = ?2 AND id = ?3",
            )?;
            for id in &settle.acked {
                delete.execute(params![scope.namespace, scope.queue, id])?;
            }
            for (id, at) in &settle.retried {
                retry.execute(params![scope.namespace, scope.queue, id, at, settle.fence])?;
            }
            for id in &settle.dead {
                if let Some(dlq) = &settle.dead_letter {
                    move_to.execute(params![scope.namespace, scope.queue, id, dlq, now])?;
                }
                delete.execute(params![scope.namespace, scope.queue, id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Deletes `scope`'s messages sent before `sent_before` (ms); how many.
    pub(crate) fn queue_expire(
        &self,
        scope: &QueueScope,
        sent_before: i64,
    ) -> Result<u64, StoreError> {
        let gone = self.lock().execute(
            "DELETE FROM queue_message WHERE namespace = ?1 AND queue = ?2 AND sent_at < ?3",
            params![scope.namespace, scope.queue, sent_before],
        )?;
        Ok(gone as u64)
    }

    pub(crate) fn queue_depth(&self, scope: &QueueScope) -> Result<QueueDepth, StoreError> {
        let (messages, oldest): (i64, Option<i64>) = self.lock().query_row(
            "SELECT count(*), min(sent_at) FROM queue_message WHERE namespace = ?1 AND queue = ?2",
            params![scope.namespace, scope.queue],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        Ok(QueueDepth {
            messages: u64::try_from(messages).unwrap_or(0),
            oldest_ms: oldest,
        })
    }
}
