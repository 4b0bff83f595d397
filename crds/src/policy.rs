//! The `TenantPolicy` resource: a cluster admin's ceilings, defaults and
//! quotas for the namespaces it selects (docs/policy.md). Cluster-scoped,
//! so a tenant's namespaced Role cannot grant writing it; what it says is
//! applied by `isolane_worker::policy`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use kube::core::SelectorExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use isolane_worker::policy::{PolicyLimits, Quotas, Rules};

/// Ceilings and defaults of the per-request limits and quotas of the
/// namespaces it selects. Several policies may select one namespace: the
/// lowest ceiling, default and quota of each win.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "isolane.dev",
    version = "v1alpha1",
    kind = "TenantPolicy",
    plural = "tenantpolicies",
    shortname = "tp",
    category = "isolane",
    doc = "A cluster admin's policy for the namespaces it selects: ceilings and defaults of Workers' limits, and quotas (docs/policy.md)."
)]
#[serde(rename_all = "camelCase")]
pub struct TenantPolicySpec {
    /// The namespaces (by their labels) the policy applies to; `{}`
    /// selects every namespace.
    pub namespace_selector: LabelSelector,
    /// Ceilings and defaults of Workers' `spec.limits`.
    #[serde(default)]
    pub limits: PolicyLimits,
    /// Quotas of each selected namespace.
    #[serde(default)]
    pub quotas: Quotas,
    /// Dispatch consent (docs/dispatch.md): Workers of the namespaces named
    /// here may dispatch into every namespace the policy selects, as the
    /// Namespace label `dispatch.isolane.dev/<namespace>: "true"` lets them.
    #[serde(default, skip_serializing_if = "PolicyDispatch::is_empty")]
    pub dispatch: PolicyDispatch,
}

/// `dispatch` of a [`TenantPolicySpec`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDispatch {
    /// Platform namespaces whose Workers' dispatch namespace bindings may
    /// call Workers of the selected namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    ))]
    pub from: Vec<String>,
}

impl PolicyDispatch {
    /// Whether it names no namespace.
    pub fn is_empty(&self) -> bool {
        self.from.is_empty()
    }

    /// Whether it lets Workers of `platform` dispatch.
    pub fn allows(&self, platform: &str) -> bool {
        self.from.iter().any(|from| from == platform)
    }
}

/// A label selector the policy gives that cannot be read (an unknown
/// operator, or values where none belong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TenantPolicy {policy:?}: spec.namespaceSelector: {reason}")]
pub struct InvalidSelector {
    pub policy: String,
    pub reason: String,
}

impl TenantPolicy {
    /// Its name (cluster-scoped: no namespace).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// What it says, besides its selector.
    pub fn rules(&self) -> Rules {
        Rules {
            limits: self.spec.limits,
            quotas: self.spec.quotas,
        }
    }

    /// Whether it selects a namespace labelled `labels`.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> Result<bool, InvalidSelector> {
        let selector = kube::core::Selector::try_from(self.spec.namespace_selector.clone())
            .map_err(|error| InvalidSelector {
                policy: self.name().to_owned(),
                reason: error.to_string(),
            })?;
        Ok(selector.matches(labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(selector: serde_json::Value) -> TenantPolicy {
        let mut policy = TenantPolicy::new(
            "free-tier",
            serde_json::from_value(serde_json::json!({
                "namespaceSelector": selector,
                "limits": {"ceilings": {"cpuMs": 200}},
            }))
            .unwrap(),
        );
        policy.metadata.name = Some("free-tier".into());
        policy
    }

    #[test]
    fn selects_namespaces_by_label() {
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        let free = policy(serde_json::json!({"matchLabels": {"tier": "free"}}));
        assert_eq!(free.selects(&labels(&[("tier", "free")])), Ok(true));
        assert_eq!(free.selects(&labels(&[("tier", "paid")])), Ok(false));
        assert_eq!(free.selects(&labels(&[])), Ok(false));
        let every = policy(serde_json::json!({}));
        assert_eq!(every.selects(&labels(&[])), Ok(true));
        let not_paid = policy(serde_json::json!({"matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["paid"]}
        ]}));
        assert_eq!(not_paid.selects(&labels(&[("tier", "free")])), Ok(true));
        assert_eq!(not_paid.selects(&labels(&[("tier", "paid")])), Ok(false));
        assert_eq!(free.rules().limits.ceilings.cpu_ms, Some(200));
    }
}
