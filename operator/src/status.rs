//! A Worker's status: conditions with stable transition times, the URL, and
//! the server-side apply that writes them.
//!
//! Conditions and their reasons (the API documents these; `docs/operator.md`
//! lists them for users):
//!
//! | type | status | reason |
//! | --- | --- | --- |
//! | `Ready` | True | [`reason::BUNDLE_READY`] |
//! | `Ready` | False | [`reason::REFERENCE_NOT_FOUND`], [`reason::SYNTAX_ERROR`], [`reason::INVALID_COMPATIBILITY`], [`reason::INVALID_BINDINGS`], [`reason::BUNDLE_INVALID`], [`reason::ROUTES_CONFLICTED`], [`reason::POLICY_VIOLATION`] |
//! | `ScriptValid` | True | [`reason::PARSED`] |
//! | `ScriptValid` | False | [`reason::SYNTAX_ERROR`], [`reason::INVALID_COMPATIBILITY`], [`reason::INVALID_BINDINGS`] |
//! | `ScriptValid` | Unknown | [`reason::REFERENCE_NOT_FOUND`] |
//! | `RoutesAdmitted` | True | [`reason::ADMITTED`] |
//! | `RoutesAdmitted` | False | [`reason::ROUTE_CONFLICT`] |
//! | `ServicesBound` | True | [`reason::SERVICES_FOUND`] |
//! | `ServicesBound` | False | [`reason::SERVICE_NOT_FOUND`], [`reason::DISPATCH_NOT_ALLOWED`] |

use isolane_crds::{
    ConditionStatus, ConditionType, ReplicaPlacement, RevisionStatus, WorkerStatus,
};
use isolane_worker::{Route, TrafficStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// Condition reasons (CamelCase, as the API convention wants).
pub mod reason {
    /// Ready=True: the bundle is written.
    pub const BUNDLE_READY: &str = "BundleReady";
    /// A ConfigMap, Secret or key the Worker references does not exist.
    pub const REFERENCE_NOT_FOUND: &str = "ReferenceNotFound";
    /// The script does not parse; the message says `line:column: message`.
    pub const SYNTAX_ERROR: &str = "SyntaxError";
    /// `spec.compatibilityDate` or `spec.compatibilityFlags` is refused
    /// (an unknown flag: the message lists the known ones).
    pub const INVALID_COMPATIBILITY: &str = "InvalidCompatibility";
    /// `spec.bindings` are refused (`isolane_worker::check_bindings`).
    pub const INVALID_BINDINGS: &str = "InvalidBindings";
    /// `spec.bundle` cannot be pulled or is not a bundle (too large, a
    /// digest mismatch, malformed, invalid WebAssembly, unauthorized…).
    pub const BUNDLE_INVALID: &str = "BundleInvalid";
    /// Ready=False: every route of the Worker is held by an older Worker.
    pub const ROUTES_CONFLICTED: &str = "RoutesConflicted";
    /// ScriptValid=True.
    pub const PARSED: &str = "Parsed";
    /// RoutesAdmitted=True: every route is the Worker's (or it has none).
    pub const ADMITTED: &str = "Admitted";
    /// RoutesAdmitted=False: some route is held by an older Worker, named in the message.
    pub const ROUTE_CONFLICT: &str = "RouteConflict";
    /// ServicesBound=True: every service binding names a Worker of the
    /// namespace (or there are none).
    pub const SERVICES_FOUND: &str = "ServicesFound";
    /// ServicesBound=False: a service binding names a Worker that does not
    /// exist (yet) in the namespace; the message names each.
    pub const SERVICE_NOT_FOUND: &str = "ServiceNotFound";
    /// ServicesBound=False: a dispatch namespace binding names a namespace
    /// that has not agreed to be dispatched into from the Worker's (its
    /// Namespace lacks the label `dispatch.isolane.dev/<namespace>`).
    pub const DISPATCH_NOT_ALLOWED: &str = "DispatchNotAllowed";
    /// Ready=False: a limit is above the ceiling of a TenantPolicy of the
    /// Worker's namespace (tightened after it was admitted); the bundle
    /// holds it to the ceiling (docs/policy.md).
    pub const POLICY_VIOLATION: &str = "PolicyViolation";
}

/// One condition as the reconcile decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// Which condition.
    pub type_: ConditionType,
    /// Its status.
    pub status: ConditionStatus,
    /// A CamelCase reason from [`reason`].
    pub reason: &'static str,
    /// For people.
    pub message: String,
}

