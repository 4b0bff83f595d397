//! The PostgreSQL backend (or any Postgres-wire database): a pool of
//! `tokio-postgres` connections (`deadpool-postgres`: made on demand, a
//! broken one replaced), TLS on rustls. Its I/O runs on a small runtime of
//! its own, started on first use, so no caller's thread (an engine thread)
//! ever drives a database connection, and a busy caller never stalls
//! another's query. The same table and queries as the SQLite backend
//! (BYTEA keys compare bytewise, as Cloudflare lists them).
//!
//! The schema is the operator's ([`schema::migrate`]); the backend checks
//! it once, on its first operation.

mod alarm;
mod durable;
mod listen;
mod queue;
mod schema;
mod settings;
mod sql_log;
mod workflow;

pub use schema::SCHEMA_VERSION;
#[cfg(feature = "cli")]
pub use settings::PostgresArgs;
pub use settings::{POSTGRES_URL_ENV, PostgresSettings};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};

use crate::StoreError;
use crate::kv::{
    self, KvEntry, KvList, KvListOptions, KvScope, KvWrite, expiration_of, limits, stored,
};

pub(crate) struct Postgres {
    pool: Pool,
    /// The runtime the pool's connections run on, made on first use.
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: OnceLock<tokio::runtime::Handle>,
    /// Whether the schema was found current once.
    schema_ok: AtomicBool,
    /// The queues this process waits on, woken by other processes' sends
    /// (`listen.rs`), and what the listening connection is made with.
    wakes: std::sync::Arc<listen::QueueWakes>,
    listen_with: (
        tokio_postgres::Config,
        tokio_postgres_rustls::MakeRustlsConnect,
    ),
    listening: std::sync::Once,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").finish_non_exhaustive()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Dropped wherever the last handle goes, maybe inside a runtime.
        let runtime = self
            .runtime
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(runtime) = runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A pool for `settings`; nothing is connected yet.
fn pool(settings: &PostgresSettings) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        settings.config()?,
        settings.tls()?,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size.max(1))
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(settings.connect_timeout))
        .wait_timeout(Some(settings.connect_timeout))
        .build()
        .map_err(|e| StoreError::Settings(e.to_string()))
}

/// Applies the schema's missing migrations (the operator's job): the
/// version the database is at afterwards.
pub(crate) async fn migrate(settings: &PostgresSettings) -> Result<i32, StoreError> {
    let pool = pool(settings)?;
    let mut client = pool.get().await?;
    schema::migrate(&mut client).await
}

impl Postgres {
    /// The backend for `settings`; it connects on first use.
    pub(crate) fn new(settings: &PostgresSettings) -> Result<Self, StoreError> {
        Ok(Self {
            pool: pool(settings)?,
            runtime: Mutex::new(None),
            handle: OnceLock::new(),
            schema_ok: AtomicBool::new(false),
            wakes: std::sync::Arc::new(listen::QueueWakes::new()),
            listen_with: (settings.config()?, settings.tls()?),
            listening: std::sync::Once::new(),
        })
    }

    /// A watch that changes when another process sends to `scope`'s
    /// queue; the first call starts listening (`listen.rs`).
    pub(crate) fn queue_wakes(
        &self,
        scope: &crate::QueueScope,
    ) -> Result<tokio::sync::watch::Receiver<u64>, StoreError> {
        let handle = self.handle()?;
        self.listening.call_once(|| {
            let (config, tls) = self.listen_with.clone();
            listen::spawn(&handle, config, tls, &self.wakes);
        });
        Ok(self.wakes.subscribe(scope))
    }

    /// Runs `work` with a pooled connection on the backend's runtime.
    pub(crate) async fn run<T, F>(&self, work: impl FnOnce(Object) -> F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let handle = self.handle()?;
        let pool = self.pool.clone();
        let check = !self.schema_ok.load(Ordering::Acquire);
        let client = handle
            .spawn(async move {
                let client = pool.get().await?;
                if check {
                    schema::check(&client).await?;
                }
                Ok::<_, StoreError>(client)
            })
            .await
            .map_err(|_| StoreError::Gone)??;
        if check {
            self.schema_ok.store(true, Ordering::Release);
        }
        handle
            .spawn(work(client))
            .await
            .map_err(|_| StoreError::Gone)?
    }

