//! Durable Objects' storage in PostgreSQL: the same tables and queries as
//! the SQLite backend's (`do_storage`, `do_usage`, `do_alarm`; migration 3;
//! `do_owner`, migration 6).

use deadpool_postgres::Object;

use super::Postgres;
use crate::StoreError;
use crate::durable::{self, ObjectError, ObjectList, ObjectScope, ObjectWrite};

impl Postgres {
    pub(crate) async fn object_get(
        &self,
        scope: ObjectScope,
        keys: Vec<String>,
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.run(move |client| async move {
            let mut values = Vec::with_capacity(keys.len());
            for key in &keys {
                let row = client
                    .query_opt(
                        "SELECT value FROM do_storage WHERE namespace = $1 AND class = $2 AND object = $3 AND key = $4",
                        &[&scope.namespace, &scope.class, &scope.id, &key.as_bytes()],
                    )
                    .await?;
                values.push(row.map(|row| row.try_get(0)).transpose()?);
            }
            Ok(values)
        })
        .await
    }

    pub(crate) async fn object_write(
        &self,
        scope: ObjectScope,
        write: ObjectWrite,
        quota: Option<u64>,
    ) -> Result<(), StoreError> {
        self.run(move |client| write_all(client, scope, write, quota))
            .await
    }

    /// Increments object `scope`'s owner epoch for `owner`; the new epoch.
    pub(crate) async fn object_take(
        &self,
        scope: ObjectScope,
        owner: String,
    ) -> Result<i64, StoreError> {
        self.run(move |client| async move {
            let row = client
                .query_one(
                    "INSERT INTO do_owner (namespace, class, object, owner, epoch) VALUES ($1, $2, $3, $4, 1)
                     ON CONFLICT (namespace, class, object) DO UPDATE SET owner = excluded.owner, epoch = do_owner.epoch + 1
                     RETURNING epoch",
                    &[&scope.namespace, &scope.class, &scope.id, &owner],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    pub(crate) async fn object_list(
        &self,
        scope: ObjectScope,
        options: ObjectList,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let range = durable::Range::new(&options);
        self.run(move |client| async move {
            let sql = format!(
                "SELECT key, value FROM do_storage
                 WHERE namespace = $1 AND class = $2 AND object = $3
                   AND key >= $4 AND ($5::BYTEA IS NULL OR key < $5)
                 ORDER BY key {} LIMIT $6",
                if range.reverse { "DESC" } else { "ASC" }
            );
            let rows = client
                .query(
                    &sql,
                    &[
                        &scope.namespace,
                        &scope.class,
                        &scope.id,
                        &range.low,
                        &range.high,
                        &range.limit,
                    ],
                )
                .await?;
            let rows = rows
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
            crate::object_store::entries(rows)
        })
        .await
    }
}

/// Applies `write` in one transaction; with a `quota`, a write that leaves
/// the namespace storing more than before and more than the quota is
/// rolled back and refused. The namespace's usage row is locked first, so
/// concurrent writers of one namespace cannot both pass the check.
/// Refuses the write unless the object's owner epoch is still `mine`.
/// FOR SHARE: a take waits for this write to commit, so the write lands
/// before it or is refused after it.
async fn check_fence(
    tx: &deadpool_postgres::Transaction<'_>,
    scope: &ObjectScope,
    mine: i64,
) -> Result<(), StoreError> {
    let current: i64 = match tx
        .query_opt(
            "SELECT epoch FROM do_owner WHERE namespace = $1 AND class = $2 AND object = $3 FOR SHARE",
            &[&scope.namespace, &scope.class, &scope.id],
        )
        .await?
    {
        Some(row) => row.try_get(0)?,
        None => 0,
    };
    if current != mine {
        return Err(ObjectError::Fenced { mine, current }.into());
    }
    Ok(())
}

async fn write_all(
    mut client: Object,
    scope: ObjectScope,
    write: ObjectWrite,
    quota: Option<u64>,
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    if let Some(mine) = write.fence {
        check_fence(&tx, &scope, mine).await?;
    }
    let usage = "SELECT bytes FROM do_usage WHERE namespace = $1 FOR UPDATE";
    let before: i64 = match tx.query_opt(usage, &[&scope.namespace]).await? {
        Some(row) => row.try_get(0)?,
        None => 0,
    };
    if write.delete_all {
        tx.execute(
            "DELETE FROM do_storage WHERE namespace = $1 AND class = $2 AND object = $3",
            &[&scope.namespace, &scope.class, &scope.id],
        )
        .await?;
    }
    for (key, value) in &write.entries {
        match value {
            Some(value) => tx
                .execute(
                    "INSERT INTO do_storage (namespace, class, object, key, value) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (namespace, class, object, key) DO UPDATE SET value = excluded.value",
                    &[&scope.namespace, &scope.class, &scope.id, &key.as_bytes(), value],
                )
                .await?,
            None => tx
                .execute(
                    "DELETE FROM do_storage WHERE namespace = $1 AND class = $2 AND object = $3 AND key = $4",
                    &[&scope.namespace, &scope.class, &scope.id, &key.as_bytes()],
                )
                .await?,
        };
    }
    if let Some(quota) = quota {
        let after: i64 = match tx.query_opt(usage, &[&scope.namespace]).await? {
            Some(row) => row.try_get(0)?,
            None => 0,
        };
        if after > before && u64::try_from(after).unwrap_or(0) > quota {
            // Dropping the transaction rolls the write back.
            return Err(ObjectError::QuotaExceeded { quota }.into());
        }
    }
    tx.commit().await?;
    Ok(())
}
