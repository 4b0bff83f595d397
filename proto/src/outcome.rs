//! What each [`Outcome`] means to HTTP clients, retries and metrics, in one
//! place so router and node agree.

use crate::runtime::v1::Outcome;

impl Outcome {
    /// The HTTP status the router answers with, when the outcome is decided
    /// before the response head reaches the client. `None` for
    /// [`Outcome::Ok`]: the worker's own status stands.
    pub fn http_status(self) -> Option<u16> {
        Some(match self {
            Self::Ok => return None,
            Self::UnknownWorker => 404,
            Self::Exception | Self::Internal | Self::Unspecified => 500,
            Self::SubrequestLimit | Self::InvalidThread => 502,
            Self::CpuLimit
            | Self::MemoryLimit
            | Self::Overloaded
            | Self::Draining
            | Self::Quarantined
            | Self::RevisionUnavailable => 503,
            Self::WallTimeout => 504,
            // nginx's "client closed request": logged, never seen by a client.
            Self::Canceled => 499,
        })
    }

    /// Whether the request never started on this node, so the router may
    /// send it to the next node in the worker's preference order.
    pub fn retry_elsewhere(self) -> bool {
        matches!(
            self,
            Self::Draining | Self::RevisionUnavailable | Self::InvalidThread
        )
    }

    /// A short, bounded label for metrics and logs (`outcome="cpu_limit"`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::Ok => "ok",
            Self::Exception => "exception",
            Self::CpuLimit => "cpu_limit",
            Self::MemoryLimit => "memory_limit",
            Self::WallTimeout => "wall_timeout",
            Self::Overloaded => "overloaded",
            Self::Canceled => "canceled",
            Self::UnknownWorker => "unknown_worker",
            Self::RevisionUnavailable => "revision_unavailable",
            Self::Draining => "draining",
            Self::InvalidThread => "invalid_thread",
            Self::SubrequestLimit => "subrequest_limit",
            Self::Internal => "internal",
            Self::Quarantined => "quarantined",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_proto_names_lower_cased() {
        for value in 0..64 {
            let Ok(outcome) = Outcome::try_from(value) else {
                continue;
            };
            let name = outcome.as_str_name().trim_start_matches("OUTCOME_");
            assert_eq!(outcome.label(), name.to_ascii_lowercase());
        }
    }

    #[test]
    fn statuses_follow_the_design() {
        assert_eq!(Outcome::Ok.http_status(), None);
        assert_eq!(Outcome::UnknownWorker.http_status(), Some(404));
        assert_eq!(Outcome::CpuLimit.http_status(), Some(503));
        assert_eq!(Outcome::MemoryLimit.http_status(), Some(503));
        assert_eq!(Outcome::Overloaded.http_status(), Some(503));
        assert_eq!(Outcome::WallTimeout.http_status(), Some(504));
        assert!(Outcome::Draining.retry_elsewhere());
        assert!(!Outcome::Exception.retry_elsewhere());
    }
}
