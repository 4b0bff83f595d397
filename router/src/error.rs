//! Why a request could not be served, and the one place errors become HTTP.
//!
//! Every failure on the request path is an [`Error`]; [`Error::kind`] is its
//! bounded metric label and `From<Error> for Response` is the router's single,
//! deliberate mapping to HTTP:
//!
//! | error | status | extra |
//! | --- | --- | --- |
//! | no route for host and path | 404 | JSON body `{"error", "host", "path"}` |
//! | no live node | 503 | JSON body, `Retry-After: 1` |
//! | the Worker is quarantined (its requests were lost with two nodes) | 503 | `Retry-After` |
//! | the request looped through Workers more than `MAX_HOPS` times | 508 | |
//! | node refused the call: gRPC `RESOURCE_EXHAUSTED` (its thread is full) | 503 | `Retry-After: 1` |
//! | the node's head carries the engine's typed outcome (limits 503/504, an exception 500, a body over the cap 413, a client over its WebSockets 429, a quarantine 503) | [`Outcome::http_status`] | its page: `{"error", "reason"}` and a newline, `x-isolane-detail`, `Retry-After` for a transient outcome |
//! | node unreachable or the call failed (`UNAVAILABLE`, …) | 502 | |
//! | router deadline (`--request-timeout`) passed, or gRPC `DEADLINE_EXCEEDED` | 504 | |
//! | the client's request body failed, or its host is not a URL authority | 400 | |
//!
//! Every error response carries `x-isolane-reason` (a bounded label, the
//! same as `kind`) and a JSON body with a human-readable `error`. This is
//! the one renderer of error pages: the engine and the node hand refusals on
//! typed (outcome, detail, retry-after), in the cluster and in `isolane dev`
//! alike, and the page is made here, once.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use isolane_proto::Outcome;

use crate::answer::{DETAIL_HEADER, REASON_HEADER, ResponseBody, full_body};

