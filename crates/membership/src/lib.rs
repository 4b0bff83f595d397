//! Runtime node membership, as recorded in `coordination.k8s.io/v1` Leases.
//!
//! Each runtime node holds one Lease in its namespace, labelled
//! [`NODE_LABEL`]`=true`, renewed well inside its duration, with annotations for its
//! gRPC endpoint(s) ([`ENDPOINT_ANNOTATION`]), its pinned thread count
//! ([`THREADS_ANNOTATION`]), whether it is draining ([`DRAINING_ANNOTATION`])
//! and, after a crash of its previous process, which Workers were in a turn
//! then ([`CRASH_ANNOTATION`], a [`CrashRecord`]).
//! An expired Lease is a dead node. The node writes its Lease with [`node_lease`];
//! the operator (for `status.placement`) and the router (for routing) read them
//! with [`NodeMember::from_lease`] and [`live_members`], through the one Lease
//! watch both use ([`watch`]: a kube-runtime reflector, re-evaluated when the
//! next Lease would lapse). Only [`watch`] does I/O.
#![forbid(unsafe_code)]

pub mod crash;
pub mod watch;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

pub use crash::{CRASH_ANNOTATION, CrashRecord, with_crash};
pub use watch::{Members, MembershipObserver};

/// Label on every runtime node Lease; its value is `"true"`.
pub const NODE_LABEL: &str = "isolane.dev/runtime-node";
/// Comma-separated gRPC endpoints (`http://host:port`). One endpoint serves every
/// thread; as many endpoints as threads means endpoint `i` is thread `i`'s own listener.
pub const ENDPOINT_ANNOTATION: &str = "isolane.dev/endpoint";
/// Number of pinned threads on the node.
pub const THREADS_ANNOTATION: &str = "isolane.dev/threads";
/// `"true"` while the node finishes in-flight requests before leaving.
pub const DRAINING_ANNOTATION: &str = "isolane.dev/draining";

/// Why a Lease does not describe a usable node.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum MembershipError {
    /// The Lease has no name.
    #[error("lease has no name")]
    MissingName,
    /// A required annotation is absent.
    #[error("lease {lease} has no {annotation} annotation")]
    MissingAnnotation {
        /// Lease name.
        lease: String,
        /// The annotation that is missing.
        annotation: &'static str,
    },
    /// The thread count is not a positive integer.
    #[error("lease {lease} has an invalid thread count {value:?}")]
    InvalidThreads {
        /// Lease name.
        lease: String,
        /// The annotation's value.
        value: String,
    },
    /// Endpoint count is neither 1 nor the thread count.
    #[error(
        "lease {lease} lists {endpoints} endpoints for {threads} threads (want 1 or {threads})"
    )]
    EndpointCount {
        /// Lease name.
        lease: String,
        /// How many endpoints it lists.
        endpoints: usize,
        /// How many threads it declares.
        threads: u32,
    },
}

impl MembershipError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingName => "missing_name",
            Self::MissingAnnotation { .. } => "missing_annotation",
            Self::InvalidThreads { .. } => "invalid_threads",
            Self::EndpointCount { .. } => "endpoint_count",
        }
    }
}

/// One runtime node as its Lease describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMember {
    /// The node's name (the Lease's name).
    pub name: String,
    /// gRPC endpoints: one for all threads, or one per thread.
    pub endpoints: Vec<String>,
    /// Pinned threads on the node.
    pub threads: u32,
    /// The node is finishing in-flight work and takes no new workers.
    pub draining: bool,
    /// When the Lease lapses unless renewed; `None` when it was never renewed.
    pub expires_at: Option<Timestamp>,
    /// The node's previous process crashed: who was in a turn then. A
    /// record that does not parse is left out (the node stays usable).
    pub crash: Option<CrashRecord>,
}

/// The threads annotation: a positive count.
fn parse_threads(lease: &str, text: &str) -> Result<u32, MembershipError> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|t| *t > 0)
        .ok_or_else(|| MembershipError::InvalidThreads {
            lease: lease.to_owned(),
            value: text.to_owned(),
        })
}

