//! Durable Object alarms in SQLite (`do_alarm`; see `crate::alarm`).

use rusqlite::{OptionalExtension as _, params};

use super::Sqlite;
use crate::StoreError;
use crate::alarm::{AlarmClaim, DueAlarm, MAX_ALARM_RETRIES};
use crate::durable::ObjectScope;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS do_alarm (
    namespace TEXT NOT NULL,
    class TEXT NOT NULL,
    object TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (namespace, class, object)
) WITHOUT ROWID;
";

/// Columns added after `do_alarm` first shipped (a state folder made by
/// an older `isolane dev` gets them when opened).
const ADDED: [(&str, &str); 2] = [
    (
        "claimed_until",
        "ALTER TABLE do_alarm ADD COLUMN claimed_until INTEGER",
    ),
    (
        "retries",
        "ALTER TABLE do_alarm ADD COLUMN retries INTEGER NOT NULL DEFAULT 0",
    ),
];

/// Creates `do_alarm` or brings an older one up to date.
pub(super) fn migrate(db: &rusqlite::Connection) -> Result<(), rusqlite::Error> {
    db.execute_batch(SCHEMA)?;
    super::add_columns(db, "do_alarm", &ADDED)
}

impl Sqlite {
    /// The object's alarm, in milliseconds since the epoch.
    pub(crate) fn object_alarm(&self, scope: &ObjectScope) -> Result<Option<i64>, StoreError> {
        let at = self
            .lock()
            .query_row(
                "SELECT at FROM do_alarm WHERE namespace = ?1 AND class = ?2 AND object = ?3",
                params![scope.namespace, scope.class, scope.id],
                |row| row.get(0),
            )
            .optional()?;
        Ok(at)
    }

    /// Sets (or, with `None`, deletes) the object's alarm; with a
    /// `fence`, only while the object's owner epoch is still that one.
    pub(crate) fn set_object_alarm(
        &self,
        scope: &ObjectScope,
        at: Option<i64>,
        fence: Option<i64>,
    ) -> Result<(), StoreError> {
        let mut db = self.lock();
        // Immediate, as a fenced storage write: no take between the check
        // and the commit.
        let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if let Some(mine) = fence {
            super::durable::check_fence(&tx, scope, mine)?;
        }
        match at {
            Some(at) => tx.execute(
                "INSERT INTO do_alarm (namespace, class, object, at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (namespace, class, object)
                 DO UPDATE SET at = excluded.at, claimed_until = NULL, retries = 0",
                params![scope.namespace, scope.class, scope.id, at],
            )?,
            None => tx.execute(
                "DELETE FROM do_alarm WHERE namespace = ?1 AND class = ?2 AND object = ?3",
                params![scope.namespace, scope.class, scope.id],
            )?,
        };
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn next_alarm_at(&self) -> Result<Option<i64>, StoreError> {
        let db = self.lock();
        let next = db
            .prepare_cached("SELECT MIN(MAX(at, COALESCE(claimed_until, at))) FROM do_alarm")?
            .query_row([], |row| row.get::<_, Option<i64>>(0))?;
        Ok(next)
    }

    pub(crate) fn claim_due_alarms(
        &self,
        now: i64,
        until: i64,
        claim: &AlarmClaim,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        let db = self.lock();
        // ?5, ?6, …: the namespaces skipped (at most one per namespace with
        // deliveries under way; a cached statement per count).
        let skip: Vec<String> = (0..claim.skip.len())
            .map(|i| format!("?{}", i + 5))
            .collect();
        let sql = format!(
            "UPDATE do_alarm SET claimed_until = ?2
             WHERE (namespace, class, object) IN (
                 SELECT namespace, class, object FROM (
                     SELECT namespace, class, object, at, ROW_NUMBER()
                         OVER (PARTITION BY namespace ORDER BY at) AS turn
                     FROM do_alarm
                     WHERE at <= ?1 AND (claimed_until IS NULL OR claimed_until <= ?1)
                     AND namespace NOT IN ({}))
                 WHERE turn <= ?4 ORDER BY turn, at LIMIT ?3)
             RETURNING namespace, class, object, at, retries",
            skip.join(", ")
        );
        let mut values: Vec<rusqlite::types::Value> = vec![
            now.into(),
            until.into(),
            i64::from(claim.limit).into(),
            i64::from(claim.per_namespace).into(),
        ];
        values.extend(claim.skip.iter().map(|ns| ns.clone().into()));
        let rows = db
            .prepare_cached(&sql)?
            .query_map(rusqlite::params_from_iter(values), |row| {
                Ok(DueAlarm {
                    scope: ObjectScope::new(
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                    ),
                    at: row.get(3)?,
                    retries: row.get(4)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    pub(crate) fn delete_class_prefix_alarms(
        &self,
        namespace: &str,
        prefix: &str,
    ) -> Result<u64, StoreError> {
        let deleted = self.lock().execute(
            "DELETE FROM do_alarm WHERE namespace = ?1
             AND substr(class, 1, length(?2)) = ?2",
            params![namespace, prefix],
        )?;
        Ok(deleted as u64)
    }

    pub(crate) fn alarm_done(&self, alarm: &DueAlarm) -> Result<(), StoreError> {
        let scope = &alarm.scope;
        self.lock().execute(
            "DELETE FROM do_alarm WHERE namespace = ?1 AND class = ?2 AND object = ?3
             AND at = ?4 AND claimed_until IS NOT NULL",
            params![scope.namespace, scope.class, scope.id, alarm.at],
        )?;
        Ok(())
    }

    pub(crate) fn release_alarm(&self, alarm: &DueAlarm) -> Result<(), StoreError> {
        let scope = &alarm.scope;
        self.lock().execute(
            "UPDATE do_alarm SET claimed_until = NULL WHERE namespace = ?1 AND class = ?2
             AND object = ?3 AND at = ?4 AND claimed_until IS NOT NULL",
            params![scope.namespace, scope.class, scope.id, alarm.at],
        )?;
        Ok(())
    }

    pub(crate) fn alarm_failed(&self, alarm: &DueAlarm, retry_at: i64) -> Result<bool, StoreError> {
        let scope = &alarm.scope;
        let db = self.lock();
        let retried = db.execute(
            "UPDATE do_alarm SET retries = retries + 1, claimed_until = ?5
             WHERE namespace = ?1 AND class = ?2 AND object = ?3
             AND at = ?4 AND claimed_until IS NOT NULL AND retries < ?6",
            params![
                scope.namespace,
                scope.class,
                scope.id,
                alarm.at,
                retry_at,
                MAX_ALARM_RETRIES
            ],
        )?;
        if retried > 0 {
            return Ok(false);
        }
        let dropped = db.execute(
            "DELETE FROM do_alarm WHERE namespace = ?1 AND class = ?2 AND object = ?3
             AND at = ?4 AND claimed_until IS NOT NULL",
            params![scope.namespace, scope.class, scope.id, alarm.at],
        )?;
        Ok(dropped > 0)
    }
}
