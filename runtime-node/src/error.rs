//! Why the node refused or failed a call, and the one mapping to gRPC codes.
//!
//! Only failures *before* the worker runs become a gRPC status; a worker that
//! ran and hit a limit or threw is an OK stream whose response head carries
//! the outcome and status (see `service.rs`). The mapping:
//!
//! | error | code | the router |
//! | --- | --- | --- |
//! | [`Error::Draining`] | `UNAVAILABLE` | retries on the next node |
//! | [`Error::UnknownWorker`], [`Error::UnknownRevision`] | `NOT_FOUND` | 404 |
//! | [`Error::Overloaded`] (node or engine) | `RESOURCE_EXHAUSTED` | 503 + Retry-After |
//! | [`Error::InvalidThread`], [`Error::Protocol`], [`Error::InvalidRequest`] | `INVALID_ARGUMENT` | 502 |
//! | [`Error::Engine`] | `INTERNAL` | 502 |
//! | [`Error::NotObjectOwner`] | `FAILED_PRECONDITION` | (a peer node's object call: sent to the owner) |
//! | [`Error::NotAllowed`] | `PERMISSION_DENIED` | (a node's certificate, not for this call) |

use std::time::Duration;

/// Why a call did not reach (or return from) the worker.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the node is draining and takes no new requests")]
    Draining,
    #[error("the request stream did not start with a head")]
    MissingHead,
    #[error("the request stream broke the protocol: {detail}")]
    Protocol { detail: &'static str },
    #[error("invalid request head: bad {field}")]
    InvalidRequest { field: &'static str },
    #[error("thread {thread} does not exist (the node has {threads})")]
    InvalidThread { thread: u32, threads: usize },
    #[error("thread {thread} is at its limit of requests in flight")]
    Overloaded { thread: usize },
    #[error("no bundle for worker {worker_id} (waited {waited:?})")]
    UnknownWorker { worker_id: String, waited: Duration },
    #[error("no revision {revision} of worker {worker_id} (waited {waited:?})")]
    UnknownRevision {
        worker_id: String,
        revision: String,
        waited: Duration,
    },
    #[error("the engine failed the request: {reason}")]
    Engine { reason: &'static str },
    /// A peer's Durable Object call for an object this node does not own
    /// (by its ring), or while it drains: it did not run.
    #[error("this node is not the owner of Durable Object {class} {id}")]
    NotObjectOwner { class: String, id: String },
    /// A call this peer's certificate may not make.
    #[error("{0}")]
    NotAllowed(&'static str),
}

impl Error {
    /// A bounded label for metrics (`outcome`) and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Draining => "draining",
            Error::MissingHead | Error::Protocol { .. } => "protocol",
            Error::InvalidRequest { .. } => "invalid_request",
            Error::InvalidThread { .. } => "invalid_thread",
            Error::Overloaded { .. } => "overloaded",
            Error::UnknownWorker { .. } => "unknown_worker",
            Error::UnknownRevision { .. } => "revision_unavailable",
            Error::Engine { .. } => "internal",
            Error::NotObjectOwner { .. } => "not_object_owner",
            Error::NotAllowed(_) => "not_allowed",
        }
    }
}

impl From<Error> for tonic::Status {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            // The router treats UNAVAILABLE as "this node cannot take it" and
            // sends the request to the next node on the worker's path.
            Error::Draining => tonic::Status::unavailable(message),
            Error::MissingHead
            | Error::Protocol { .. }
            | Error::InvalidRequest { .. }
            | Error::InvalidThread { .. } => tonic::Status::invalid_argument(message),
            Error::Overloaded { .. } => tonic::Status::resource_exhausted(message),
            Error::UnknownWorker { .. } | Error::UnknownRevision { .. } => {
                tonic::Status::not_found(message)
            }
            Error::Engine { .. } => tonic::Status::internal(message),
            Error::NotObjectOwner { .. } => tonic::Status::failed_precondition(message),
            Error::NotAllowed(_) => tonic::Status::permission_denied(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_chosen_per_variant() {
        let cases = [
            (Error::Draining, tonic::Code::Unavailable),
            (Error::MissingHead, tonic::Code::InvalidArgument),
            (
                Error::InvalidThread {
                    thread: 9,
                    threads: 2,
                },
                tonic::Code::InvalidArgument,
            ),
            (
                Error::Overloaded { thread: 0 },
                tonic::Code::ResourceExhausted,
            ),
            (
                Error::UnknownWorker {
                    worker_id: "a/b".into(),
                    waited: Duration::ZERO,
                },
                tonic::Code::NotFound,
            ),
            (
                Error::UnknownRevision {
                    worker_id: "a/b".into(),
                    revision: "r".into(),
                    waited: Duration::ZERO,
                },
                tonic::Code::NotFound,
            ),
            (Error::Engine { reason: "x" }, tonic::Code::Internal),
            (
                Error::NotObjectOwner {
                    class: "C".into(),
                    id: "0".into(),
                },
                tonic::Code::FailedPrecondition,
            ),
            (Error::NotAllowed("no"), tonic::Code::PermissionDenied),
        ];
        for (error, code) in cases {
            assert_eq!(tonic::Status::from(error).code(), code);
        }
    }
}