impl ConditionUpdate {
    /// A condition.
    pub fn new(
        type_: ConditionType,
        status: ConditionStatus,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// The conditions to write: `updates` in [`ConditionType::ALL`] order, keeping the
/// `lastTransitionTime` of an existing condition whose status did not change.
pub fn merge_conditions(
    existing: &[Condition],
    updates: &[ConditionUpdate],
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    ConditionType::ALL
        .iter()
        .filter_map(|type_| updates.iter().find(|update| update.type_ == *type_))
        .map(|update| {
            let previous = existing
                .iter()
                .find(|condition| condition.type_ == update.type_.as_str());
            let last_transition_time = match previous {
                Some(previous) if previous.status == update.status.as_str() => {
                    previous.last_transition_time.clone()
                }
                _ => Time(now),
            };
            Condition {
                type_: update.type_.as_str().to_owned(),
                status: update.status.as_str().to_owned(),
                reason: update.reason.to_owned(),
                message: update.message.clone(),
                observed_generation: generation,
                last_transition_time,
            }
        })
        .collect()
}

/// The conditions of `conditions` the reconcile writes (those of
/// [`ConditionType::ALL`]), leaving others' (`CertificateReady`) out.
fn own_conditions(conditions: &[Condition]) -> Vec<Condition> {
    conditions
        .iter()
        .filter(|c| ConditionType::ALL.iter().any(|t| t.as_str() == c.type_))
        .cloned()
        .collect()
}

/// `http://<host><pathPrefix>` of the first route.
pub fn url(routes: &[Route]) -> Option<String> {
    routes
        .first()
        .map(|route| format!("http://{}{}", route.host, route.path_prefix))
}

/// The status of a condition type in `status`, `Unknown` when absent.
pub fn condition_status(status: Option<&WorkerStatus>, type_: ConditionType) -> ConditionStatus {
    let found = status.and_then(|status| {
        status
            .conditions
            .iter()
            .find(|condition| condition.type_ == type_.as_str())
    });
    match found.map(|condition| condition.status.as_str()) {
        Some("True") => ConditionStatus::True,
        Some("False") => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    }
}

/// The revisions part of the status: the split now and the history kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revisions {
    /// `status.traffic`.
    pub traffic: Vec<TrafficStatus>,
    /// `status.revisions`, newest first.
    pub revisions: Vec<RevisionStatus>,
}

/// What the status shows besides the conditions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shown {
    /// The latest revision.
    pub revision: Option<String>,
    /// The URL of the first admitted route.
    pub url: Option<String>,
    /// Where the replicas run.
    pub placement: Vec<ReplicaPlacement>,
    /// The split and the revisions kept.
    pub revisions: Revisions,
}

/// The status to write.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredStatus {
    /// The status object.
    pub status: WorkerStatus,
}

impl DesiredStatus {
    /// Builds the status from the reconcile's decisions.
    pub fn new(
        current: Option<&WorkerStatus>,
        generation: Option<i64>,
        shown: Shown,
        updates: &[ConditionUpdate],
        now: Timestamp,
    ) -> Self {
        let Shown {
            revision,
            url,
            placement,
            revisions,
        } = shown;
        let existing = current.map_or(&[][..], |status| status.conditions.as_slice());
        let traffic_summary = (!revisions.traffic.is_empty())
            .then(|| isolane_worker::traffic::summary(&revisions.traffic));
        Self {
            status: WorkerStatus {
                observed_generation: generation,
                revision,
                traffic: revisions.traffic,
                traffic_summary,
                revisions: revisions.revisions,
                conditions: merge_conditions(existing, updates, generation, now),
                url,
                placement,
                // The router's cron scheduler owns `status.cron` (its own
                // server-side-apply field manager); the operator never writes it.
                cron: None,
                // `status.queues` and `status.workflows` are the backlog
                // writer's (`backlog.rs`, a field manager of its own).
                queues: Vec::new(),
                workflows: Vec::new(),
            },
        }
    }

