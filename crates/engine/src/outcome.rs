//! How a request ended, and the errors `execute` returns.
//!
//! One enum feeds logs, metrics and HTTP status alike: [`Outcome`]. Every
//! [`ExecuteError`] maps to exactly one outcome, one status and one reason.

use http::StatusCode;

use crate::body::Body;

/// How a request ended. Bounded: safe as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The handler produced a response.
    Ok,
    /// The handler threw, rejected, or returned something that is not a Response.
    Exception,
    /// The worker script failed to compile or to evaluate, or has no handler.
    ScriptError,
    /// The request used more CPU time than `limits.cpu_ms`.
    CpuLimit,
    /// The isolate reached its heap limit (`limits.memory_mib`).
    MemoryLimit,
    /// The request was not complete within `limits.wall_ms`.
    WallTimeout,
    /// The thread's queue was full; retry later.
    Overloaded,
    /// The engine shut down, or the isolate was torn down under the request.
    Canceled,
    /// The caller named a thread the engine does not have.
    UnknownThread,
    /// The worker keeps hitting its limits and is refused for a while.
    Quarantined,
}

impl Outcome {
    pub const ALL: [Outcome; 10] = [
        Outcome::Ok,
        Outcome::Exception,
        Outcome::ScriptError,
        Outcome::CpuLimit,
        Outcome::MemoryLimit,
        Outcome::WallTimeout,
        Outcome::Overloaded,
        Outcome::Canceled,
        Outcome::UnknownThread,
        Outcome::Quarantined,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Exception => "exception",
            Outcome::ScriptError => "script_error",
            Outcome::CpuLimit => "cpu_limit",
            Outcome::MemoryLimit => "memory_limit",
            Outcome::WallTimeout => "wall_timeout",
            Outcome::Overloaded => "overloaded",
            Outcome::Canceled => "canceled",
            Outcome::UnknownThread => "unknown_thread",
            Outcome::Quarantined => "quarantined",
        }
    }
}

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
}

impl ExecuteError {
    pub fn outcome(&self) -> Outcome {
        match self {
            ExecuteError::UnknownThread { .. } => Outcome::UnknownThread,
            ExecuteError::Overloaded { .. } => Outcome::Overloaded,
            ExecuteError::Canceled { .. } => Outcome::Canceled,
            ExecuteError::Script { .. } => Outcome::ScriptError,
            ExecuteError::Exception { .. } => Outcome::Exception,
            ExecuteError::CpuLimit { .. } => Outcome::CpuLimit,
            ExecuteError::MemoryLimit { .. } => Outcome::MemoryLimit,
            ExecuteError::WallTimeout { .. } => Outcome::WallTimeout,
            ExecuteError::Quarantined { .. } => Outcome::Quarantined,
        }
    }

    /// The HTTP status a front end answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ExecuteError::UnknownThread { .. }
            | ExecuteError::Script { .. }
            | ExecuteError::Exception { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ExecuteError::Overloaded { .. }
            | ExecuteError::Canceled { .. }
            | ExecuteError::CpuLimit { .. }
            | ExecuteError::MemoryLimit { .. }
            | ExecuteError::Quarantined { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ExecuteError::WallTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The value of the `x-isolane-reason` header: the outcome's name.
    pub fn reason(&self) -> &'static str {
        self.outcome().as_str()
    }

    /// Seconds for a `Retry-After` header, for errors worth retrying.
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            ExecuteError::Overloaded { .. } => Some(1),
            ExecuteError::Quarantined { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// A small JSON error response carrying status, reason and Retry-After.
    /// Script errors and exceptions say only that the worker failed: their
    /// messages go to the logs, not to the client.
    pub fn to_response(&self) -> http::Response<Body> {
        let message = match self {
            ExecuteError::Script { .. } | ExecuteError::Exception { .. } => {
                "the worker threw an exception".to_owned()
            }
            other => other.to_string(),
        };
        let body = format!(
            "{}\n",
            serde_json::json!({ "error": message, "reason": self.reason() })
        );
        let mut response = http::Response::new(Body::from(body));
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        headers.insert(REASON_HEADER, http::HeaderValue::from_static(self.reason()));
        if let Some(secs) = self.retry_after() {
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        response
    }
}

/// The header naming why the engine (not the worker) answered.
pub const REASON_HEADER: &str = "x-isolane-reason";

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
    Tls(#[from] crate::egress::TlsConfigError),
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
        let response = overloaded.to_response();
        assert_eq!(response.headers()[REASON_HEADER], "overloaded");
        assert_eq!(response.headers()["retry-after"], "1");
        assert_eq!(
            ExecuteError::UnknownThread {
                thread: 9,
                threads: 2
            }
            .status(),
            500
        );
    }

    #[test]
    fn the_error_body_is_json_with_the_message_and_reason() {
        let error = ExecuteError::UnknownThread {
            thread: 9,
            threads: 2,
        };
        let body = error.to_response().into_body();
        let bytes = futures::executor::block_on(http_body_util::BodyExt::collect(body))
            .unwrap()
            .to_bytes();
        assert!(bytes.ends_with(b"}\n"), "{bytes:?}");
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "error": error.to_string(), "reason": "unknown_thread" })
        );
    }
}
