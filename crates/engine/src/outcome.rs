//! How a request ended, and the errors `execute` returns.
//!
//! One enum feeds logs, metrics and HTTP status alike: [`Outcome`], the
//! Worker vocabulary's (`isolane-worker`), shared with the node, the wire and
//! the router. Every [`ExecuteError`] maps to exactly one outcome, and so to
//! one status and one reason. The engine answers no request itself: a
//! refusal stays this typed error (outcome, [`ExecuteError::detail`],
//! [`ExecuteError::retry_after`]) through the node and the wire, and the
//! front end (the router, which `isolane dev` runs too) renders its page.

use http::StatusCode;

/// How a request ended: the Worker vocabulary's outcome, whose table gives
/// the status, the reason and the metric label. [`ExecuteError::outcome`]
/// is the one place the engine's errors map onto it.
pub use isolane_worker::Outcome;

/// Why `execute` did not return the worker's response.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error("thread {thread} does not exist (the engine has {threads})")]
    UnknownThread { thread: usize, threads: usize },
    #[error("thread {thread} is overloaded: its queue is full")]
    Overloaded { thread: usize },
    #[error("the request was canceled: {reason}")]
    Canceled { reason: &'static str },
    #[error("worker script failed: {message}")]
    Script { message: String },
    #[error("worker threw: {message}")]
    Exception { message: String },
    #[error("CPU time limit of {limit_ms} ms exceeded")]
    CpuLimit { limit_ms: u64 },
    #[error("memory limit of {limit_mib} MiB exceeded")]
    MemoryLimit { limit_mib: u64 },
    #[error("wall time limit of {limit_ms} ms exceeded")]
    WallTimeout { limit_ms: u64 },
    #[error("the worker keeps exceeding its limits and is refused for {retry_after_secs} s")]
    Quarantined { retry_after_secs: u32 },
    /// The client's body is over `EngineConfig::max_request_body_bytes`
    /// (`body_cap.rs`): the client's failure, never the Worker's.
    #[error("the request body is larger than {limit} bytes")]
    BodyTooLarge { limit: u64 },
    /// The client already holds its share of the Worker's WebSockets on
    /// this thread (`host/socket_count.rs`).
    #[error(
        "this client already has {limit} WebSockets open to this Worker (its share); close one first"
    )]
    ClientWebSockets { limit: usize },
    /// Its namespace is over its CPU quota (docs/policy.md).
    #[error(
        "this namespace used more CPU than its quota of {quota_ms} CPU-ms per second on this node; retry after {retry_after_secs} s"
    )]
    QuotaExceeded {
        quota_ms: u32,
        retry_after_secs: u32,
    },
}

impl ExecuteError {
    pub fn outcome(&self) -> Outcome {
        match self {
            ExecuteError::UnknownThread { .. } => Outcome::InvalidThread,
            ExecuteError::Overloaded { .. } => Outcome::Overloaded,
            ExecuteError::Canceled { .. } => Outcome::Canceled,
            // A script that does not compile is the Worker failing, as a
            // throw is (its message goes to the logs).
            ExecuteError::Script { .. } | ExecuteError::Exception { .. } => Outcome::Exception,
            ExecuteError::CpuLimit { .. } => Outcome::CpuLimit,
            ExecuteError::MemoryLimit { .. } => Outcome::MemoryLimit,
            ExecuteError::WallTimeout { .. } => Outcome::WallTimeout,
            ExecuteError::Quarantined { .. } => Outcome::Quarantined,
            ExecuteError::BodyTooLarge { .. } => Outcome::BodyTooLarge,
            ExecuteError::ClientWebSockets { .. } => Outcome::ClientWebSockets,
            ExecuteError::QuotaExceeded { .. } => Outcome::QuotaExceeded,
        }
    }

    /// The HTTP status a front end answers with (the outcome's).
    pub fn status(&self) -> StatusCode {
        self.outcome()
            .http_status()
            .and_then(|status| StatusCode::from_u16(status).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The value of the `x-isolane-reason` header: the outcome's name.
    pub fn reason(&self) -> &'static str {
        self.outcome().label()
    }

    /// Seconds for a `Retry-After` header, for errors worth retrying.
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            ExecuteError::Overloaded { .. } | ExecuteError::ClientWebSockets { .. } => Some(1),
            ExecuteError::Quarantined { retry_after_secs }
            | ExecuteError::QuotaExceeded {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// What the client may be told: a script error's or an exception's
    /// text goes to the logs only, every other refusal says what it is.
    /// The front end renders its page from this, [`Self::outcome`] and
    /// [`Self::retry_after`] (the engine renders no page itself).
    pub fn detail(&self) -> String {
        match self {
            ExecuteError::Script { .. } => "the worker script failed".to_owned(),
            ExecuteError::Exception { .. } => "the worker threw an exception".to_owned(),
            other => other.to_string(),
        }
    }
}

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the runtime's JavaScript failed while building the snapshot: {message}")]
    Snapshot { message: String },
    #[error("could not spawn engine thread {thread}")]
    SpawnThread {
        thread: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("engine thread {thread} failed to start")]
    ThreadStart { thread: usize },
    #[error("invalid engine configuration: {field} must be at least 1")]
    InvalidConfig { field: &'static str },
    #[error("engine thread {thread} does not exist or has stopped")]
    NoSuchThread { thread: usize },
    #[error("outbound TLS: {0}")]
    Tls(#[from] isolane_egress::TlsConfigError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_contract() {
        assert_eq!(ExecuteError::CpuLimit { limit_ms: 1 }.status(), 503);
        assert_eq!(ExecuteError::WallTimeout { limit_ms: 1 }.status(), 504);
        assert_eq!(ExecuteError::MemoryLimit { limit_mib: 1 }.status(), 503);
        let overloaded = ExecuteError::Overloaded { thread: 0 };
        assert_eq!(overloaded.status(), 503);
        assert_eq!(overloaded.retry_after(), Some(1));
        assert_eq!(overloaded.reason(), "overloaded");
        assert_eq!(
            ExecuteError::UnknownThread {
                thread: 9,
                threads: 2
            }
            .status(),
            502
        );
        assert_eq!(ExecuteError::Canceled { reason: "x" }.status(), 502);
        let script = ExecuteError::Script {
            message: "x".into(),
        };
        assert_eq!(
            (script.status().as_u16(), script.reason()),
            (500, "exception")
        );
        let too_large = ExecuteError::BodyTooLarge { limit: 10 };
        assert_eq!(
            (too_large.status().as_u16(), too_large.reason()),
            (413, "body_too_large")
        );
        let sockets = ExecuteError::ClientWebSockets { limit: 16 };
        assert_eq!(
            (
                sockets.status().as_u16(),
                sockets.reason(),
                sockets.retry_after()
            ),
            (429, "client_websockets", Some(1))
        );
    }

    #[test]
    fn the_detail_never_carries_the_worker_s_text() {
        let threw = ExecuteError::Exception {
            message: "TypeError: secret".into(),
        };
        assert_eq!(threw.detail(), "the worker threw an exception");
        let script = ExecuteError::Script {
            message: "SyntaxError: secret".into(),
        };
        assert_eq!(script.detail(), "the worker script failed");
        let cpu = ExecuteError::CpuLimit { limit_ms: 50 };
        assert_eq!(cpu.detail(), "CPU time limit of 50 ms exceeded");
    }
}
