//! SQLite-backed Durable Objects' logs in PostgreSQL: `do_sql_log`
//! (migration 8), as the SQLite store keeps them.

use deadpool_postgres::Object;

use super::Postgres;
use super::durable::{FENCE, NAMESPACE_USAGE, OBJECT_USAGE};
use crate::StoreError;
use crate::durable::{ObjectError, ObjectScope, SqlAppend, WriteQuota};

impl Postgres {
    pub(crate) async fn sql_log(&self, scope: ObjectScope) -> Result<Vec<Vec<u8>>, StoreError> {
        self.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT record FROM do_sql_log WHERE namespace = $1 AND class = $2 AND object = $3 ORDER BY seq",
                    &[&scope.namespace, &scope.class, &scope.id],
                )
                .await?;
            let records = rows
                .iter()
                .map(|row| row.try_get(0))
                .collect::<Result<Vec<Vec<u8>>, _>>()?;
            Ok(records)
        })
        .await
    }

    pub(crate) async fn sql_append(
        &self,
        scope: ObjectScope,
        append: SqlAppend,
        quota: WriteQuota,
    ) -> Result<(), StoreError> {
        self.run(move |client| append_one(client, scope, append, quota))
            .await
    }
}

const DROP_ALL: &str = "DELETE FROM do_sql_log WHERE namespace = $1 AND class = $2 AND object = $3";
/// The record after the last one (the first after a snapshot's drop).
const APPEND: &str = "INSERT INTO do_sql_log (namespace, class, object, seq, record)
     SELECT $1::text, $2::text, $3::text, coalesce(max(seq), 0) + 1, $4::bytea FROM do_sql_log
     WHERE namespace = $1 AND class = $2 AND object = $3";

/// Appends in one transaction: the fence (FOR SHARE: a take waits for
/// it), the usage rows locked before (so appends of one namespace check
/// one after another), the snapshot's drop, the record, the usage after.
/// The statements are prepared once per connection and sent together
/// (pipelined, run in order): the append costs BEGIN, one round trip and
/// COMMIT, not two round trips a statement; a loaded host's scheduling
/// delays count once, not sixteen times, in the write's tail.
async fn append_one(
    mut client: Object,
    scope: ObjectScope,
    append: SqlAppend,
    quota: WriteQuota,
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    let [fence, object_usage, namespace_usage, drop_all, insert] = futures::future::try_join_all(
        [FENCE, OBJECT_USAGE, NAMESPACE_USAGE, DROP_ALL, APPEND].map(|sql| tx.prepare_cached(sql)),
    )
    .await?
    .try_into()
    .map_err(|_| StoreError::Corrupt)?;
    let object: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&scope.namespace, &scope.class, &scope.id];
    let namespace: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&scope.namespace];
    let record: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&scope.namespace, &scope.class, &scope.id, &append.record];
    let mut steps = Vec::with_capacity(7);
    if append.fence.is_some() {
        steps.push((Step::Fence, tx.query(&fence, &object)));
    }
    let usage = [
        (Step::ObjectUsage, &object_usage, &object[..]),
        (Step::NamespaceUsage, &namespace_usage, &namespace[..]),
    ];
    if quota.any() {
        steps.extend(usage.map(|(step, sql, params)| (step, tx.query(sql, params))));
    }
    if append.snapshot {
        steps.push((Step::Other, tx.query(&drop_all, &object)));
    }
    steps.push((Step::Other, tx.query(&insert, &record)));
    if quota.any() {
        steps.extend(usage.map(|(step, sql, params)| (step, tx.query(sql, params))));
    }
    let (names, queries): (Vec<Step>, Vec<_>) = steps.into_iter().unzip();
    // All answered before any is looked at: the first error stands for
    // the transaction, which its drop rolls back.
    let answers = futures::future::join_all(queries).await;
    let usage = read_answers(names.into_iter().zip(answers), append.fence)?;
    if let [object_before, ns_before, object_after, ns_after] = usage[..] {
        // Dropping the transaction rolls the append back.
        quota.check((ns_before, ns_after), (object_before, object_after))?;
    }
    tx.commit().await?;
    Ok(())
}

/// Each statement's answer, in order: the first error, or the fence's
/// refusal, or the usage rows' bytes (before, then after).
fn read_answers(
    answers: impl Iterator<
        Item = (
            Step,
            Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>,
        ),
    >,
    fence: Option<i64>,
) -> Result<Vec<i64>, StoreError> {
    let mut usage = Vec::with_capacity(4);
    for (step, rows) in answers {
        let rows = rows?;
        match step {
            Step::Fence => {
                let mine = fence.unwrap_or_default();
                let current = rows.first().map(|row| row.try_get(0)).transpose()?;
                let current: i64 = current.unwrap_or(0);
                if current != mine {
                    return Err(ObjectError::Fenced { mine, current }.into());
                }
            }
            Step::ObjectUsage | Step::NamespaceUsage => {
                let bytes: i64 = rows.first().ok_or(StoreError::Corrupt)?.try_get(0)?;
                usage.push(bytes);
            }
            Step::Other => {}
        }
    }
    Ok(usage)
}

/// What an append's statement answers for.
#[derive(Clone, Copy)]
enum Step {
    Fence,
    ObjectUsage,
    NamespaceUsage,
    Other,
}
