//! State that stays: the store behind Workers' KV bindings (issue 32).
//!
//! [`Store`] is the one handle the engine and `isolane dev` hold: cheap to
//! clone, shared by every engine thread. Every entry is keyed by a
//! [`KvScope`] — the Worker's Kubernetes namespace and the KV namespace's
//! name — and its key, so a Worker of one Kubernetes namespace never reaches
//! another's data, whatever names it uses: the scope comes from the Worker's
//! id and its bundle, never from JavaScript.
//!
//! Backends: [`Store::sqlite`], an SQLite file (`isolane dev`'s
//! `.isolane/state`), whose work runs on tokio's blocking pool, never on the
//! calling (engine) thread; [`Store::postgres`], PostgreSQL (a runtime
//! node's, and the operator's [`migrate`]), on a pool of connections that
//! run on a small runtime of the store's own. Durable Objects' storage
//! ([`durable`]) is a scope of its own beside [`KvScope`]: an object's
//! keys live under its namespace, class and id ([`ObjectScope`]); a
//! SQLite-backed object's database and its log are [`sql`]'s.
//!
//! Cloudflare Queues' backlog ([`queue`]) is a scope of its own too: a
//! queue's messages live under its namespace and name ([`QueueScope`]).
//!
//! Limits are Cloudflare's ([`kv::limits`]), checked here with Cloudflare's
//! messages so that every caller refuses the same inputs the same way.
#![forbid(unsafe_code)]

pub mod alarm;
pub mod d1;
pub mod durable;
mod error;
pub mod kv;
pub mod lru;
mod object_store;
mod observe;
mod ops_quota;
mod postgres;
pub mod queue;
mod queue_limits;
pub mod r2;
pub mod sql;
mod sql_store;
mod sqlite;
pub mod workflow;
mod workflow_limits;

pub use alarm::{AlarmClaim, DueAlarm, MAX_ALARM_RETRIES};
pub use d1::D1Database;
pub use durable::{ObjectError, ObjectList, ObjectScope, ObjectWrite, SqlAppend};
pub use error::StoreError;
pub use kv::{DEFAULT_CACHE_TTL, KvEntry, KvError, KvKey, KvList, KvListOptions, KvScope, KvWrite};
pub use observe::{StoreData, StoreObserver, StoreOp, StoreRefusal};
#[cfg(feature = "cli")]
pub use postgres::PostgresArgs;
pub use postgres::{POSTGRES_URL_ENV, PostgresSettings, SCHEMA_VERSION};
pub use queue::{
    QueueBatch, QueueDepth, QueueError, QueueMessage, QueueQuota, QueueReady, QueueScope,
    QueueSend, QueueSettle, queue_tail_path,
};
#[cfg(feature = "cli")]
pub use r2::s3::R2S3Args;
pub use workflow::{WorkflowCounts, WorkflowDue, WorkflowError, WorkflowOp, WorkflowScope};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use sqlite::Sqlite;

/// The store: a handle on one backend, shared by every engine thread.
#[derive(Clone, Debug)]
pub struct Store {
    backend: Backend,
    /// Hot keys, when this process keeps them (a runtime node).
    cache: Option<Arc<kv::KvCache>>,
    /// Bytes one Kubernetes namespace may store, when bounded.
    quota: Option<u64>,
    /// Bytes one Durable Object may store, when bounded.
    object_quota: Option<u64>,
    /// Operations per second one Kubernetes namespace may run, when
    /// bounded.
    ops: Option<Arc<ops_quota::OpsQuota>>,
    /// Woken when this process sets or deletes an alarm (the alarm loop
    /// sleeps until the next one is due, or this).
    alarms_changed: Arc<tokio::sync::Notify>,
    /// Woken when this process sends or retries a queue message (the
    /// delivery loop sleeps until the next one is visible, or this).
    queues_changed: Arc<tokio::sync::watch::Sender<u64>>,
    /// Changed by each workflow operation of this process (the runner
    /// sleeps until the next instance is due, or this).
    workflows_changed: Arc<tokio::sync::watch::Sender<u64>>,
    /// What one Kubernetes namespace's queues may hold, when bounded.
    queue_quota: Option<queue::QueueQuota>,
    /// How long a queue message is kept, in ms, when bounded
    /// ([`Store::queue_expire`]).
    queue_retention_ms: Option<i64>,
    /// Told of each operation that went through.
    observer: observe::Observer,
    /// The D1 databases this process has open ([`d1`]).
    d1: Arc<d1::D1Databases>,
    /// Where a cluster's R2 buckets are, when it has them ([`r2::s3`]).
    r2_s3: Option<Arc<r2::s3::S3Store>>,
}

