//! Dispatch namespaces (Workers for Platforms): a binding `{name,
//! dispatchNamespace: {namespace}}` (wrangler's `[[dispatch_namespaces]]`)
//! lets a platform's Worker call any Worker of another Kubernetes namespace
//! by name (`env.NAME.get(worker)`), with `fetch` and JS RPC, on the
//! service-binding path (docs/dispatch.md).
//!
//! A namespace is dispatched into only when it agreed: its Namespace object
//! carries the label [`consent_label`] of the platform's namespace
//! (`dispatch.isolane.dev/<platform-namespace>: "true"`). Namespace labels
//! are a cluster admin's to set (a tenant with namespaced RBAC cannot), so
//! neither the platform nor the customer decides alone. The check is made by
//! trusted parts: the operator (or `isolane dev`) writes which target
//! namespaces consent into the platform Worker's bundle
//! ([`crate::Bundle::dispatch_consent`]), and the node refuses the others.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prefix of the consent label: `dispatch.isolane.dev/<platform>`.
pub const CONSENT_LABEL_PREFIX: &str = "dispatch.isolane.dev/";

/// `dispatchNamespace` of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DispatchNamespaceBinding {
    /// The Kubernetes namespace whose Workers `env.NAME.get(name)` reaches.
    /// Its Namespace must carry the label
    /// `dispatch.isolane.dev/<this Worker's namespace>: "true"` (set by a
    /// cluster admin); until it does, calls are refused.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub namespace: String,
    /// An outbound Worker (wrangler's `outbound`): every `fetch()` of a
    /// Worker called through the binding goes to it (docs/dispatch.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound: Option<OutboundWorker>,
}

/// `dispatchNamespace.outbound`: a Worker of the platform's namespace that
/// takes every `fetch()` of the Workers called through the binding, with
/// the `params` named here (picked from `get()`'s `options.outbound`) as
/// `env.<param>` for that call only.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboundWorker {
    /// A Worker of the platform's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub worker: String,
    /// The names of `get()`'s `options.outbound` members the outbound Worker
    /// sees as `env.<name>` (others are not passed on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
}

/// The label a Namespace carries when Workers of namespace `platform` may
/// dispatch into it.
pub fn consent_label(platform: &str) -> String {
    format!("{CONSENT_LABEL_PREFIX}{platform}")
}

/// Whether a Namespace with `labels` lets namespace `platform` dispatch
/// into it: the label [`consent_label`] with the value `"true"`.
pub fn consents(labels: &BTreeMap<String, String>, platform: &str) -> bool {
    labels
        .get(&consent_label(platform))
        .is_some_and(|value| value == "true")
}

/// A Kubernetes namespace name (an RFC 1123 label): lowercase letters,
/// digits and `-`, at most 63, starting and ending with a letter or digit.
pub fn is_namespace_name(name: &str) -> bool {
    crate::dns_name::is_dns_label(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consent_is_the_platform_label_set_to_true() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let yes = labels(&[("dispatch.isolane.dev/platform", "true")]);
        assert!(consents(&yes, "platform"));
        assert!(!consents(&yes, "other"), "one key per platform");
        assert!(!consents(
            &labels(&[("dispatch.isolane.dev/platform", "yes")]),
            "platform"
        ));
        assert!(!consents(&labels(&[]), "platform"));
        assert_eq!(consent_label("p"), "dispatch.isolane.dev/p");
    }

    #[test]
    fn namespace_names_are_dns_labels() {
        for good in ["a", "cust-1", &"n".repeat(63)] {
            assert!(is_namespace_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a/b", &"n".repeat(64)] {
            assert!(!is_namespace_name(bad), "{bad}");
        }
    }
}
