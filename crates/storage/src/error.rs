//! What a store operation can fail with.

use crate::durable::ObjectError;
use crate::kv::{CorruptKey, KvError};

/// A store operation's failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The input breaks one of Cloudflare's KV rules; the message is
    /// Cloudflare's (see [`KvError`]).
    #[error(transparent)]
    Kv(#[from] KvError),
    /// The input breaks one of Durable Object storage's rules.
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// A queue send breaks one of Cloudflare Queues' limits, or the
    /// namespace's queue quota.
    #[error(transparent)]
    Queue(#[from] crate::queue_limits::QueueError),
    /// A workflow operation was refused (its message is the Worker's).
    #[error(transparent)]
    Workflow(#[from] crate::workflow_limits::WorkflowError),
    /// A D1 database's SQL failed or was refused (its message is the SQL
    /// API's).
    #[error(transparent)]
    Sql(#[from] crate::sql::SqlError),
    /// The caller's `admit` refused a value of this size (its memory
    /// budget is spent).
    #[error("a value of {len} bytes was refused by the caller's memory budget")]
    Refused { len: usize },
    #[error("cannot create the state folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error("the database failed: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("PostgreSQL failed: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("no PostgreSQL connection: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("the storage settings: {0}")]
    Settings(String),
    /// The database's schema is older than this build needs: the operator
    /// (which owns migrations) has not run against it.
    #[error(
        "the database's schema is at version {found}, this build needs {want}: the operator applies migrations at start (is it given --storage-postgres-url?)"
    )]
    Schema { found: i32, want: i32 },
    /// The Kubernetes namespace's storage operations on this process are
    /// spent for now (`Store::with_namespace_ops`): refused before the
    /// database, so it keeps serving other namespaces.
    #[error(
        "storage operation refused: this Kubernetes namespace's {per_second} storage operations per second on this node are used up; retry later"
    )]
    Throttled { per_second: u32 },
    #[error("a stored cursor or metadata is not valid")]
    Corrupt,
    #[error("the store's worker thread is gone")]
    Gone,
}

impl StoreError {
    /// A bounded name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Kv(_)
            | StoreError::Object(_)
            | StoreError::Queue(_)
            | StoreError::Workflow(_) => "invalid",
            StoreError::Sql(_) => "sql",
            StoreError::Refused { .. } => "refused",
            StoreError::Folder { .. } => "folder",
            StoreError::Database(_) | StoreError::Postgres(_) => "database",
            StoreError::Pool(_) => "unavailable",
            StoreError::Settings(_) => "settings",
            StoreError::Schema { .. } => "schema",
            StoreError::Throttled { .. } => "throttled",
            StoreError::Corrupt => "corrupt",
            StoreError::Gone => "gone",
        }
    }
}

impl From<CorruptKey> for StoreError {
    fn from(_: CorruptKey) -> Self {
        StoreError::Corrupt
    }
}