/// The endpoints annotation: a comma-separated list, blanks dropped.
fn parse_endpoints(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

/// When the Lease runs out: its last renewal (or acquisition) plus its
/// duration.
fn expiry(lease: &Lease) -> Option<Timestamp> {
    let spec = lease.spec.as_ref()?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let duration = spec.lease_duration_seconds.unwrap_or(0);
    renewed
        .checked_add(SignedDuration::from_secs(i64::from(duration)))
        .ok()
}

impl NodeMember {
    /// Reads a node Lease.
    pub fn from_lease(lease: &Lease) -> Result<Self, MembershipError> {
        let name = lease
            .metadata
            .name
            .clone()
            .ok_or(MembershipError::MissingName)?;
        let annotation = |key: &'static str| {
            let value = lease.metadata.annotations.as_ref().and_then(|a| a.get(key));
            value
                .map(String::as_str)
                .ok_or_else(|| MembershipError::MissingAnnotation {
                    lease: name.clone(),
                    annotation: key,
                })
        };
        let threads = parse_threads(&name, annotation(THREADS_ANNOTATION)?)?;
        let endpoints = parse_endpoints(annotation(ENDPOINT_ANNOTATION)?);
        if endpoints.len() != 1 && endpoints.len() != threads as usize {
            return Err(MembershipError::EndpointCount {
                lease: name,
                endpoints: endpoints.len(),
                threads,
            });
        }
        let draining = annotation(DRAINING_ANNOTATION).ok() == Some("true");
        let crash = annotation(CRASH_ANNOTATION)
            .ok()
            .and_then(CrashRecord::decode);
        Ok(Self {
            name,
            endpoints,
            threads,
            draining,
            expires_at: expiry(lease),
            crash,
        })
    }

    /// Whether the Lease is still valid at `now`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|t| t > now)
    }

    /// The endpoint that reaches `thread` (its own listener when there is one per thread).
    pub fn endpoint_for(&self, thread: u32) -> Option<&str> {
        match self.endpoints.as_slice() {
            [only] => Some(only.as_str()),
            many => many.get(thread as usize).map(String::as_str),
        }
    }
}

/// The live, non-draining nodes among `leases`, sorted by name. Leases that do not
/// parse are returned separately so callers can log them.
pub fn live_members<'a>(
    leases: impl IntoIterator<Item = &'a Lease>,
    now: Timestamp,
) -> (Vec<NodeMember>, Vec<MembershipError>) {
    let mut members = Vec::new();
    let mut errors = Vec::new();
    for lease in leases {
        match NodeMember::from_lease(lease) {
            Ok(m) if m.is_live(now) && !m.draining => members.push(m),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    (members, errors)
}

/// The Lease a node writes for itself, renewed at `now`.
pub fn node_lease(
    name: &str,
    namespace: &str,
    endpoints: &[String],
    threads: u32,
    draining: bool,
    duration: Duration,
    now: Timestamp,
) -> Lease {
    let annotations = [
        (ENDPOINT_ANNOTATION.to_owned(), endpoints.join(",")),
        (THREADS_ANNOTATION.to_owned(), threads.to_string()),
        (DRAINING_ANNOTATION.to_owned(), draining.to_string()),
    ]
    .into_iter()
    .collect();
    Lease {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(
                [(NODE_LABEL.to_owned(), "true".to_owned())]
                    .into_iter()
                    .collect(),
            ),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.to_owned()),
            lease_duration_seconds: Some(
                i32::try_from(duration.as_secs()).unwrap_or(i32::MAX).max(1),
            ),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    #[test]
    fn a_written_lease_reads_back() {
        let endpoints = vec![
            "http://127.0.0.1:1".to_owned(),
            "http://127.0.0.1:2".to_owned(),
        ];
        let lease = node_lease(
            "n1",
            "ns",
            &endpoints,
            2,
            false,
            Duration::from_secs(10),
            now(),
        );
        let m = NodeMember::from_lease(&lease).unwrap();
        assert_eq!(m.name, "n1");
        assert_eq!(m.threads, 2);
        assert_eq!(m.endpoint_for(1), Some("http://127.0.0.1:2"));
        assert_eq!(m.endpoint_for(2), None);
        assert!(m.is_live(now()));
        assert!(!m.is_live(now().checked_add(SignedDuration::from_secs(10)).unwrap()));
    }

    #[test]
    fn one_endpoint_serves_every_thread() {
        let lease = node_lease(
            "n",
            "ns",
            &["http://a:1".to_owned()],
            4,
            false,
            Duration::from_secs(10),
            now(),
        );
        let m = NodeMember::from_lease(&lease).unwrap();
        assert_eq!(m.endpoint_for(3), Some("http://a:1"));
    }

    #[test]
    fn expired_draining_and_broken_leases_are_not_live() {
        let live = node_lease(
            "b",
            "ns",
            &["e".to_owned()],
            1,
            false,
            Duration::from_secs(10),
            now(),
        );
        let draining = node_lease(
            "a",
            "ns",
            &["e".to_owned()],
            1,
            true,
            Duration::from_secs(10),
            now(),
        );
        let old = now().checked_sub(SignedDuration::from_secs(60)).unwrap();
        let expired = node_lease(
            "c",
            "ns",
            &["e".to_owned()],
            1,
            false,
            Duration::from_secs(10),
            old,
        );
        let mut broken = live.clone();
        broken.metadata.name = Some("d".to_owned());
        broken
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(THREADS_ANNOTATION.to_owned(), "0".to_owned());
        let mut mismatched = live.clone();
        mismatched
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(ENDPOINT_ANNOTATION.to_owned(), "a,b".to_owned());
        let (members, errors) =
            live_members([&live, &draining, &expired, &broken, &mismatched], now());
        assert_eq!(
            members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].kind(), "invalid_threads");
        assert_eq!(errors[1].kind(), "endpoint_count");
    }
}