/// A read: the entry, and whether this node's cache answered it.
#[derive(Debug)]
pub struct KvRead {
    pub entry: Option<KvEntry>,
    pub cached: bool,
}

#[derive(Clone, Debug)]
enum Backend {
    Sqlite(Arc<SqliteFolder>),
    Postgres(Arc<postgres::Postgres>),
}

/// An SQLite store opened on first use (so a process that never touches
/// KV never makes the folder).
#[derive(Debug)]
struct SqliteFolder {
    dir: PathBuf,
    db: OnceLock<Sqlite>,
    /// Held while the database is opened.
    opening: Mutex<()>,
}

impl SqliteFolder {
    /// The database, opened (and the folder made) the first time.
    fn get(&self) -> Result<&Sqlite, StoreError> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        // Two first uses at once (a request's and the queue consumer's, as
        // `isolane dev` starts) open one connection: a second one, making
        // the schema while the first ran a transaction that reads, then
        // writes, failed that write at once with "database is locked".
        let _opening = self.opening.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| StoreError::Folder {
            path: self.dir.display().to_string(),
            source,
        })?;
        let db = Sqlite::open(&self.dir.join(SQLITE_FILE))?;
        Ok(self.db.get_or_init(|| db))
    }
}

/// The file name of the SQLite database inside a state folder.
pub const SQLITE_FILE: &str = "isolane.sqlite3";

impl Store {
    /// The SQLite store in `dir` ([`SQLITE_FILE`]), opened — the folder
    /// and the file made when missing — on first use; a failure to open is
    /// that operation's error, and the next one tries again.
    pub fn sqlite(dir: &Path) -> Self {
        Self {
            backend: Backend::Sqlite(Arc::new(SqliteFolder {
                dir: dir.to_owned(),
                db: OnceLock::new(),
                opening: Mutex::new(()),
            })),
            cache: None,
            quota: None,
            object_quota: None,
            ops: None,
            alarms_changed: Arc::default(),
            queues_changed: Arc::new(tokio::sync::watch::channel(0).0),
            workflows_changed: Arc::new(tokio::sync::watch::channel(0).0),
            queue_quota: None,
            queue_retention_ms: None,
            observer: observe::Observer::default(),
            d1: Arc::default(),
            r2_s3: None,
        }
    }

    /// A PostgreSQL store (or any Postgres-wire database) as `settings`
    /// say. Nothing is connected yet: the first operation connects, and
    /// checks that the schema is current (see [`migrate`]); a database that
    /// is down fails operations, not this.
    pub fn postgres(settings: &PostgresSettings) -> Result<Self, StoreError> {
        Ok(Self {
            backend: Backend::Postgres(Arc::new(postgres::Postgres::new(settings)?)),
            cache: None,
            quota: None,
            object_quota: None,
            ops: None,
            alarms_changed: Arc::default(),
            queues_changed: Arc::new(tokio::sync::watch::channel(0).0),
            workflows_changed: Arc::new(tokio::sync::watch::channel(0).0),
            queue_quota: None,
            queue_retention_ms: None,
            observer: observe::Observer::default(),
            d1: Arc::default(),
            r2_s3: None,
        })
    }

