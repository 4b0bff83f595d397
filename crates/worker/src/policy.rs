//! Tenant policy: what a cluster admin sets for the namespaces a policy
//! selects (the `TenantPolicy` resource of `isolane-crds`), and the one rule
//! that turns a Worker's limits and the policies over its namespace into
//! the limits and quota its bundle carries ([`apply`]), used by the
//! webhook (refusing at apply) and the operator (writing bundles).
//!
//! Precedence, when several policies select a namespace: for each limit
//! the lowest ceiling wins, the lowest default wins (then held to that
//! ceiling), and the lowest quota wins. A limit a Worker leaves at its
//! built-in default (the value the apiserver fills in for a field not
//! written, such as `cpuMs: 30000`) counts as not set: it becomes the
//! policy's default, or the ceiling when the policy gives none. A limit set
//! to another value above a ceiling is a [`Violation`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Limits;

/// Values of the four per-request limits, each optional: the ceilings or
/// the defaults of a policy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitValues {
    /// CPU milliseconds per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 30000))]
    pub cpu_ms: Option<u32>,
    /// Wall-clock milliseconds per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300000))]
    pub wall_ms: Option<u32>,
    /// Memory of the Worker's isolate, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "memoryMiB")]
    #[schemars(range(min = 16, max = 1024))]
    pub memory_mib: Option<u32>,
    /// Outbound `fetch` calls per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub subrequests: Option<u32>,
}

/// The ceilings a Worker's limits may not exceed, and the defaults of the
/// limits it does not set.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyLimits {
    /// The highest value a Worker may set for each limit: above it the
    /// webhook refuses the Worker.
    #[serde(default)]
    pub ceilings: LimitValues,
    /// The value a Worker that does not set a limit gets.
    #[serde(default)]
    pub defaults: LimitValues,
}

/// Quotas of each selected namespace, enforced by each runtime node.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quotas {
    /// CPU milliseconds the namespace's Workers may use per second on one
    /// node (all its threads together), averaged over a second; past it
    /// the node answers the namespace's new requests with 429 and
    /// `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000000))]
    pub cpu_ms_per_second: Option<u32>,
}

/// What a policy says, besides which namespaces it selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    pub limits: PolicyLimits,
    pub quotas: Quotas,
}

/// What a Worker runs with under the policies of its namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// Its limits: its own, the defaults for those it left unset, each
    /// held to its ceiling.
    pub limits: Limits,
    /// Its namespace's CPU quota on a node (the lowest of the policies').
    pub cpu_ms_per_second: Option<u32>,
}

/// A limit a Worker sets above the ceiling of a policy of its namespace.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Violation {
    /// The field, as `spec.limits.cpuMs`.
    pub field: &'static str,
    /// The Worker's value.
    pub value: u32,
    /// The ceiling.
    pub ceiling: u32,
    /// The policy whose ceiling it is.
    pub policy: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} exceeds {}, the ceiling of TenantPolicy {:?}",
            self.field, self.value, self.ceiling, self.policy
        )
    }
}

/// The Worker's limits under `policies` (name and rules, those selecting
/// its namespace), and the limits it sets above a ceiling (empty when none
/// does). [`Applied::limits`] is held to the ceilings either way, so a
/// Worker admitted before a policy was tightened runs within it.
pub fn apply<'a>(
    policies: impl IntoIterator<Item = (&'a str, &'a Rules)>,
    limits: &Limits,
) -> (Applied, Vec<Violation>) {
    let policies: Vec<(&str, &Rules)> = policies.into_iter().collect();
    let mut applied = Applied {
        limits: *limits,
        cpu_ms_per_second: lowest(&policies, |rules| rules.quotas.cpu_ms_per_second)
            .map(|(value, _)| value),
    };
    let mut violations = Vec::new();
    for (field, slot, builtin, pick) in FIELDS {
        let value = slot(&mut applied.limits);
        let ceiling = lowest(&policies, |rules| pick(&rules.limits.ceilings));
        let default = lowest(&policies, |rules| pick(&rules.limits.defaults));
        if *value == builtin {
            *value = default.map_or(builtin, |(default, _)| default);
        } else if let Some((ceiling, policy)) = ceiling
            && *value > ceiling
        {
            violations.push(Violation {
                field,
                value: *value,
                ceiling,
                policy: policy.to_owned(),
            });
        }
        if let Some((ceiling, _)) = ceiling {
            *value = (*value).min(ceiling);
        }
    }
    (applied, violations)
}

/// Picks one value out of a policy's limit values.
type Pick = fn(&LimitValues) -> Option<u32>;

