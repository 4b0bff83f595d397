//! Durable Object alarms in PostgreSQL: the SQLite backend's queries
//! (`do_alarm`, migrations 3 and 4; see `crate::alarm`). A claim locks
//! the rows it takes and checks the claim again on each, so two processes
//! claiming at once never take the same alarm.

use super::Postgres;
use crate::StoreError;
use crate::alarm::{AlarmClaim, DueAlarm, MAX_ALARM_RETRIES};
use crate::durable::ObjectScope;

const MAX_RETRIES: i32 = MAX_ALARM_RETRIES as i32;

impl Postgres {
    pub(crate) async fn object_alarm(&self, scope: ObjectScope) -> Result<Option<i64>, StoreError> {
        self.run(move |client| async move {
            let row = client
                .query_opt(
                    "SELECT at FROM do_alarm WHERE namespace = $1 AND class = $2 AND object = $3",
                    &[&scope.namespace, &scope.class, &scope.id],
                )
                .await?;
            Ok(row.map(|row| row.try_get(0)).transpose()?)
        })
        .await
    }

    pub(crate) async fn set_object_alarm(
        &self,
        scope: ObjectScope,
        at: Option<i64>,
    ) -> Result<(), StoreError> {
        self.run(move |client| async move {
            match at {
                Some(at) => client
                    .execute(
                        "INSERT INTO do_alarm (namespace, class, object, at) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (namespace, class, object)
                         DO UPDATE SET at = excluded.at, claimed_until = NULL, retries = 0",
                        &[&scope.namespace, &scope.class, &scope.id, &at],
                    )
                    .await?,
                None => client
                    .execute(
                        "DELETE FROM do_alarm WHERE namespace = $1 AND class = $2 AND object = $3",
                        &[&scope.namespace, &scope.class, &scope.id],
                    )
                    .await?,
            };
            Ok(())
        })
        .await
    }

    pub(crate) async fn next_alarm_at(&self) -> Result<Option<i64>, StoreError> {
        self.run(|client| async move {
            let row = client
                .query_one(
                    "SELECT MIN(GREATEST(at, COALESCE(claimed_until, at))) FROM do_alarm",
                    &[],
                )
                .await?;
            Ok(row.try_get::<_, Option<i64>>(0)?)
        })
        .await
    }

    pub(crate) async fn claim_due_alarms(
        &self,
        now: i64,
        until: i64,
        claim: AlarmClaim,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        let limit = i64::from(claim.limit);
        let per_namespace = i64::from(claim.per_namespace);
        self.run(move |client| async move {
            // A window function cannot lock its rows (no FOR UPDATE SKIP
            // LOCKED here): two claimers may pick the same rows, and the
            // claim condition, checked again on the row the other claimer
            // updated, keeps the second from taking it.
            let rows = client
                .query(
                    "UPDATE do_alarm SET claimed_until = $2
                     WHERE (namespace, class, object) IN (
                         SELECT namespace, class, object FROM (
                             SELECT namespace, class, object, at, ROW_NUMBER()
                                 OVER (PARTITION BY namespace ORDER BY at) AS turn
                             FROM do_alarm
                             WHERE at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1)
                             AND NOT (namespace = ANY($5))
                         ) due
                         WHERE turn <= $4 ORDER BY turn, at LIMIT $3)
                     AND (claimed_until IS NULL OR claimed_until <= $1)
                     RETURNING namespace, class, object, at, retries",
                    &[&now, &until, &limit, &per_namespace, &claim.skip],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    let retries: i32 = row.try_get(4)?;
                    Ok(DueAlarm {
                        scope: ObjectScope::new(
                            row.try_get::<_, String>(0)?,
                            row.try_get::<_, String>(1)?,
                            row.try_get::<_, String>(2)?,
                        ),
                        at: row.try_get(3)?,
                        retries: u32::try_from(retries).map_err(|_| StoreError::Corrupt)?,
                    })
                })
                .collect()
        })
        .await
    }

    pub(crate) async fn delete_class_prefix_alarms(
        &self,
        namespace: String,
        prefix: String,
    ) -> Result<u64, StoreError> {
        self.run(move |client| async move {
            Ok(client
                .execute(
                    "DELETE FROM do_alarm WHERE namespace = $1
                     AND left(class, char_length($2)) = $2",
                    &[&namespace, &prefix],
                )
                .await?)
        })
        .await
    }

    pub(crate) async fn alarm_done(&self, alarm: DueAlarm) -> Result<(), StoreError> {
        self.run(move |client| async move {
            let scope = &alarm.scope;
            client
                .execute(
                    "DELETE FROM do_alarm WHERE namespace = $1 AND class = $2 AND object = $3
                     AND at = $4 AND claimed_until IS NOT NULL",
                    &[&scope.namespace, &scope.class, &scope.id, &alarm.at],
                )
                .await?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn release_alarm(&self, alarm: DueAlarm) -> Result<(), StoreError> {
        self.run(move |client| async move {
            let scope = &alarm.scope;
            client
                .execute(
                    "UPDATE do_alarm SET claimed_until = NULL WHERE namespace = $1 AND class = $2
                     AND object = $3 AND at = $4 AND claimed_until IS NOT NULL",
                    &[&scope.namespace, &scope.class, &scope.id, &alarm.at],
                )
                .await?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn alarm_failed(
        &self,
        alarm: DueAlarm,
        retry_at: i64,
    ) -> Result<bool, StoreError> {
        self.run(move |client| async move {
            let scope = &alarm.scope;
            let retried = client
                .execute(
                    "UPDATE do_alarm SET retries = retries + 1, claimed_until = $5
                     WHERE namespace = $1 AND class = $2 AND object = $3
                     AND at = $4 AND claimed_until IS NOT NULL AND retries < $6",
                    &[
                        &scope.namespace,
                        &scope.class,
                        &scope.id,
                        &alarm.at,
                        &retry_at,
                        &MAX_RETRIES,
                    ],
                )
                .await?;
            if retried > 0 {
                return Ok(false);
            }
            let dropped = client
                .execute(
                    "DELETE FROM do_alarm WHERE namespace = $1 AND class = $2 AND object = $3
                     AND at = $4 AND claimed_until IS NOT NULL",
                    &[&scope.namespace, &scope.class, &scope.id, &alarm.at],
                )
                .await?;
            Ok(dropped > 0)
        })
        .await
    }
}