    /// The store, telling `observer` of each operation that goes through.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn StoreObserver>) -> Self {
        self.observer = observe::Observer::new(observer);
        self
    }

    /// The store with a quota: a write that grows what a Kubernetes
    /// namespace stores (keys, values, metadata) past `bytes` is refused
    /// with [`KvError::QuotaExceeded`]; shrinking writes and deletes still
    /// go through.
    pub fn with_namespace_quota(mut self, bytes: u64) -> Self {
        self.quota = Some(bytes);
        self
    }

    /// The store with a limit per Durable Object: a write that grows what
    /// one object stores (keys and values) past `bytes` is refused with
    /// [`ObjectError::ObjectFull`]; shrinking writes and deletes still go
    /// through.
    #[must_use]
    pub fn with_object_quota(mut self, bytes: u64) -> Self {
        self.object_quota = Some(bytes);
        self
    }

    /// The store with `per_second` storage operations per Kubernetes
    /// namespace in this process (a burst of one second's worth): an
    /// operation past it is refused with [`StoreError::Throttled`] before
    /// it reaches the database. Reads this node's KV cache answers are
    /// not counted.
    #[must_use]
    pub fn with_namespace_ops(mut self, per_second: u32) -> Self {
        self.ops = Some(Arc::new(ops_quota::OpsQuota::new(per_second)));
        self
    }

    /// Takes one of `namespace`'s operations ([`Store::with_namespace_ops`]).
    pub(crate) fn admit_op(&self, namespace: &str, data: StoreData) -> Result<(), StoreError> {
        let Some(ops) = &self.ops else {
            return Ok(());
        };
        if ops.take(namespace, std::time::Instant::now()) {
            return Ok(());
        }
        self.observer
            .refused(namespace, data, StoreRefusal::Operations);
        Err(StoreError::Throttled {
            per_second: ops.per_second(),
        })
    }

    /// The store with a cache of hot keys of `bytes` on this node
    /// (Cloudflare's consistency: see [`kv::DEFAULT_CACHE_TTL`]); 0: none.
    pub fn with_kv_cache(mut self, bytes: usize) -> Self {
        self.cache = (bytes > 0).then(|| Arc::new(kv::KvCache::new(bytes)));
        self
    }

    /// The store with R2 buckets in the S3-compatible store `settings`
    /// name ([`r2::s3`]), instead of folders under the SQLite store's.
    pub fn with_r2_s3(mut self, settings: r2::s3::S3Settings) -> Result<Self, r2::R2Error> {
        self.r2_s3 = Some(Arc::new(r2::s3::S3Store::new(settings)?));
        Ok(self)
    }

    /// Whether this store serves R2 buckets (an S3 store, or `isolane
    /// dev`'s folder).
    pub fn serves_r2(&self) -> bool {
        self.r2_s3.is_some() || matches!(self.backend, Backend::Sqlite(_))
    }

    /// Bucket `bucket` of Kubernetes namespace `namespace` ([`r2`]): in
    /// the S3 store when there is one ([`Store::with_r2_s3`]), else a
    /// folder under the SQLite store's (`isolane dev`); a PostgreSQL store
    /// without one serves no buckets ([`r2::R2Error::NotServed`]). Makes
    /// the folder or the S3 bucket: call it off the engine's threads.
    pub fn r2_bucket(
        &self,
        namespace: &str,
        bucket: &str,
    ) -> Result<Arc<dyn r2::R2Bucket>, r2::R2Error> {
        if let Some(s3) = &self.r2_s3 {
            return Ok(Arc::new(r2::s3::S3Bucket::new(
                s3.clone(),
                namespace,
                bucket,
            )?));
        }
        match &self.backend {
            Backend::Sqlite(folder) => Ok(Arc::new(r2::disk::DiskBucket::new(
                &folder.dir,
                namespace,
                bucket,
            )?)),
            Backend::Postgres(_) => Err(r2::R2Error::NotServed),
        }
    }

    /// [`Store::sqlite`], opened now.
    pub fn open_sqlite(dir: &Path) -> Result<Self, StoreError> {
        let store = Self::sqlite(dir);
        if let Backend::Sqlite(folder) = &store.backend {
            folder.get()?;
        }
        Ok(store)
    }

    /// The live entry under `key`, or `None`: from this node's cache when
    /// it was fetched within `cache_ttl` ([`kv::DEFAULT_CACHE_TTL`] when
    /// `None`). `admit(len)` is asked with the value's size before it is
    /// read; `false` ends the read with [`StoreError::Refused`] (the
    /// caller's memory budget said no).
    pub async fn kv_get(
        &self,
        scope: KvScope,
        key: String,
        cache_ttl: Option<std::time::Duration>,
        admit: impl FnOnce(usize) -> bool + Send + 'static,
    ) -> Result<KvRead, StoreError> {
        kv::limits::check_key("GET", &key)?;
        let namespace = scope.namespace.clone();
        let read = self.kv_get_from(scope, key, cache_ttl, admit).await?;
        let bytes = read.entry.as_ref().map_or(0, |e| e.value.len());
        self.observer
            .tell(&namespace, StoreData::Kv, StoreOp::Read, bytes);
        Ok(read)
    }

    /// [`Store::kv_get`] from the cache or the backend.
    async fn kv_get_from(
        &self,
        scope: KvScope,
        key: String,
        cache_ttl: Option<std::time::Duration>,
        admit: impl FnOnce(usize) -> bool + Send + 'static,
    ) -> Result<KvRead, StoreError> {
        let Some(cache) = &self.cache else {
            self.admit_op(&scope.namespace, StoreData::Kv)?;
            let entry = self.read(scope, key, admit).await?;
            return Ok(KvRead {
                entry,
                cached: false,
            });
        };
        let ttl = cache_ttl.unwrap_or(kv::DEFAULT_CACHE_TTL);
        if let Some(entry) = cache.lookup(&scope, &key, ttl, now_secs()) {
            let len = entry.as_ref().map_or(0, |e| e.value.len());
            if !admit(len) {
                return Err(StoreError::Refused { len });
            }
            return Ok(KvRead {
                entry,
                cached: true,
            });
        }
        self.admit_op(&scope.namespace, StoreData::Kv)?;
        let writes = cache.writes();
        let entry = self.read(scope.clone(), key.clone(), admit).await?;
        cache.fill(&scope, &key, entry.as_ref(), writes);
        Ok(KvRead {
            entry,
            cached: false,
        })
    }

    /// [`Store::kv_get`] from the backend.
    async fn read(
        &self,
        scope: KvScope,
        key: String,
        admit: impl FnOnce(usize) -> bool + Send + 'static,
    ) -> Result<Option<KvEntry>, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, now| db.get(&scope, &key, now, admit)).await
            }
            Backend::Postgres(db) => db.get(scope, key, now_secs(), admit).await,
        }
    }

    /// Writes `write` under its key (checked against Cloudflare's limits
    /// first: a refused write writes nothing).
    pub async fn kv_put(&self, scope: KvScope, write: KvWrite) -> Result<(), StoreError> {
        let namespace = scope.namespace.clone();
        let bytes =
            write.key.len() + write.value.len() + write.metadata.as_ref().map_or(0, String::len);
        self.admit_op(&namespace, StoreData::Kv)?;
        self.kv_put_to(scope, write)
            .await
            .inspect_err(|e| self.observer.refused_by(&namespace, StoreData::Kv, e))?;
        self.observer
            .tell(&namespace, StoreData::Kv, StoreOp::Write, bytes);
        Ok(())
    }

    /// [`Store::kv_put`], its cache kept right.
    async fn kv_put_to(&self, scope: KvScope, write: KvWrite) -> Result<(), StoreError> {
        let forget = self
            .cache
            .clone()
            .map(|c| (c, scope.clone(), write.key.clone()));
        if let Some((cache, scope, key)) = &forget {
            cache.forget(scope, key);
        }
        let done = match &self.backend {
            Backend::Sqlite(folder) => {
                let quota = self.quota;
                blocking(folder, move |db, now| db.put(&scope, &write, now, quota)).await
            }
            Backend::Postgres(db) => db.put(scope, write, now_secs(), self.quota).await,
        };
        if let Some((cache, scope, key)) = &forget {
            cache.forget(scope, key);
        }
        done
    }

    /// Removes `key` (nothing happens when there is none).
    pub async fn kv_delete(&self, scope: KvScope, key: String) -> Result<(), StoreError> {
        kv::limits::check_key("DELETE", &key)?;
        let (namespace, bytes) = (scope.namespace.clone(), key.len());
        self.admit_op(&namespace, StoreData::Kv)?;
        let forget = self.cache.clone().map(|c| (c, scope.clone(), key.clone()));
        if let Some((cache, scope, key)) = &forget {
            cache.forget(scope, key);
        }
        let done = match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, move |db, _| db.delete(&scope, &key)).await,
            Backend::Postgres(db) => db.delete(scope, key).await,
        };
        if let Some((cache, scope, key)) = &forget {
            cache.forget(scope, key);
        }
        if done.is_ok() {
            self.observer
                .tell(&namespace, StoreData::Kv, StoreOp::Write, bytes);
        }
        done
    }

    /// The live keys in order, as `options` asks.
    pub async fn kv_list(
        &self,
        scope: KvScope,
        options: KvListOptions,
    ) -> Result<KvList, StoreError> {
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Kv)?;
        let list = match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, now| db.list(&scope, &options, now)).await
            }
            Backend::Postgres(db) => db.list(scope, options, now_secs()).await,
        }?;
        let bytes = list.keys.iter().map(|k| k.name.len()).sum();
        self.observer
            .tell(&namespace, StoreData::Kv, StoreOp::List, bytes);
        Ok(list)
    }
}