pub use crate::answer::BoxError;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No routable Worker claims the host and path.
    #[error("no worker routes this host and path")]
    NoRoute {
        /// The normalised request host.
        host: String,
        /// The request path.
        path: String,
    },

    /// The request asked for a revision (`x-isolane-revision`) the Worker
    /// does not have.
    #[error("worker {worker_id} has no revision or tag {revision:?}")]
    UnknownRevision {
        /// The Worker the request was for.
        worker_id: String,
        /// What the request asked for.
        revision: String,
    },

    /// Membership lists no live, non-draining node.
    #[error("no live runtime node to run worker {worker_id}")]
    NoLiveNode {
        /// The Worker the request was for.
        worker_id: String,
    },

    /// The node's Lease lists no endpoint for the chosen thread.
    #[error("node {node} has no endpoint for thread {thread}")]
    NoEndpoint {
        /// The node.
        node: String,
        /// The thread placement chose.
        thread: u32,
    },

    /// The node's Lease lists an endpoint that is not a URI.
    #[error("node {node} lists an invalid endpoint {endpoint:?}")]
    InvalidEndpoint {
        /// The node.
        node: String,
        /// The endpoint as written in the Lease.
        endpoint: String,
    },

    /// The node could not be reached, or the call broke (gRPC `UNAVAILABLE`).
    #[error("node {node} is unavailable: {message}")]
    NodeUnavailable {
        /// The node.
        node: String,
        /// What tonic reported.
        message: String,
        /// The node refused the connection, or answered that it did not
        /// start the request (draining): the request never ran there (the
        /// node has exited, as a replaced node pod does, or is leaving), so
        /// it cannot have been what the node died of.
        refused: bool,
    },

    /// The node refused the call before running it: its thread is full
    /// (gRPC `RESOURCE_EXHAUSTED`).
    #[error("node {node} refused the request: {detail}")]
    Overloaded {
        /// The node.
        node: String,
        /// The status message.
        detail: String,
    },

    /// The node's head carries the engine's typed outcome instead of the
    /// Worker's response: the Worker threw or hit a limit, or the engine
    /// refused the request (a body over the cap, a quarantine, …).
    #[error("node {node} refused the request: {detail}")]
    Refused {
        /// The node.
        node: String,
        /// Why, as a closed set.
        outcome: Outcome,
        /// The node's human-readable detail (no exception text).
        detail: String,
        /// With a transient outcome: the node's suggested wait.
        retry_after: Option<Duration>,
    },

    /// The call failed with another gRPC status.
    #[error("node {node} failed the call: {code:?}: {message}")]
    Call {
        /// The node.
        node: String,
        /// The gRPC code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },

    /// The node broke the stream protocol (no head first, an unknown frame).
    #[error("node {node} broke the protocol: {detail}")]
    Protocol {
        /// The node.
        node: String,
        /// What was wrong.
        detail: &'static str,
    },

    /// The Worker's requests were lost with more than one node: it is
    /// refused for a while (see `losses.rs`).
    #[error("worker {worker_id} is quarantined: its requests were lost with more than one node")]
    Quarantined {
        /// The Worker.
        worker_id: String,
        /// How long it stays refused.
        retry_after: Duration,
    },

    /// The request looped through Workers too many times.
    #[error("the request looped through Workers {hops} times")]
    Loop {
        /// The hop count it arrived with.
        hops: u32,
    },

    /// The request took longer than the router's deadline.
    #[error("no response within {timeout:?}")]
    Deadline {
        /// The configured deadline.
        timeout: Duration,
    },

    /// The request's host cannot be a URL's authority, so no Worker can be
    /// given its URL.
    #[error("the request's host {host:?} is not a valid URL authority")]
    InvalidHost {
        /// The host as the client sent it.
        host: String,
    },

    /// Reading the client's request body failed.
    #[error("reading the request body failed: {source}")]
    RequestBody {
        /// The body's error.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// A bounded label for metrics, logs and the `x-isolane-reason` header.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoRoute { .. } => "no_route",
            Self::UnknownRevision { .. } => "unknown_revision",
            Self::NoLiveNode { .. } => "no_live_node",
            Self::NoEndpoint { .. } => "no_endpoint",
            Self::InvalidEndpoint { .. } => "invalid_endpoint",
            Self::NodeUnavailable { .. } => "node_unavailable",
            Self::Overloaded { .. } => "overloaded",
            Self::Refused { outcome, .. } => outcome.label(),
            Self::Call { code, .. } => match code {
                tonic::Code::ResourceExhausted => "overloaded",
                tonic::Code::NotFound => "unknown_worker",
                tonic::Code::DeadlineExceeded => "deadline",
                tonic::Code::Cancelled => "canceled",
                _ => "call_failed",
            },
            Self::Protocol { .. } => "protocol",
            Self::Deadline { .. } => "deadline",
            Self::RequestBody { .. } => "request_body",
            Self::InvalidHost { .. } => "invalid_host",
            Self::Quarantined { .. } => "quarantined",
            Self::Loop { .. } => "loop_detected",
        }
    }

    /// The error for a failed gRPC call to `node`.
    pub fn from_status(node: &str, status: &tonic::Status) -> Self {
        let node = node.to_owned();
        let message = status.message().to_owned();
        let refused = isolane_proto::status::connection_refused(status);
        match status.code() {
            // A status the node sent itself (draining) carries no transport
            // error: the node said it never started the request, so the
            // request was not lost with it either.
            tonic::Code::Unavailable => Self::NodeUnavailable {
                node,
                message,
                refused: refused || !connection_broke(status),
            },
            // tonic reports a connection that broke mid-call (the node died or
            // reset it) as UNKNOWN with the transport error as its source; a
            // status the node sent has none. The node is lost, as with UNAVAILABLE.
            tonic::Code::Unknown if connection_broke(status) => Self::NodeUnavailable {
                node,
                message,
                refused,
            },
            tonic::Code::ResourceExhausted => Self::Overloaded {
                node,
                detail: message,
            },
            code => Self::Call {
                node,
                code,
                message,
            },
        }
    }

    /// Whether sending the same request to the next candidate node may succeed:
    /// the node was unreachable, or said the request never started there.
    pub fn retry_elsewhere(&self) -> bool {
        match self {
            Self::NodeUnavailable { .. }
            | Self::NoEndpoint { .. }
            | Self::InvalidEndpoint { .. } => true,
            Self::Refused { outcome, .. } => outcome.retry_elsewhere(),
            _ => false,
        }
    }

    /// Whether the node should be skipped by new requests for a while.
    pub fn ejects_node(&self) -> bool {
        matches!(self, Self::NodeUnavailable { .. })
    }

    /// Whether a request may have been lost with its node (and may be what
    /// killed it): the node became unavailable after the connection was made.
    pub fn lost_with_node(&self) -> bool {
        matches!(self, Self::NodeUnavailable { refused: false, .. })
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NoRoute { .. } | Self::UnknownRevision { .. } => StatusCode::NOT_FOUND,
            Self::NoLiveNode { .. } | Self::Quarantined { .. } | Self::Overloaded { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Loop { .. } => StatusCode::LOOP_DETECTED,
            Self::NoEndpoint { .. }
            | Self::InvalidEndpoint { .. }
            | Self::NodeUnavailable { .. }
            | Self::Protocol { .. } => StatusCode::BAD_GATEWAY,
            Self::Refused { outcome, .. } => outcome
                .http_status()
                // A client never sees 499 (it went away); anything odd is the node's fault.
                .filter(|s| *s != 499)
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY),
            Self::Call { code, .. } => match code {
                tonic::Code::NotFound => StatusCode::NOT_FOUND,
                tonic::Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::BAD_GATEWAY,
            },
            Self::Deadline { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::RequestBody { .. } | Self::InvalidHost { .. } => StatusCode::BAD_REQUEST,
        }
    }

    /// The `Retry-After` value in whole seconds, for transient refusals.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::NoLiveNode { .. } | Self::Overloaded { .. } => Some(1),
            Self::Quarantined { retry_after, .. } => {
                Some(retry_after.as_millis().div_ceil(1000).max(1) as u64)
            }
            Self::Refused {
                outcome,
                retry_after,
                ..
            } if outcome.vocabulary().is_some_and(|o| o.transient()) => {
                Some(retry_after.map_or(1, |d| d.as_millis().div_ceil(1000).max(1) as u64))
            }
            _ => None,
        }
    }

    /// The page's JSON body. A refusal in the node's head says what the
    /// engine said (never an exception's text: [`isolane_worker::Outcome::page_message`]),
    /// followed by a newline; the router's own errors say what failed.
    fn body(&self) -> Bytes {
        let json = match self {
            Self::NoRoute { host, path } => serde_json::json!({
                "error": self.to_string(),
                "reason": self.kind(),
                "host": host,
                "path": path,
            }),
            Self::NoLiveNode { worker_id } => serde_json::json!({
                "error": "no live runtime node",
                "reason": self.kind(),
                "worker": worker_id,
            }),
            Self::Refused {
                outcome, detail, ..
            } => {
                let message = match outcome.vocabulary() {
                    Some(outcome) => outcome.page_message(detail),
                    None => detail,
                };
                let json = serde_json::json!({ "error": message, "reason": self.kind() });
                return Bytes::from(format!("{json}\n"));
            }
            _ => serde_json::json!({
                "error": self.to_string(),
                "reason": self.kind(),
            }),
        };
        Bytes::from(json.to_string())
    }
}

