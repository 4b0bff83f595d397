//! Durable Object alarms in PostgreSQL (`do_alarm`, migrations 3 to 5;
//! see `crate::alarm`): the SQLite backend's queries, with claims found
//! through indexes so that one namespace's backlog does not slow a look.
//! A claim checks the claim condition again on each row it takes, so two
//! processes claiming at once never take the same alarm.

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

    /// Sets (or, with `None`, deletes) the object's alarm; with a
    /// `fence`, only while the object's owner epoch is still that one (the
    /// owner row read `FOR SHARE`, as a fenced storage write does).
    pub(crate) async fn set_object_alarm(
        &self,
        scope: ObjectScope,
        at: Option<i64>,
        fence: Option<i64>,
    ) -> Result<(), StoreError> {
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            if let Some(mine) = fence {
                super::durable::check_fence(&tx, &scope, mine).await?;
            }
            match at {
                Some(at) => tx
                    .execute(
                        "INSERT INTO do_alarm (namespace, class, object, at) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (namespace, class, object)
                         DO UPDATE SET at = excluded.at, claimed_until = NULL, retries = 0",
                        &[&scope.namespace, &scope.class, &scope.id, &at],
                    )
                    .await?,
                None => tx
                    .execute(
                        "DELETE FROM do_alarm WHERE namespace = $1 AND class = $2 AND object = $3",
                        &[&scope.namespace, &scope.class, &scope.id],
                    )
                    .await?,
            };
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn next_alarm_at(&self) -> Result<Option<i64>, StoreError> {
        self.run(|client| async move {
            // ORDER BY … LIMIT 1, not min(…): only this form reads the
            // first entry of `do_alarm_next` rather than every row.
            let row = client
                .query_opt(
                    "SELECT GREATEST(at, COALESCE(claimed_until, at)) AS ready FROM do_alarm
                     ORDER BY ready LIMIT 1",
                    &[],
                )
                .await?;
            Ok(row.map(|row| row.try_get::<_, i64>(0)).transpose()?)
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
            let rows = client
                .query(
                    CLAIM_DUE,
                    &[&now, &until, &limit, &per_namespace, &claim.skip],
                )
                .await?;
            rows.iter().map(due_alarm).collect()
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

/// Each namespace with alarms (a skip scan of `do_alarm_ready`),
/// then up to its share of its claimable alarms, soonest first
/// (a range of the same index), whatever its backlog. The rows
/// are not locked as they are picked (FOR UPDATE cannot go with
/// a window function): two claimers may pick the same rows, and
/// the claim condition, checked again on the row the other
/// claimer updated, keeps the second from taking it.
const CLAIM_DUE: &str = "WITH RECURSIVE spaces(ns) AS (
         SELECT min(namespace) FROM do_alarm
         UNION ALL
         SELECT (SELECT min(namespace) FROM do_alarm WHERE namespace > ns)
         FROM spaces WHERE ns IS NOT NULL)
     UPDATE do_alarm SET claimed_until = $2
     WHERE (namespace, class, object) IN (
         SELECT due.namespace, due.class, due.object FROM spaces
         CROSS JOIN LATERAL (
             SELECT namespace, class, object, ready,
                 ROW_NUMBER() OVER (ORDER BY ready) AS turn
             FROM (
                 SELECT namespace, class, object,
                     GREATEST(at, COALESCE(claimed_until, at)) AS ready
                 FROM do_alarm
                 WHERE namespace = spaces.ns
                 AND GREATEST(at, COALESCE(claimed_until, at)) <= $1
                 ORDER BY ready LIMIT $4) mine
         ) due
         WHERE spaces.ns IS NOT NULL AND NOT (spaces.ns = ANY($5))
         ORDER BY due.turn, due.ready LIMIT $3)
     AND GREATEST(at, COALESCE(claimed_until, at)) <= $1
     RETURNING namespace, class, object, at, retries";

/// An alarm as [`CLAIM_DUE`] returns it.
fn due_alarm(row: &tokio_postgres::Row) -> Result<DueAlarm, StoreError> {
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
}
