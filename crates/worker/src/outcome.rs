//! How a request ended, and what each ending means to an HTTP client, a
//! retry and a metric: one table for the engine, the node, the wire and the
//! router (the wire's `Outcome` converts to and from this one).

/// How a request ended. Bounded: safe as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The Worker produced a response (whatever its status).
    Ok,
    /// The Worker threw, its promise rejected, or its script failed to
    /// compile or has no handler.
    Exception,
    /// The request used more CPU time than `limits.cpuMs`.
    CpuLimit,
    /// The isolate reached `limits.memoryMiB`.
    MemoryLimit,
    /// The request was not complete within `limits.wallMs` or its deadline.
    WallTimeout,
    /// The thread's queue was full: shed before running anything.
    Overloaded,
    /// The caller went away, or the engine stopped under the request.
    Canceled,
    /// The node has no bundle for this Worker.
    UnknownWorker,
    /// The node knows the Worker but not this revision (yet).
    RevisionUnavailable,
    /// The node is shutting down and takes no new requests.
    Draining,
    /// The request asked for a thread the node does not have.
    InvalidThread,
    /// The request made more subrequests than `limits.subrequests`.
    SubrequestLimit,
    /// A bug or resource failure in the node itself.
    Internal,
    /// The Worker keeps exceeding its limits and is refused for a while.
    Quarantined,
    /// The client's request body is over the node's cap
    /// (`--max-request-body-mib`): declared so, or broke there while read.
    BodyTooLarge,
    /// The client already holds its share of the Worker's WebSockets.
    ClientWebSockets,
    /// The Worker's namespace is over its CPU quota on the node
    /// (a TenantPolicy's `quotas.cpuMsPerSecond`).
    QuotaExceeded,
}

impl Outcome {
    /// Every outcome, in a fixed order (metric series are made per outcome).
    pub const ALL: [Outcome; 17] = [
        Outcome::Ok,
        Outcome::Exception,
        Outcome::CpuLimit,
        Outcome::MemoryLimit,
        Outcome::WallTimeout,
        Outcome::Overloaded,
        Outcome::Canceled,
        Outcome::UnknownWorker,
        Outcome::RevisionUnavailable,
        Outcome::Draining,
        Outcome::InvalidThread,
        Outcome::SubrequestLimit,
        Outcome::Internal,
        Outcome::Quarantined,
        Outcome::BodyTooLarge,
        Outcome::ClientWebSockets,
        Outcome::QuotaExceeded,
    ];

    /// The metric label and `x-isolane-reason` value (`cpu_limit`).
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Exception => "exception",
            Outcome::CpuLimit => "cpu_limit",
            Outcome::MemoryLimit => "memory_limit",
            Outcome::WallTimeout => "wall_timeout",
            Outcome::Overloaded => "overloaded",
            Outcome::Canceled => "canceled",
            Outcome::UnknownWorker => "unknown_worker",
            Outcome::RevisionUnavailable => "revision_unavailable",
            Outcome::Draining => "draining",
            Outcome::InvalidThread => "invalid_thread",
            Outcome::SubrequestLimit => "subrequest_limit",
            Outcome::Internal => "internal",
            Outcome::Quarantined => "quarantined",
            Outcome::BodyTooLarge => "body_too_large",
            Outcome::ClientWebSockets => "client_websockets",
            Outcome::QuotaExceeded => "quota_exceeded",
        }
    }

    /// The HTTP status a client gets when the request ended this way before
    /// its response head was sent; `None` for [`Outcome::Ok`] (the Worker's
    /// own status stands). A canceled request has no client left to answer:
    /// a front end that still must answer (the router, when a node reports
    /// it) answers 502.
    pub fn http_status(self) -> Option<u16> {
        Some(match self {
            Outcome::Ok => return None,
            Outcome::UnknownWorker => 404,
            Outcome::Exception | Outcome::Internal => 500,
            Outcome::SubrequestLimit | Outcome::InvalidThread | Outcome::Canceled => 502,
            Outcome::CpuLimit
            | Outcome::MemoryLimit
            | Outcome::Overloaded
            | Outcome::Draining
            | Outcome::Quarantined
            | Outcome::RevisionUnavailable => 503,
            Outcome::WallTimeout => 504,
            Outcome::BodyTooLarge => 413,
            Outcome::ClientWebSockets | Outcome::QuotaExceeded => 429,
        })
    }

    /// Whether the request never started where it was sent, so it may go to
    /// the next node in the Worker's preference order.
    pub fn retry_elsewhere(self) -> bool {
        matches!(
            self,
            Outcome::Draining | Outcome::RevisionUnavailable | Outcome::InvalidThread
        )
    }

    /// Whether a client may retry after a while (`Retry-After`).
    pub fn transient(self) -> bool {
        matches!(
            self,
            Outcome::Overloaded
                | Outcome::Draining
                | Outcome::RevisionUnavailable
                | Outcome::Quarantined
                | Outcome::ClientWebSockets
                | Outcome::QuotaExceeded
        )
    }

    /// The message of the error page a front end answers with, from the
    /// node's `detail`: an exception's page never carries its detail (the
    /// Worker's own text goes to its logs, never to its client).
    pub fn page_message(self, detail: &str) -> &str {
        match self {
            Outcome::Exception => "the worker threw an exception",
            _ => detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_distinct_and_snake_case() {
        let labels: std::collections::HashSet<_> = Outcome::ALL.iter().map(|o| o.label()).collect();
        assert_eq!(labels.len(), Outcome::ALL.len());
        assert!(
            labels
                .iter()
                .all(|l| l.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        );
    }

    /// The contract of docs/router.md: limits 503 (wall 504), an unknown
    /// Worker 404, a thrown exception 500, never 499 to a client.
    #[test]
    fn statuses_follow_the_contract() {
        let status = |o: Outcome| o.http_status();
        assert_eq!(status(Outcome::Ok), None);
        assert_eq!(status(Outcome::CpuLimit), Some(503));
        assert_eq!(status(Outcome::MemoryLimit), Some(503));
        assert_eq!(status(Outcome::WallTimeout), Some(504));
        assert_eq!(status(Outcome::UnknownWorker), Some(404));
        assert_eq!(status(Outcome::Exception), Some(500));
        assert_eq!(status(Outcome::Canceled), Some(502));
        assert_eq!(status(Outcome::BodyTooLarge), Some(413));
        assert_eq!(status(Outcome::ClientWebSockets), Some(429));
        assert!(Outcome::ClientWebSockets.transient());
        assert_eq!(status(Outcome::QuotaExceeded), Some(429));
        assert!(Outcome::QuotaExceeded.transient());
        assert!(!Outcome::QuotaExceeded.retry_elsewhere());
        assert_eq!(
            Outcome::Exception.page_message("TypeError: secret"),
            "the worker threw an exception"
        );
        assert_eq!(Outcome::CpuLimit.page_message("over"), "over");
        assert!(Outcome::ALL.iter().all(|o| status(*o) != Some(499)));
        assert!(Outcome::Draining.retry_elsewhere());
        assert!(!Outcome::Exception.retry_elsewhere());
    }
}
