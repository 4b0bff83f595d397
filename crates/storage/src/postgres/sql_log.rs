//! SQLite-backed Durable Objects' logs in PostgreSQL: `do_sql_log`
//! (migration 8), as the SQLite store keeps them.

use deadpool_postgres::Object;

use super::Postgres;
use super::durable::{check_fence, usage};
use crate::StoreError;
use crate::durable::{ObjectScope, SqlAppend, WriteQuota};

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

/// Appends in one transaction: the fence (FOR SHARE: a take waits for
/// it), the usage rows locked before (so appends of one namespace check
/// one after another), the snapshot's drop, the bounds.
async fn append_one(
    mut client: Object,
    scope: ObjectScope,
    append: SqlAppend,
    quota: WriteQuota,
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    if let Some(mine) = append.fence {
        check_fence(&tx, &scope, mine).await?;
    }
    let before = usage(&tx, &scope, quota).await?;
    let key: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&scope.namespace, &scope.class, &scope.id];
    let seq: i64 = tx
        .query_one(
            "SELECT coalesce(max(seq), 0) + 1 FROM do_sql_log WHERE namespace = $1 AND class = $2 AND object = $3",
            &key,
        )
        .await?
        .try_get(0)?;
    if append.snapshot {
        tx.execute(
            "DELETE FROM do_sql_log WHERE namespace = $1 AND class = $2 AND object = $3",
            &key,
        )
        .await?;
    }
    tx.execute(
        "INSERT INTO do_sql_log (namespace, class, object, seq, record) VALUES ($1, $2, $3, $4, $5)",
        &[&scope.namespace, &scope.class, &scope.id, &seq, &append.record],
    )
    .await?;
    if let Some((ns_before, object_before)) = before {
        let (ns_after, object_after) = usage(&tx, &scope, quota).await?.unwrap_or_default();
        // Dropping the transaction rolls the append back.
        quota.check((ns_before, ns_after), (object_before, object_after))?;
    }
    tx.commit().await?;
    Ok(())
}