/// Each limit: its field, where it is in [`Limits`], its built-in default
/// and where it is in a policy's [`LimitValues`].
type Field = (&'static str, fn(&mut Limits) -> &mut u32, u32, Pick);

const FIELDS: [Field; 4] = [
    (
        "spec.limits.cpuMs",
        |l| &mut l.cpu_ms,
        Limits::DEFAULT_CPU_MS,
        |v| v.cpu_ms,
    ),
    (
        "spec.limits.wallMs",
        |l| &mut l.wall_ms,
        Limits::DEFAULT_WALL_MS,
        |v| v.wall_ms,
    ),
    (
        "spec.limits.memoryMiB",
        |l| &mut l.memory_mib,
        Limits::DEFAULT_MEMORY_MIB,
        |v| v.memory_mib,
    ),
    (
        "spec.limits.subrequests",
        |l| &mut l.subrequests,
        Limits::DEFAULT_SUBREQUESTS,
        |v| v.subrequests,
    ),
];

/// The lowest value `pick` finds among `policies`, with the policy that
/// sets it (the first by name among equals).
fn lowest<'a>(
    policies: &[(&'a str, &Rules)],
    pick: impl Fn(&Rules) -> Option<u32>,
) -> Option<(u32, &'a str)> {
    policies
        .iter()
        .filter_map(|(name, rules)| Some((pick(rules)?, *name)))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ceilings: LimitValues, defaults: LimitValues, quota: Option<u32>) -> Rules {
        Rules {
            limits: PolicyLimits { ceilings, defaults },
            quotas: Quotas {
                cpu_ms_per_second: quota,
            },
        }
    }

    fn cpu(ms: u32) -> LimitValues {
        LimitValues {
            cpu_ms: Some(ms),
            ..LimitValues::default()
        }
    }

    #[test]
    fn no_policy_changes_nothing() {
        let limits = Limits {
            cpu_ms: 500,
            ..Limits::default()
        };
        let (applied, violations) = apply([], &limits);
        assert_eq!(applied.limits, limits);
        assert_eq!(applied.cpu_ms_per_second, None);
        assert!(violations.is_empty());
    }

    #[test]
    fn a_limit_over_the_ceiling_is_a_violation_named_after_the_policy() {
        let free = rules(cpu(200), LimitValues::default(), None);
        let limits = Limits {
            cpu_ms: 500,
            ..Limits::default()
        };
        let (applied, violations) = apply([("free-tier", &free)], &limits);
        assert_eq!(
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["spec.limits.cpuMs 500 exceeds 200, the ceiling of TenantPolicy \"free-tier\""]
        );
        // Held to the ceiling all the same.
        assert_eq!(applied.limits.cpu_ms, 200);
        // At the ceiling is fine.
        let at = Limits {
            cpu_ms: 200,
            ..Limits::default()
        };
        assert!(apply([("free-tier", &free)], &at).1.is_empty());
    }

    #[test]
    fn an_unset_limit_gets_the_default_or_else_the_ceiling() {
        let policy = rules(
            LimitValues {
                cpu_ms: Some(200),
                memory_mib: Some(64),
                ..LimitValues::default()
            },
            LimitValues {
                cpu_ms: Some(50),
                subrequests: Some(5),
                ..LimitValues::default()
            },
            Some(100),
        );
        let (applied, violations) = apply([("p", &policy)], &Limits::default());
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(
            applied.limits,
            Limits {
                cpu_ms: 50,
                wall_ms: Limits::DEFAULT_WALL_MS,
                memory_mib: 64,
                subrequests: 5,
            }
        );
        assert_eq!(applied.cpu_ms_per_second, Some(100));
    }

    #[test]
    fn the_most_restrictive_of_several_policies_wins() {
        let loose = rules(cpu(1000), cpu(800), Some(500));
        let tight = rules(cpu(300), cpu(900), Some(50));
        let both = [("a-loose", &loose), ("b-tight", &tight)];
        // The lowest default, held to the lowest ceiling.
        let (applied, _) = apply(both, &Limits::default());
        assert_eq!(applied.limits.cpu_ms, 300);
        assert_eq!(applied.cpu_ms_per_second, Some(50));
        // The violation names the policy whose ceiling is the lowest.
        let limits = Limits {
            cpu_ms: 400,
            ..Limits::default()
        };
        let (_, violations) = apply(both, &limits);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].policy, "b-tight");
        assert_eq!(violations[0].ceiling, 300);
        // Equal ceilings: the first by name.
        let same = rules(cpu(300), LimitValues::default(), None);
        let (_, violations) = apply([("b", &same), ("a", &same)], &limits);
        assert_eq!(violations[0].policy, "a");
    }

    #[test]
    fn the_schema_bounds_match_the_limits() {
        let schema = serde_json::to_value(schemars::schema_for!(LimitValues)).unwrap();
        for (field, range) in [
            ("cpuMs", Limits::CPU_MS),
            ("wallMs", Limits::WALL_MS),
            ("memoryMiB", Limits::MEMORY_MIB),
            ("subrequests", Limits::SUBREQUESTS),
        ] {
            let property = &schema["properties"][field];
            assert_eq!(property["minimum"], *range.start(), "{field}");
            assert_eq!(property["maximum"], *range.end(), "{field}");
        }
    }
}
