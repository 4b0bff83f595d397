//! Tenant policies as the operator holds them: every `TenantPolicy` and
//! the labels of every Namespace, kept by the caches' watches
//! (`watches.rs`) inside the [`crate::index::WorkerIndex`], so the webhook
//! (refusing a Worker above a ceiling) and the reconcile (writing the
//! limits and quota a bundle carries) decide from the same state, by the
//! one rule of `isolane_worker::policy::apply` (docs/policy.md).

use std::collections::{BTreeMap, HashMap};

use isolane_crds::TenantPolicy;
use isolane_worker::Limits;
use isolane_worker::policy::{self, Applied, Rules, Violation};
use tracing::warn;

/// The policies and the Namespaces' labels.
#[derive(Debug, Default)]
pub struct TenantPolicies {
    /// By name.
    policies: BTreeMap<String, (TenantPolicy, Rules)>,
    /// Each Namespace's labels, by name.
    labels: HashMap<String, BTreeMap<String, String>>,
}

/// What a Worker runs with under its namespace's policies, and the limits
/// it sets above a ceiling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub applied: Applied,
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// The violations in one message (`None`: there are none).
    pub fn message(&self) -> Option<String> {
        (!self.violations.is_empty()).then(|| {
            self.violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

impl TenantPolicies {
    /// Replaces the policies with `policies`.
    pub fn set_policies(&mut self, policies: impl IntoIterator<Item = TenantPolicy>) {
        self.policies = policies
            .into_iter()
            .map(|policy| {
                let rules = policy.rules();
                (policy.name().to_owned(), (policy, rules))
            })
            .collect();
    }

    /// Whether there is any policy.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Records `namespace`'s labels; whether they changed.
    pub fn set_labels(&mut self, namespace: &str, labels: BTreeMap<String, String>) -> bool {
        if self.labels.get(namespace) == Some(&labels) {
            return false;
        }
        self.labels.insert(namespace.to_owned(), labels);
        true
    }

    /// The policies selecting `namespace` (by name). A policy whose
    /// selector cannot be read selects nothing (logged).
    fn selecting<'a>(&'a self, namespace: &str) -> Vec<(&'a str, &'a TenantPolicy, &'a Rules)> {
        let empty = BTreeMap::new();
        let labels = self.labels.get(namespace).unwrap_or(&empty);
        self.policies
            .iter()
            .filter(|(_, (policy, _))| match policy.selects(labels) {
                Ok(selects) => selects,
                Err(error) => {
                    warn!(%error, "a TenantPolicy's selector cannot be read: it selects nothing");
                    false
                }
            })
            .map(|(name, (policy, rules))| (name.as_str(), policy, rules))
            .collect()
    }

    /// The first policy (by name) selecting namespace `target` whose
    /// `dispatch.from` names `platform`: its consent to be dispatched into
    /// from there (docs/dispatch.md), as the Namespace label's.
    pub fn dispatch_consent(&self, target: &str, platform: &str) -> Option<&str> {
        self.selecting(target)
            .into_iter()
            .find(|(_, policy, _)| policy.spec.dispatch.allows(platform))
            .map(|(name, _, _)| name)
    }

    /// `limits` of a Worker of `namespace` under the policies selecting it.
    pub fn apply(&self, namespace: &str, limits: &Limits) -> Verdict {
        let selecting = self.selecting(namespace);
        let rules = selecting.into_iter().map(|(name, _, rules)| (name, rules));
        let (applied, violations) = policy::apply(rules, limits);
        Verdict {
            applied,
            violations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, tier: &str, spec: serde_json::Value) -> TenantPolicy {
        let mut spec = spec;
        spec["namespaceSelector"] = serde_json::json!({"matchLabels": {"tier": tier}});
        let mut policy = TenantPolicy::new(name, serde_json::from_value(spec).unwrap());
        policy.metadata.name = Some(name.into());
        policy
    }

    #[test]
    fn a_namespace_gets_the_policies_its_labels_select() {
        let mut policies = TenantPolicies::default();
        policies.set_policies([
            policy(
                "free-tier",
                "free",
                serde_json::json!({"limits": {"ceilings": {"cpuMs": 200}, "defaults": {"cpuMs": 50}},
                                   "quotas": {"cpuMsPerSecond": 100}}),
            ),
            policy("paid", "paid", serde_json::json!({})),
        ]);
        let free = BTreeMap::from([("tier".to_owned(), "free".to_owned())]);
        assert!(policies.set_labels("a", free.clone()));
        assert!(!policies.set_labels("a", free));
        let over = Limits {
            cpu_ms: 500,
            ..Limits::default()
        };
        let verdict = policies.apply("a", &over);
        assert_eq!(
            verdict.message().as_deref(),
            Some("spec.limits.cpuMs 500 exceeds 200, the ceiling of TenantPolicy \"free-tier\"")
        );
        let unset = policies.apply("a", &Limits::default());
        assert_eq!(unset.message(), None);
        assert_eq!(unset.applied.limits.cpu_ms, 50);
        assert_eq!(unset.applied.cpu_ms_per_second, Some(100));
        // A namespace no policy selects, or not seen: its own limits.
        let other = policies.apply("b", &over);
        assert_eq!((other.message(), other.applied.limits), (None, over));
    }

    #[test]
    fn a_policy_consents_to_dispatch_from_the_namespaces_it_names() {
        let mut policies = TenantPolicies::default();
        policies.set_policies([
            policy(
                "shops",
                "shop",
                serde_json::json!({"dispatch": {"from": ["platform", "other"]}}),
            ),
            policy("paid", "paid", serde_json::json!({})),
        ]);
        let shop = BTreeMap::from([("tier".to_owned(), "shop".to_owned())]);
        policies.set_labels("cust", shop);
        policies.set_labels(
            "plain",
            BTreeMap::from([("tier".to_owned(), "paid".to_owned())]),
        );
        assert_eq!(policies.dispatch_consent("cust", "platform"), Some("shops"));
        assert_eq!(policies.dispatch_consent("cust", "other"), Some("shops"));
        // Not named, not selected, or not seen: no consent.
        assert_eq!(policies.dispatch_consent("cust", "cust"), None);
        assert_eq!(policies.dispatch_consent("plain", "platform"), None);
        assert_eq!(policies.dispatch_consent("unseen", "platform"), None);
    }
}