    fn handle(&self) -> Result<tokio::runtime::Handle, StoreError> {
        if let Some(handle) = self.handle.get() {
            return Ok(handle.clone());
        }
        let mut runtime = self.runtime.lock().unwrap_or_else(PoisonError::into_inner);
        if runtime.is_none() {
            *runtime = Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("isolane-storage")
                    .enable_all()
                    .build()
                    .map_err(|e| StoreError::Settings(format!("its runtime: {e}")))?,
            );
        }
        let handle = runtime
            .as_ref()
            .map(|r| r.handle().clone())
            .ok_or(StoreError::Gone)?;
        Ok(self.handle.get_or_init(|| handle).clone())
    }

    pub(crate) async fn get(
        &self,
        scope: KvScope,
        key: String,
        now: u64,
        admit: impl FnOnce(usize) -> bool + Send + 'static,
    ) -> Result<Option<KvEntry>, StoreError> {
        limits::check_key("GET", &key)?;
        self.run(move |client| async move { get(&client, &scope, &key, now, admit).await })
            .await
    }

    pub(crate) async fn put(
        &self,
        scope: KvScope,
        write: KvWrite,
        now: u64,
        quota: Option<u64>,
    ) -> Result<(), StoreError> {
        let expiration = write.check(now)?;
        self.run(move |client| put(client, scope, write, expiration, quota))
            .await
    }

    pub(crate) async fn delete(&self, scope: KvScope, key: String) -> Result<(), StoreError> {
        self.run(move |client| async move {
            client
                .execute(
                    "DELETE FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3",
                    &[&scope.namespace, &scope.kv, &key.as_bytes()],
                )
                .await?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn list(
        &self,
        scope: KvScope,
        options: KvListOptions,
        now: u64,
    ) -> Result<KvList, StoreError> {
        let query = kv::ListQuery::new(&options)?;
        self.run(move |client| async move { list(&client, &scope, query, now).await })
            .await
    }
}

/// Writes `write` in one transaction; with a `quota`, a write that grows
/// what the namespace stores past it is rolled back and refused.
async fn put(
    mut client: Object,
    scope: KvScope,
    write: KvWrite,
    expiration: Option<u64>,
    quota: Option<u64>,
) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    let key = write.key.as_bytes();
    let old: Option<i32> = tx
        .query_opt(
            "SELECT octet_length(key) + octet_length(value) + coalesce(octet_length(metadata), 0)
             FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3 FOR UPDATE",
            &[&scope.namespace, &scope.kv, &key],
        )
        .await?
        .map(|row| row.try_get(0))
        .transpose()?;
    tx.execute(
        "INSERT INTO kv (namespace, kv, key, value, metadata, expiration) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (namespace, kv, key) DO UPDATE SET value = excluded.value,
             metadata = excluded.metadata, expiration = excluded.expiration",
        &[&scope.namespace, &scope.kv, &key, &write.value, &write.metadata, &stored(expiration)],
    )
    .await?;
    if let Some(quota) = quota.filter(|_| kv::grows(&write, old.map(i64::from))) {
        let used: i64 = tx
            .query_one(
                "SELECT bytes FROM kv_usage WHERE namespace = $1",
                &[&scope.namespace],
            )
            .await?
            .try_get(0)?;
        if u64::try_from(used).unwrap_or(0) > quota {
            // Dropping the transaction rolls the write back.
            return Err(kv::KvError::QuotaExceeded { quota }.into());
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The live entry under `key`: its size asked of `admit` before its value
/// is read; an expired one deleted on the way.
async fn get(
    client: &Object,
    scope: &KvScope,
    key: &str,
    now: u64,
    admit: impl FnOnce(usize) -> bool,
) -> Result<Option<KvEntry>, StoreError> {
    let head = client
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
        client
            .execute(
                "DELETE FROM kv WHERE namespace = $1 AND kv = $2 AND key = $3 AND expiration <= $4",
                &[
                    &scope.namespace,
                    &scope.kv,
                    &key.as_bytes(),
                    &stored(Some(now)),
                ],
            )
            .await?;
        return Ok(None);
    }
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if !admit(len) {
        return Err(StoreError::Refused { len });
    }
    let row = client
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

/// One page of live keys, as `query` asks.
async fn list(
    client: &Object,
    scope: &KvScope,
    query: kv::ListQuery,
    now: u64,
) -> Result<KvList, StoreError> {
    let rows = client
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
