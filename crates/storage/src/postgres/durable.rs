//! Durable Objects' storage in PostgreSQL: the same tables and queries as
//! the SQLite backend's (`do_storage`, `do_usage`, `do_alarm`; migration 3;
//! `do_owner`, migration 6).

use deadpool_postgres::Object;

use super::Postgres;
use crate::StoreError;
use crate::durable::{self, ObjectError, ObjectList, ObjectScope, ObjectWrite, WriteQuota};

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
        quota: WriteQuota,
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

/// The owner epoch, locked FOR SHARE: a take waits for the writer.
pub(super) const FENCE: &str =
    "SELECT epoch FROM do_owner WHERE namespace = $1 AND class = $2 AND object = $3 FOR SHARE";
/// Upserts that change nothing: they make the usage row when missing and
/// lock it either way; each answers the row's bytes.
pub(super) const OBJECT_USAGE: &str =
    "INSERT INTO do_object_usage (namespace, class, object, bytes) VALUES ($1, $2, $3, 0)
     ON CONFLICT (namespace, class, object) DO UPDATE SET bytes = do_object_usage.bytes
     RETURNING bytes";
pub(super) const NAMESPACE_USAGE: &str = "INSERT INTO do_usage (namespace, bytes) VALUES ($1, 0)
     ON CONFLICT (namespace) DO UPDATE SET bytes = do_usage.bytes
     RETURNING bytes";

/// Refuses the write unless the object's owner epoch is still `mine`.
/// FOR SHARE: a take waits for this write to commit, so the write lands
/// before it or is refused after it.
pub(super) async fn check_fence(
    tx: &deadpool_postgres::Transaction<'_>,
    scope: &ObjectScope,
    mine: i64,
) -> Result<(), StoreError> {
    let current: i64 = match tx
        .query_opt(FENCE, &[&scope.namespace, &scope.class, &scope.id])
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

/// Applies `write` in one transaction; a write that leaves the namespace
/// (or the object) storing more than before and more than its `quota` is
/// rolled back and refused. The namespace's usage row is locked first, so
/// concurrent writers of one namespace cannot both pass the check.
async fn write_all(
    mut client: Object,
    scope: ObjectScope,
    write: ObjectWrite,
    quota: WriteQuota,
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    if let Some(mine) = write.fence {
        check_fence(&tx, &scope, mine).await?;
    }
    let before = usage(&tx, &scope, quota).await?;
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
    if let Some((ns_before, object_before)) = before {
        let (ns_after, object_after) = usage(&tx, &scope, quota).await?.unwrap_or_default();
        // Dropping the transaction rolls the write back.
        quota.check((ns_before, ns_after), (object_before, object_after))?;
    }
    tx.commit().await?;
    Ok(())
}

/// What the namespace and the object store, when `quota` bounds either.
/// Both usage rows are made when missing and locked, the object's first:
/// the order the `do_storage` triggers update them in (`do_object_usage`
/// fires before `do_usage`), so concurrent writers of one namespace check
/// one after another and never wait on each other in a circle.
pub(super) async fn usage(
    tx: &deadpool_postgres::Transaction<'_>,
    scope: &ObjectScope,
    quota: WriteQuota,
) -> Result<Option<(i64, i64)>, StoreError> {
    if !quota.any() {
        return Ok(None);
    }
    // An upsert that changes nothing: it makes the row when missing, and
    // locks it either way.
    let object: i64 = tx
        .query_one(OBJECT_USAGE, &[&scope.namespace, &scope.class, &scope.id])
        .await?
        .try_get(0)?;
    let namespace: i64 = tx
        .query_one(NAMESPACE_USAGE, &[&scope.namespace])
        .await?
        .try_get(0)?;
    Ok(Some((namespace, object)))
}
