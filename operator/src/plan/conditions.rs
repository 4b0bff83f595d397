//! The conditions a plan reports: Ready and ScriptValid from what became
//! of the script and bundle, RoutesAdmitted and ServicesBound ([`Links`])
//! from what the Worker reaches and is reached by.

use isolane_crds::{ConditionStatus, ConditionType, WorkerSpec};
use isolane_worker::Route;
use isolane_worker::traffic::TrafficError;

use crate::resolve::MissingReference;
use crate::routes::Holder;
use crate::script::ScriptKind;
use crate::status::{ConditionUpdate, reason};

/// Every condition of a Worker, in [`ConditionType::ALL`] order.
pub(super) type Conditions = [ConditionUpdate; ConditionType::COUNT];

/// A service binding whose Worker does not exist in the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingService {
    /// The binding's name (`env.NAME`).
    pub binding: String,
    /// The Worker it names.
    pub worker: String,
}

/// A dispatch namespace binding whose namespace has not agreed to be
/// dispatched into from the Worker's (its Namespace lacks the label).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedDispatch {
    /// The binding's name (`env.NAME`).
    pub binding: String,
    /// The namespace it names.
    pub namespace: String,
}

/// Which of a Worker's dispatch namespaces agreed, as the operator read
/// their Namespaces: the bundle carries the first, the condition names
/// the second.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DispatchConsent {
    pub consented: std::collections::BTreeSet<String>,
    pub refused: Vec<RefusedDispatch>,
}

/// The conditions about the Worker's links, reported whatever became of
/// its script: its routes (RoutesAdmitted) and its service bindings
/// (ServicesBound).
pub(super) struct Links {
    pub(super) routes: ConditionUpdate,
    pub(super) services: ConditionUpdate,
}

impl Links {
    fn into_array(self) -> [ConditionUpdate; 2] {
        [self.routes, self.services]
    }
}

/// ServicesBound for `spec`'s service bindings, the `missing` ones named,
/// and its dispatch namespace bindings, the `refused` ones named.
/// A binding to a Worker not made yet is admitted (the bundle is written;
/// a call through it fails until the Worker exists), as is one to a
/// namespace that did not agree (calls into it are refused until it does):
/// this condition says so.
pub(super) fn services_condition(
    spec: &WorkerSpec,
    namespace: &str,
    missing: &[MissingService],
    refused: &[RefusedDispatch],
) -> ConditionUpdate {
    let declared = spec.bindings.iter().filter(|b| b.service.is_some()).count();
    let dispatch = spec
        .bindings
        .iter()
        .filter(|b| b.dispatch_namespace.is_some())
        .count();
    if missing.is_empty() && refused.is_empty() {
        let mut message =
            format!("{declared} of {declared} service bindings name a Worker of this namespace");
        if dispatch > 0 {
            message.push_str(&format!(
                "; {dispatch} of {dispatch} dispatch namespaces agreed"
            ));
        }
        return ConditionUpdate::new(
            ConditionType::ServicesBound,
            ConditionStatus::True,
            reason::SERVICES_FOUND,
            message,
        );
    }
    let message = unbound_message(namespace, missing, refused);
    let why = if missing.is_empty() {
        reason::DISPATCH_NOT_ALLOWED
    } else {
        reason::SERVICE_NOT_FOUND
    };
    ConditionUpdate::new(
        ConditionType::ServicesBound,
        ConditionStatus::False,
        why,
        message,
    )
}

/// ServicesBound's message when it is False: each binding to a missing
/// Worker, then each dispatch namespace that did not agree.
fn unbound_message(
    namespace: &str,
    missing: &[MissingService],
    refused: &[RefusedDispatch],
) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !missing.is_empty() {
        let named: Vec<String> = missing
            .iter()
            .map(|m| {
                format!(
                    "binding {} names Worker {}, which does not exist in namespace {namespace}",
                    m.binding, m.worker
                )
            })
            .collect();
        parts.push(format!(
            "{}; calls through it fail until it does",
            named.join("; ")
        ));
    }
    let label = isolane_worker::dispatch::consent_label(namespace);
    parts.extend(refused.iter().map(|r| {
        format!(
            "binding {} names dispatch namespace {}, which has not agreed: its Namespace lacks the label {label}=true, and no TenantPolicy selecting it has {namespace} in dispatch.from (set by a cluster admin); calls into it are refused until one of them says so",
            r.binding, r.namespace
        )
    }));
    parts.join("; ")
}