/// Applies the PostgreSQL schema's missing migrations, each once, under an
/// advisory lock (several callers at once are safe): in a cluster, the
/// operator's job at start. The version the database is at afterwards.
pub async fn migrate(settings: &PostgresSettings) -> Result<i32, StoreError> {
    postgres::migrate(settings).await
}

/// Runs `work` on tokio's blocking pool with the SQLite database (opened
/// on first use) and the current time.
pub(crate) async fn blocking<T: Send + 'static>(
    folder: &Arc<SqliteFolder>,
    work: impl FnOnce(&Sqlite, u64) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let folder = folder.clone();
    tokio::task::spawn_blocking(move || work(folder.get()?, now_secs()))
        .await
        .map_err(|_| StoreError::Gone)?
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_store_runs_its_work_off_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = Store::sqlite(&state);
        assert!(!state.exists(), "made on first use only");
        let scope = KvScope::new("ns", "kv");
        let write = KvWrite {
            key: "k".into(),
            value: b"v".to_vec(),
            metadata: None,
            expiration: None,
            expiration_ttl: None,
        };
        store.kv_put(scope.clone(), write).await.unwrap();
        let caller = std::thread::current().id();
        let entry = store
            .kv_get(scope.clone(), "k".into(), None, move |_| {
                std::thread::current().id() != caller
            })
            .await
            .unwrap();
        assert_eq!(entry.entry.map(|e| e.value), Some(b"v".to_vec()));
        let list = store
            .kv_list(scope.clone(), KvListOptions::default())
            .await
            .unwrap();
        assert_eq!(list.keys.len(), 1);
        store.kv_delete(scope.clone(), "k".into()).await.unwrap();
        let error = store.kv_delete(scope, String::new()).await.unwrap_err();
        assert_eq!(error.to_string(), "Key name cannot be empty.");
    }

    /// A queue's send (a transaction that reads, then writes) and other
    /// first uses at the same moment, on a new folder, all succeed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn first_uses_at_once_all_succeed() {
        for round in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::sqlite(dir.path());
            let send = |n: u8| {
                let store = store.clone();
                async move {
                    let message = queue::QueueSend {
                        body: vec![n],
                        content_type: "bytes".into(),
                        delay_seconds: 0,
                    };
                    let scope = queue::QueueScope::new("ns", "jobs");
                    store.queue_send(scope, vec![message], false).await
                }
            };
            let write = KvWrite {
                key: "k".into(),
                value: b"v".to_vec(),
                metadata: None,
                expiration: None,
                expiration_ttl: None,
            };
            let (a, b, c, d) = tokio::join!(
                send(1),
                send(2),
                store.kv_put(KvScope::new("ns", "kv"), write),
                store.queue_depth(queue::QueueScope::new("ns", "jobs")),
            );
            let failed = [a.err(), b.err(), c.err(), d.err()];
            assert!(
                failed.iter().all(Option::is_none),
                "round {round}: {failed:?}"
            );
        }
    }
}