    /// True when writing would change nothing (of what the operator owns).
    pub fn is_current(&self, current: Option<&WorkerStatus>) -> bool {
        current.is_some_and(|current| {
            current.observed_generation == self.status.observed_generation
                && current.revision == self.status.revision
                && own_conditions(&current.conditions) == self.status.conditions
                && current.url == self.status.url
                && current.placement == self.status.placement
                && current.traffic == self.status.traffic
                && current.traffic_summary == self.status.traffic_summary
                && current.revisions == self.status.revisions
        })
    }

    /// The server-side apply body for the status subresource.
    pub fn apply_body(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": format!("{}/{}", isolane_crds::GROUP, isolane_crds::VERSION),
            "kind": "Worker",
            "status": self.status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn transition_time_changes_only_when_the_status_flips() {
        let ready = |status, reason| {
            vec![ConditionUpdate::new(
                ConditionType::Ready,
                status,
                reason,
                "m",
            )]
        };
        let first = merge_conditions(
            &[],
            &ready(ConditionStatus::False, reason::REFERENCE_NOT_FOUND),
            Some(1),
            at(10),
        );
        assert_eq!(first[0].last_transition_time, Time(at(10)));
        // Same status, other reason: time kept.
        let second = merge_conditions(
            &first,
            &ready(ConditionStatus::False, reason::SYNTAX_ERROR),
            Some(2),
            at(20),
        );
        assert_eq!(second[0].last_transition_time, Time(at(10)));
        assert_eq!(second[0].reason, reason::SYNTAX_ERROR);
        assert_eq!(second[0].observed_generation, Some(2));
        let third = merge_conditions(
            &second,
            &ready(ConditionStatus::True, reason::BUNDLE_READY),
            Some(2),
            at(30),
        );
        assert_eq!(third[0].last_transition_time, Time(at(30)));
    }

    #[test]
    fn conditions_are_ordered_and_unchanged_status_is_current() {
        let updates = [
            ConditionUpdate::new(
                ConditionType::RoutesAdmitted,
                ConditionStatus::True,
                reason::ADMITTED,
                "",
            ),
            ConditionUpdate::new(
                ConditionType::Ready,
                ConditionStatus::True,
                reason::BUNDLE_READY,
                "",
            ),
        ];
        let desired = DesiredStatus::new(
            None,
            Some(1),
            Shown {
                revision: Some("r".into()),
                ..Shown::default()
            },
            &updates,
            at(1),
        );
        let types: Vec<&str> = desired
            .status
            .conditions
            .iter()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, vec!["Ready", "RoutesAdmitted"]);
        let again = DesiredStatus::new(
            Some(&desired.status),
            Some(1),
            Shown {
                revision: Some("r".into()),
                ..Shown::default()
            },
            &updates,
            at(2),
        );
        assert!(again.is_current(Some(&desired.status)));
        assert_eq!(
            condition_status(Some(&desired.status), ConditionType::Ready),
            ConditionStatus::True
        );
        assert_eq!(
            condition_status(Some(&desired.status), ConditionType::ScriptValid),
            ConditionStatus::Unknown
        );
    }

    #[test]
    fn url_is_the_first_route() {
        let routes = vec![
            Route {
                host: "a.example.com".into(),
                path_prefix: "/api".into(),
            },
            Route {
                host: "b.example.com".into(),
                path_prefix: "/".into(),
            },
        ];
        assert_eq!(url(&routes).as_deref(), Some("http://a.example.com/api"));
        assert_eq!(url(&[]), None);
    }
}
