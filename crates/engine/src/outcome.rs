//! How a request ended, and the errors `execute` returns.
//!
//! One enum feeds logs, metrics and HTTP status alike: [`Outcome`], the
//! Worker vocabulary's (`isolane-worker`), shared with the node, the wire and
//! the router. Every [`ExecuteError`] maps to exactly one outcome, and so to
//! one status and one reason.

use http::StatusCode;

use crate::body::Body;

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
        error_response(self.status(), &message, self.reason(), self.retry_after())
    }
}

/// A response the engine answers itself (not the worker): a small JSON
/// body with the message and reason, `x-isolane-reason`, and `Retry-After`
/// when it is worth retrying.
pub(crate) fn error_response(
    status: StatusCode,
    message: &str,
    reason: &'static str,
    retry_after: Option<u32>,
) -> http::Response<Body> {
    let body = format!(
        "{}\n",
        serde_json::json!({ "error": message, "reason": reason })
    );
    let mut response = http::Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(REASON_HEADER, http::HeaderValue::from_static(reason));
    if let Some(secs) = retry_after {
        headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    response
}

/// The header naming why the engine (not the worker) answered.
pub use isolane_worker::headers::REASON as REASON_HEADER;

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
            serde_json::json!({ "error": error.to_string(), "reason": "invalid_thread" })
        );
    }
}
