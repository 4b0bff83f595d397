//! The PostgreSQL schema and its migrations. In a cluster the operator
//! owns them (it runs [`migrate`] at start); runtime nodes only check, on
//! their first operation, that the schema they need is there.
//!
//! Migrations are numbered, applied in order, each once, in one
//! transaction under an advisory lock, so operators starting together (or
//! a test and an operator) never apply one twice.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::StoreError;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = 1;

/// Each migration: its version and its SQL.
const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    // `IF NOT EXISTS`: databases made before migrations were numbered
    // already have this table.
    "CREATE TABLE IF NOT EXISTS kv (
        namespace TEXT NOT NULL,
        kv TEXT NOT NULL,
        key BYTEA NOT NULL,
        value BYTEA NOT NULL,
        metadata TEXT,
        expiration BIGINT,
        PRIMARY KEY (namespace, kv, key)
    );",
)];

/// The advisory lock migrations run under ("ISOLANE" and a 1).
const LOCK: i64 = 0x0049_534f_4c41_4e45;

/// Applies the migrations `client`'s database lacks; the version it is at
/// afterwards.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS isolane_schema (
            version INTEGER PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );",
    )
    .await?;
    let current: Option<i32> = tx
        .query_one("SELECT max(version) FROM isolane_schema", &[])
        .await?
        .try_get(0)?;
    let current = current.unwrap_or(0);
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO isolane_schema (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tracing::info!(version, "applied a storage migration");
    }
    tx.commit().await?;
    Ok(current.max(SCHEMA_VERSION))
}

/// `Ok` when the database's schema is at least [`SCHEMA_VERSION`].
pub(crate) async fn check(client: &Client) -> Result<(), StoreError> {
    let found = match client
        .query_one("SELECT max(version) FROM isolane_schema", &[])
        .await
    {
        Ok(row) => row.try_get::<_, Option<i32>>(0)?.unwrap_or(0),
        Err(error) if error.code() == Some(&SqlState::UNDEFINED_TABLE) => 0,
        Err(error) => return Err(error.into()),
    };
    if found < SCHEMA_VERSION {
        return Err(StoreError::Schema {
            found,
            want: SCHEMA_VERSION,
        });
    }
    Ok(())
}