impl From<Error> for Response<ResponseBody> {
    fn from(error: Error) -> Self {
        let mut response = Response::new(full_body(error.body()));
        *response.status_mut() = error.status();
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(REASON_HEADER, HeaderValue::from_static(error.kind()));
        // The detail of what the Worker did (a limit, an exception, a
        // quarantine); a refusal of the client's own request (a body over
        // the cap, too many WebSockets) says it in its body only.
        if let Error::Refused {
            outcome, detail, ..
        } = &error
            && !matches!(outcome, Outcome::BodyTooLarge | Outcome::ClientWebsockets)
            && let Some(detail) = header_text(detail)
        {
            headers.insert(DETAIL_HEADER, detail);
        }
        if let Some(seconds) = error.retry_after() {
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// `text` as a header value: printable ASCII, at most 256 bytes; `None` if empty.
fn header_text(text: &str) -> Option<HeaderValue> {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .take(256)
        .collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() {
        return None;
    }
    HeaderValue::from_str(cleaned).ok()
}

/// Whether tonic made `status` from a failed connection (an I/O or hyper
/// error in its source chain) rather than receiving it from the node.
fn connection_broke(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<hyper::Error>() || error.is::<std::io::Error>() {
            return true;
        }
        source = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_that_says_it_is_draining_lost_nothing() {
        let draining = Error::from_status("n", &tonic::Status::unavailable("the node is draining"));
        assert!(draining.retry_elsewhere());
        assert!(draining.ejects_node());
        assert!(!draining.lost_with_node());
        // A call whose connection broke under it was lost with the node.
        let broke = tonic::Status::from_error(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(Error::from_status("n", &broke).lost_with_node());
    }

    #[test]
    fn statuses_and_reasons() {
        let refused = |outcome| Error::Refused {
            node: "n".into(),
            outcome,
            detail: String::new(),
            retry_after: None,
        };
        let cases = [
            (refused(Outcome::UnknownWorker), 404, "unknown_worker"),
            (refused(Outcome::CpuLimit), 503, "cpu_limit"),
            (refused(Outcome::MemoryLimit), 503, "memory_limit"),
            (refused(Outcome::WallTimeout), 504, "wall_timeout"),
            (refused(Outcome::Overloaded), 503, "overloaded"),
            (refused(Outcome::Canceled), 502, "canceled"),
            (
                Error::from_status("n", &tonic::Status::resource_exhausted("full")),
                503,
                "overloaded",
            ),
            (
                Error::from_status("n", &tonic::Status::unavailable("refused")),
                502,
                "node_unavailable",
            ),
            (
                Error::from_status(
                    "n",
                    &tonic::Status::from_error(Box::new(std::io::Error::from(
                        std::io::ErrorKind::ConnectionReset,
                    ))),
                ),
                502,
                "node_unavailable",
            ),
            (
                Error::from_status("n", &tonic::Status::unknown("the node said so")),
                502,
                "call_failed",
            ),
            (
                Error::from_status("n", &tonic::Status::not_found("who")),
                404,
                "unknown_worker",
            ),
            (
                Error::Deadline {
                    timeout: Duration::from_secs(1),
                },
                504,
                "deadline",
            ),
        ];
        for (error, status, kind) in cases {
            assert_eq!(error.status().as_u16(), status, "{error}");
            assert_eq!(error.kind(), kind, "{error}");
        }
    }

    /// The page of a refusal in a node's head, as `isolane dev` and the
    /// cluster both answer it (the engine used to render it; the bytes are
    /// the same).
    #[test]
    fn a_refusal_renders_the_engine_s_page() {
        let page = |outcome, detail: &str, retry_after_ms: Option<u64>| {
            let error = Error::Refused {
                node: "n".into(),
                outcome,
                detail: detail.into(),
                retry_after: retry_after_ms.map(Duration::from_millis),
            };
            let body = error.body();
            let response = Response::from(error);
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
            };
            (
                response.status().as_u16(),
                header("content-type"),
                header("x-isolane-reason"),
                header("x-isolane-detail"),
                header("retry-after"),
                String::from_utf8(body.to_vec()).unwrap(),
            )
        };
        let json = Some("application/json".to_owned());
        assert_eq!(
            page(Outcome::CpuLimit, "CPU time limit of 50 ms exceeded", None),
            (
                503,
                json.clone(),
                Some("cpu_limit".into()),
                Some("CPU time limit of 50 ms exceeded".into()),
                None,
                "{\"error\":\"CPU time limit of 50 ms exceeded\",\"reason\":\"cpu_limit\"}\n"
                    .into()
            )
        );
        // An exception's page never carries its detail, whatever the node sent.
        let (status, _, _, detail, _, body) =
            page(Outcome::Exception, "the worker script failed", None);
        assert_eq!(status, 500);
        assert_eq!(detail.as_deref(), Some("the worker script failed"));
        assert_eq!(
            body,
            "{\"error\":\"the worker threw an exception\",\"reason\":\"exception\"}\n"
        );
        let (status, _, reason, detail, retry_after, _) =
            page(Outcome::Quarantined, "refused for 3 s", Some(2500));
        assert_eq!(status, 503);
        assert_eq!(reason.as_deref(), Some("quarantined"));
        assert_eq!(detail.as_deref(), Some("refused for 3 s"));
        assert_eq!(retry_after.as_deref(), Some("3"));
        // A refusal of the client's own request says it in its body only.
        let (status, _, reason, detail, retry_after, body) = page(
            Outcome::ClientWebsockets,
            "this client already has 16 WebSockets open",
            Some(1000),
        );
        assert_eq!(
            (status, detail, retry_after.as_deref()),
            (429, None, Some("1"))
        );
        assert_eq!(reason.as_deref(), Some("client_websockets"));
        assert!(body.contains("16 WebSockets open"), "{body}");
        let (status, _, _, detail, retry_after, _) = page(
            Outcome::BodyTooLarge,
            "the request body is larger than 10 bytes",
            None,
        );
        assert_eq!((status, detail, retry_after), (413, None, None));
    }

    #[test]
    fn header_text_is_sanitised() {
        assert_eq!(header_text("  "), None);
        assert_eq!(header_text("cpu 50ms\n").unwrap(), "cpu 50ms?");
    }

    #[test]
    fn retry_after_rounds_up_to_a_second() {
        let overloaded = |ms: Option<u64>| Error::Refused {
            node: "n".into(),
            outcome: Outcome::Overloaded,
            detail: String::new(),
            retry_after: ms.map(Duration::from_millis),
        };
        assert_eq!(overloaded(None).retry_after(), Some(1));
        assert_eq!(overloaded(Some(10)).retry_after(), Some(1));
        assert_eq!(overloaded(Some(2500)).retry_after(), Some(3));
        assert_eq!(
            Error::from_status("n", &tonic::Status::resource_exhausted("")).retry_after(),
            Some(1)
        );
    }
}
