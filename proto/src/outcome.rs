//! The wire's [`Outcome`] and the Worker vocabulary's (`isolane_worker::Outcome`,
//! which holds the one table of statuses, retries and labels): each converts
//! to the other, so router, node and engine agree.

use crate::runtime::v1::Outcome;

impl Outcome {
    /// The outcome in the Worker vocabulary; `None` for `Unspecified` (a
    /// peer that sent none).
    pub fn vocabulary(self) -> Option<isolane_worker::Outcome> {
        use isolane_worker::Outcome as W;
        Some(match self {
            Self::Unspecified => return None,
            Self::Ok => W::Ok,
            Self::Exception => W::Exception,
            Self::CpuLimit => W::CpuLimit,
            Self::MemoryLimit => W::MemoryLimit,
            Self::WallTimeout => W::WallTimeout,
            Self::Overloaded => W::Overloaded,
            Self::Canceled => W::Canceled,
            Self::UnknownWorker => W::UnknownWorker,
            Self::RevisionUnavailable => W::RevisionUnavailable,
            Self::Draining => W::Draining,
            Self::InvalidThread => W::InvalidThread,
            Self::SubrequestLimit => W::SubrequestLimit,
            Self::Internal => W::Internal,
            Self::Quarantined => W::Quarantined,
            Self::BodyTooLarge => W::BodyTooLarge,
            Self::ClientWebsockets => W::ClientWebSockets,
            Self::QuotaExceeded => W::QuotaExceeded,
        })
    }

    /// The HTTP status the router answers with, when the outcome is decided
    /// before the response head reaches the client (`isolane_worker`'s
    /// table; `Unspecified` is the node's fault, 500). `None` for
    /// [`Outcome::Ok`]: the worker's own status stands.
    pub fn http_status(self) -> Option<u16> {
        self.vocabulary().map_or(Some(500), |o| o.http_status())
    }

    /// Whether the request never started on this node, so the router may
    /// send it to the next node in the worker's preference order.
    pub fn retry_elsewhere(self) -> bool {
        self.vocabulary().is_some_and(|o| o.retry_elsewhere())
    }

    /// A short, bounded label for metrics and logs (`outcome="cpu_limit"`).
    pub fn label(self) -> &'static str {
        self.vocabulary().map_or("unspecified", |o| o.label())
    }
}

impl From<isolane_worker::Outcome> for Outcome {
    fn from(outcome: isolane_worker::Outcome) -> Self {
        use isolane_worker::Outcome as W;
        match outcome {
            W::Ok => Self::Ok,
            W::Exception => Self::Exception,
            W::CpuLimit => Self::CpuLimit,
            W::MemoryLimit => Self::MemoryLimit,
            W::WallTimeout => Self::WallTimeout,
            W::Overloaded => Self::Overloaded,
            W::Canceled => Self::Canceled,
            W::UnknownWorker => Self::UnknownWorker,
            W::RevisionUnavailable => Self::RevisionUnavailable,
            W::Draining => Self::Draining,
            W::InvalidThread => Self::InvalidThread,
            W::SubrequestLimit => Self::SubrequestLimit,
            W::Internal => Self::Internal,
            W::Quarantined => Self::Quarantined,
            W::BodyTooLarge => Self::BodyTooLarge,
            W::ClientWebSockets => Self::ClientWebsockets,
            W::QuotaExceeded => Self::QuotaExceeded,
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
    fn every_outcome_crosses_the_wire_and_back() {
        for outcome in isolane_worker::Outcome::ALL {
            assert_eq!(Outcome::from(outcome).vocabulary(), Some(outcome));
        }
        assert_eq!(Outcome::Unspecified.vocabulary(), None);
        assert_eq!(Outcome::Unspecified.http_status(), Some(500));
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
