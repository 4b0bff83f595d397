//! The PostgreSQL backend (or any Postgres-wire database): one
//! `tokio-postgres` client, whose connection task runs on the runtime that
//! connected; every caller's queries are pipelined over it, so no caller's
//! thread ever waits on the database. The same table and queries as the
//! SQLite backend (BYTEA keys compare bytewise, as Cloudflare lists them).
//!
//! The schema is made here, if missing, when the store connects; owning
//! migrations (the operator's job in a cluster) comes with the cluster
//! wiring (docs/state.md).

use tokio_postgres::{Client, NoTls};

use crate::StoreError;
use crate::kv::{
    self, KvEntry, KvList, KvListOptions, KvScope, KvWrite, expiration_of, limits, stored,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    namespace TEXT NOT NULL,
    kv TEXT NOT NULL,
    key BYTEA NOT NULL,
    value BYTEA NOT NULL,
    metadata TEXT,
    expiration BIGINT,
    PRIMARY KEY (namespace, kv, key)
);
";

pub(crate) struct Postgres {
    client: Client,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").finish_non_exhaustive()
    }
}

impl Postgres {
    /// Connects with `config` (a libpq connection string or URL) and makes
    /// the schema if missing.
    pub(crate) async fn connect(config: &str) -> Result<Self, StoreError> {
        let (client, connection) = tokio_postgres::connect(config, NoTls).await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "the PostgreSQL connection ended");
            }
        });
        client.batch_execute(SCHEMA).await?;
        Ok(Self { client })
    }

    pub(crate) async fn get(
        &self,
        scope: &KvScope,
        key: &str,
        now: u64,
        admit: impl FnOnce(usize) -> bool,
    ) -> Result<Option<KvEntry>, StoreError> {
        limits::check_key("GET", key)?;
        let head = self
            .client
            .query_opt(
                "SELECT octet_length(value), expiration FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3",
                &[&scope.namespace, &scope.kv, &key.as_bytes()],
            )
            .await?;
        let Some(head) = head else {
            return Ok(None);
        };
        let (len, expiration): (i32, Option<i64>) = (head.try_get(0)?, head.try_get(1)?);
        if expiration_of(expiration).is_some_and(|at| at <= now) {
            self.client
                .execute(
                    "DELETE FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3 AND expiration <= $4",
                    &[&scope.namespace, &scope.kv, &key.as_bytes(), &stored(Some(now))],
                )
                .await?;
            return Ok(None);
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if !admit(len) {
            return Err(StoreError::Refused { len });
        }
        let row = self
            .client
            .query_opt(
                "SELECT value, metadata, expiration FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3",
                &[&scope.namespace, &scope.kv, &key.as_bytes()],
            )
            .await?;
        row.map(|row| {
            Ok(KvEntry {
                value: row.try_get(0)?,
                metadata: row.try_get(1)?,
                expiration: expiration_of(row.try_get(2)?),
            })
        })
        .transpose()
    }

    pub(crate) async fn put(
        &self,
        scope: &KvScope,
        write: &KvWrite,
        now: u64,
    ) -> Result<(), StoreError> {
        let expiration = write.check(now)?;
        self.client
            .execute(
                "INSERT INTO kv (namespace, kv, key, value, metadata, expiration) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (namespace, kv, key) DO UPDATE SET value = excluded.value,
                     metadata = excluded.metadata, expiration = excluded.expiration",
                &[
                    &scope.namespace,
                    &scope.kv,
                    &write.key.as_bytes(),
                    &write.value,
                    &write.metadata,
                    &stored(expiration),
                ],
            )
            .await?;
        Ok(())
    }

    pub(crate) async fn delete(&self, scope: &KvScope, key: &str) -> Result<(), StoreError> {
        self.client
            .execute(
                "DELETE FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3",
                &[&scope.namespace, &scope.kv, &key.as_bytes()],
            )
            .await?;
        Ok(())
    }

    pub(crate) async fn list(
        &self,
        scope: &KvScope,
        options: &KvListOptions,
        now: u64,
    ) -> Result<KvList, StoreError> {
        let query = kv::ListQuery::new(options)?;
        let rows = self
            .client
            .query(
                "SELECT key, expiration, metadata FROM kv
                 WHERE namespace = $1 AND kv = $2
                   AND (key > $3 OR ($6 AND key = $3))
                   AND ($4::BYTEA IS NULL OR key < $4)
                   AND (expiration IS NULL OR expiration > $5)
                 ORDER BY key LIMIT $7",
                &[
                    &scope.namespace,
                    &scope.kv,
                    &query.start,
                    &query.end,
                    &stored(Some(now)),
                    &query.inclusive,
                    &query.fetch,
                ],
            )
            .await?;
        let rows = rows
            .iter()
            .map(|row| {
                Ok((
                    row.try_get(0)?,
                    expiration_of(row.try_get(1)?),
                    row.try_get(2)?,
                ))
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
        Ok(query.page(rows)?)
    }
}
