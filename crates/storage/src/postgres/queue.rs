//! Queues' messages in PostgreSQL (`queue_message`, migration 9; see
//! `crate::queue`): the SQLite backend's queries, a batch in one statement
//! (arrays unnested), leases taken `FOR UPDATE SKIP LOCKED` so that two
//! processes leasing at once never take the same message, and fenced by
//! the queue's owner epoch (`queue_owner`, migration 10) when asked.

use super::{Postgres, listen};
use crate::StoreError;
use crate::queue::{
    self, QueueDepth, QueueError, QueueMessage, QueueQuota, QueueReady, QueueScope, QueueSettle,
};

impl Postgres {
    pub(crate) async fn queue_send(
        &self,
        scope: QueueScope,
        rows: Vec<queue::Row>,
        now: i64,
        quota: Option<QueueQuota>,
    ) -> Result<(), StoreError> {
        let wake = self.wakes.payload(&scope);
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            if quota.is_some() {
                // The namespace's usage row, locked: sends of one namespace
                // check the quota one at a time.
                tx.execute(
                    "INSERT INTO queue_usage (namespace, messages, bytes) VALUES ($1, 0, 0)
                     ON CONFLICT (namespace) DO NOTHING",
                    &[&scope.namespace],
                )
                .await?;
                let row = tx
                    .query_one(
                        "SELECT messages, bytes FROM queue_usage WHERE namespace = $1 FOR UPDATE",
                        &[&scope.namespace],
                    )
                    .await?;
                let held: (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
                let bytes = rows.iter().map(|(_, body, ..)| body.len()).sum();
                queue::over_quota(quota, held, rows.len(), bytes)?;
            }
            let mut ids = Vec::with_capacity(rows.len());
            let mut bodies = Vec::with_capacity(rows.len());
            let mut types = Vec::with_capacity(rows.len());
            let mut visible = Vec::with_capacity(rows.len());
            for (id, body, content_type, at) in rows {
                ids.push(id);
                bodies.push(body);
                types.push(content_type);
                visible.push(at);
            }
            // The queue's owner is told at commit (`listen.rs`), in the
            // same statement.
            tx.execute(
                "WITH sent AS (
                     INSERT INTO queue_message (namespace, queue, id, body, content_type, sent_at, visible_at)
                     SELECT $1, $2, m.id, m.body, m.content_type, $3, m.visible_at
                     FROM unnest($4::text[], $5::bytea[], $6::text[], $7::bigint[])
                         AS m(id, body, content_type, visible_at))
                 SELECT pg_notify($8, $9)",
                &[
                    &scope.namespace,
                    &scope.queue,
                    &now,
                    &ids,
                    &bodies,
                    &types,
                    &visible,
                    &listen::CHANNEL,
                    &wake,
                ],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn queue_ready(
        &self,
        scope: QueueScope,
        now: i64,
        max: u32,
    ) -> Result<QueueReady, StoreError> {
        let max = i64::from(max);
        self.run(move |client| async move {
            let row = client
                .query_one(
                    "SELECT count(*), min(visible_at) FROM (SELECT visible_at FROM queue_message
                     WHERE namespace = $1 AND queue = $2 AND visible_at <= $3 LIMIT $4) AS ready",
                    &[&scope.namespace, &scope.queue, &now, &max],
                )
                .await?;
            let ready: i64 = row.try_get(0)?;
            let oldest: Option<i64> = row.try_get(1)?;
            let next = client
                .query_opt(
                    "SELECT visible_at FROM queue_message WHERE namespace = $1 AND queue = $2
                     ORDER BY visible_at LIMIT 1",
                    &[&scope.namespace, &scope.queue],
                )
                .await?;
            Ok(QueueReady {
                ready: u32::try_from(ready).unwrap_or(0),
                oldest_ready_ms: oldest,
                next_visible_ms: next.map(|row| row.try_get(0)).transpose()?,
            })
        })
        .await
    }

    /// Increments `scope`'s owner epoch for `owner` and makes the messages
    /// leased under an older epoch visible again, as of when they were
    /// sent (they come first: they are older than what waits); the new
    /// epoch.
    pub(crate) async fn queue_take(
        &self,
        scope: QueueScope,
        owner: String,
    ) -> Result<i64, StoreError> {
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let row = tx
                .query_one(
                    "INSERT INTO queue_owner (namespace, queue, owner, epoch) VALUES ($1, $2, $3, 1)
                     ON CONFLICT (namespace, queue) DO UPDATE SET owner = excluded.owner, epoch = queue_owner.epoch + 1
                     RETURNING epoch",
                    &[&scope.namespace, &scope.queue, &owner],
                )
                .await?;
            let epoch: i64 = row.try_get(0)?;
            // A lease under way waits for this (the epoch row above) or
            // committed before it: none is missed.
            let released = tx
                .execute(
                    "UPDATE queue_message SET visible_at = sent_at, lease_epoch = NULL
                     WHERE namespace = $1 AND queue = $2 AND lease_epoch < $3",
                    &[&scope.namespace, &scope.queue, &epoch],
                )
                .await?;
            tx.commit().await?;
            if released > 0 {
                tracing::info!(namespace = %scope.namespace, queue = %scope.queue, epoch, released, "queues: released the messages an earlier owner had leased");
            }
            Ok(epoch)
        })
        .await
    }

    pub(crate) async fn queue_lease(
        &self,
        scope: QueueScope,
        fence: Option<i64>,
        now: i64,
        until: i64,
        max: u32,
    ) -> Result<Vec<QueueMessage>, StoreError> {
        let max = i64::from(max);
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            if let Some(mine) = fence {
                // FOR SHARE: a take waits for this lease to commit, so the
                // lease lands before it or is refused after it.
                let current: i64 = match tx
                    .query_opt(
                        "SELECT epoch FROM queue_owner WHERE namespace = $1 AND queue = $2 FOR SHARE",
                        &[&scope.namespace, &scope.queue],
                    )
                    .await?
                {
                    Some(row) => row.try_get(0)?,
                    None => 0,
                };
                if current != mine {
                    return Err(QueueError::Fenced { mine, current }.into());
                }
            }
            // The rows picked once (a CTE, materialized): a subquery under
            // `id IN (…)` may be run again and lease more than `max`. They
            // are updated by their `ctid`s (a TID scan; the rows are locked,
            // so their versions stay put until this commits): a join on the
            // id let the planner scan the whole queue once per picked row
            // while the table had no statistics (a new database), so a
            // backlog of 20,000 took 0.2 to 0.7 s a lease.
            let rows = tx
                .query(
                    "WITH picked AS MATERIALIZED (
                         SELECT ctid FROM queue_message
                         WHERE namespace = $1 AND queue = $2 AND visible_at <= $3
                         ORDER BY visible_at, sent_at LIMIT $5 FOR UPDATE SKIP LOCKED)
                     UPDATE queue_message AS m
                     SET visible_at = $4, attempts = m.attempts + 1, lease_epoch = $6
                     WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM picked))
                     RETURNING m.id, m.sent_at, m.body, m.content_type, m.attempts",
                    &[&scope.namespace, &scope.queue, &now, &until, &max, &fence],
                )
                .await?;
            let mut messages = rows
                .iter()
                .map(|row| {
                    Ok(QueueMessage {
                        id: row.try_get(0)?,
                        timestamp_ms: row.try_get(1)?,
                        body: row.try_get(2)?,
                        content_type: row.try_get(3)?,
                        attempts: u32::try_from(row.try_get::<_, i32>(4)?).unwrap_or(0),
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            tx.commit().await?;
            messages.sort_by_key(|m| m.timestamp_ms);
            Ok(messages)
        })
        .await
    }

    pub(crate) async fn queue_settle(
        &self,
        scope: QueueScope,
        settle: QueueSettle,
        now: i64,
    ) -> Result<(), StoreError> {
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let (ns, q) = (&scope.namespace, &scope.queue);
            if let Some(dlq) = &settle.dead_letter {
                tx.execute(
                    "INSERT INTO queue_message
                         (namespace, queue, id, body, content_type, sent_at, visible_at, attempts)
                     SELECT namespace, $4, id, body, content_type, sent_at, $5, 0 FROM queue_message
                     WHERE namespace = $1 AND queue = $2 AND id = ANY($3)
                     ON CONFLICT DO NOTHING",
                    &[ns, q, &settle.dead, dlq, &now],
                )
                .await?;
            }
            let gone: Vec<&String> = settle.acked.iter().chain(&settle.dead).collect();
            tx.execute(
                "DELETE FROM queue_message WHERE namespace = $1 AND queue = $2 AND id = ANY($3)",
                &[ns, q, &gone],
            )
            .await?;
            let (ids, times): (Vec<&String>, Vec<i64>) =
                settle.retried.iter().map(|(id, at)| (id, *at)).unzip();
            tx.execute(
                "UPDATE queue_message AS m SET visible_at = r.at, lease_epoch = NULL
                 FROM unnest($3::text[], $4::bigint[]) AS r(id, at)
                 WHERE m.namespace = $1 AND m.queue = $2 AND m.id = r.id
                     AND m.lease_epoch IS NOT DISTINCT FROM $5",
                &[ns, q, &ids, &times, &settle.fence],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Deletes `scope`'s messages sent before `sent_before` (ms); how
    /// many. Rows another transaction holds (a lease being taken, a
    /// settle) are skipped: they go at the next pass.
    pub(crate) async fn queue_expire(
        &self,
        scope: QueueScope,
        sent_before: i64,
    ) -> Result<u64, StoreError> {
        self.run(move |client| async move {
            Ok(client
                .execute(
                    "DELETE FROM queue_message WHERE (namespace, queue, id) IN (
                         SELECT namespace, queue, id FROM queue_message
                         WHERE namespace = $1 AND queue = $2 AND sent_at < $3
                         FOR UPDATE SKIP LOCKED)",
                    &[&scope.namespace, &scope.queue, &sent_before],
                )
                .await?)
        })
        .await
    }

    pub(crate) async fn queue_depth(&self, scope: QueueScope) -> Result<QueueDepth, StoreError> {
        self.run(move |client| async move {
            let row = client
                .query_one(
                    "SELECT count(*), min(sent_at) FROM queue_message WHERE namespace = $1 AND queue = $2",
                    &[&scope.namespace, &scope.queue],
                )
                .await?;
            Ok(QueueDepth {
                messages: u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0),
                oldest_ms: row.try_get(1)?,
            })
        })
        .await
    }
}