/// What the plan decided about a Worker's routes.
pub(super) struct RouteDecision {
    pub(super) admitted: Vec<Route>,
    lost: Vec<(Route, Holder)>,
    pub(super) declared: usize,
}

impl RouteDecision {
    /// `routes` without the `lost` ones (and without repeats).
    pub(super) fn new(routes: &[Route], lost: &[(Route, Holder)]) -> Self {
        let declared = Route::distinct(routes).len();
        let mut admitted: Vec<Route> = Vec::new();
        for route in routes {
            if !lost.iter().any(|(lost, _)| lost == route) && !admitted.contains(route) {
                admitted.push(route.clone());
            }
        }
        Self {
            admitted,
            lost: lost.to_vec(),
            declared,
        }
    }

    pub(super) fn condition(&self) -> ConditionUpdate {
        if self.lost.is_empty() {
            return ConditionUpdate::new(
                ConditionType::RoutesAdmitted,
                ConditionStatus::True,
                reason::ADMITTED,
                format!(
                    "{} of {} routes admitted",
                    self.admitted.len(),
                    self.declared
                ),
            );
        }
        let conflicts: Vec<String> = self
            .lost
            .iter()
            .map(|(route, holder)| format!("route {route} {holder}"))
            .collect();
        ConditionUpdate::new(
            ConditionType::RoutesAdmitted,
            ConditionStatus::False,
            reason::ROUTE_CONFLICT,
            conflicts.join("; "),
        )
    }
}

/// The conditions of a Worker whose revision is written.
pub(super) fn serving_conditions(
    all_lost: bool,
    revision: &str,
    unapplied: Option<&TrafficError>,
    kind: ScriptKind,
    links: Links,
) -> Conditions {
    let ready = if all_lost {
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason::ROUTES_CONFLICTED,
            "every route of this Worker is held by an older Worker",
        )
    } else {
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::True,
            reason::BUNDLE_READY,
            match unapplied {
                None => format!("revision {revision} is written"),
                Some(error) => format!(
                    "revision {revision} is written; {error}, so the previous split is kept"
                ),
            },
        )
    };
    let script_valid = ConditionUpdate::new(
        ConditionType::ScriptValid,
        ConditionStatus::True,
        reason::PARSED,
        match kind {
            ScriptKind::Module => "parsed as an ES module",
            ScriptKind::Script => "parsed as a classic script",
        },
    );
    let [routes, services] = links.into_array();
    [ready, script_valid, routes, services]
}

/// Ready=False with reason PolicyViolation when the Worker sets limits
/// above the ceilings of its namespace's tenant policies (`message` says
/// which): its bundle is written with the limits held to the ceilings,
/// not with its own. Returns whether it does.
pub(super) fn policy_violation(conditions: &mut Conditions, message: Option<String>) -> bool {
    let Some(message) = message else {
        return false;
    };
    conditions[0] = ConditionUpdate::new(
        ConditionType::Ready,
        ConditionStatus::False,
        reason::POLICY_VIOLATION,
        format!("{message}; the revision is written with the limits held to the ceilings"),
    );
    true
}

/// Ready=False and ScriptValid=Unknown while a reference is `missing`.
pub(super) fn missing_reference_conditions(missing: &MissingReference, links: Links) -> Conditions {
    let [routes, services] = links.into_array();
    [
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason::REFERENCE_NOT_FOUND,
            missing.to_string(),
        ),
        ConditionUpdate::new(
            ConditionType::ScriptValid,
            ConditionStatus::Unknown,
            reason::REFERENCE_NOT_FOUND,
            format!("not checked: {missing}"),
        ),
        routes,
        services,
    ]
}

/// ScriptValid=False for `reason`: `summary` on Ready, `detail` on ScriptValid.
pub(super) fn invalid_conditions(
    reason: &'static str,
    summary: String,
    detail: String,
    links: Links,
) -> Conditions {
    let [routes, services] = links.into_array();
    [
        ConditionUpdate::new(
            ConditionType::Ready,
            ConditionStatus::False,
            reason,
            summary,
        ),
        ConditionUpdate::new(
            ConditionType::ScriptValid,
            ConditionStatus::False,
            reason,
            detail,
        ),
        routes,
        services,
    ]
}
