//! Workflows' limits (Cloudflare's where they apply) and the refusals a
//! Worker sees (see `crate::workflow`).

/// Cloudflare's limit on a step's result, an instance's params and an
/// event's payload, as JSON.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// Cloudflare's default limit on the steps of one instance.
pub const MAX_STEPS: i64 = 10_000;

/// Runs of an instance that end without recording anything (a limit, an
/// exception outside a step) in a row before it is errored.
pub const MAX_FAILED_RUNS: i64 = 20;

/// A refused workflow operation, worded as the Worker sees it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    #[error("instance.not_found: no instance {id} of this workflow")]
    NotFound { id: String },
    #[error("instance.already_exists: an instance {id} of this workflow exists")]
    Exists { id: String },
    #[error(
        "instance id {id:?} is invalid: 1 to 100 letters, digits, - and _, not starting with -"
    )]
    InvalidId { id: String },
    #[error("{what} is {len} bytes as JSON, over the limit of 1 MiB")]
    TooLarge { what: &'static str, len: usize },
    #[error("the instance has {MAX_STEPS} steps, the most one may have")]
    TooManySteps,
    /// The instance is paused, terminated or finished: its run stops.
    #[error("the instance is {status}")]
    Stopped { status: String },
    /// Another process took the workflow since this one did (a runner on
    /// a cluster: `Store::workflow_take`).
    #[error(
        "this process is no longer the workflow's owner (its epoch is {mine}, the workflow's {current})"
    )]
    Fenced { mine: i64, current: i64 },
    /// Owner epochs are kept by PostgreSQL only (a cluster's store;
    /// `isolane dev` runs every instance itself).
    #[error("this store keeps no workflow owners: a cluster's PostgreSQL does")]
    NoOwners,
}

/// Whether `id` is an instance id (Cloudflare's: 1 to 100 of letters,
/// digits, `-` and `_`, not starting with `-`).
pub fn is_instance_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    (1..=100).contains(&bytes.len()) && bytes[0] != b'-' && bytes.iter().all(ok)
}
