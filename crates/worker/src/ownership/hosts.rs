//! Step 1 of the ownership rule: a host belongs to one namespace.
//!
//! Hosts are exact (`api.example.com`) or one-label wildcards
//! (`*.example.com`, which matches `api.example.com` but neither
//! `example.com` nor `a.b.example.com`). Two host patterns *overlap* when
//! some request host matches both: equal patterns, or a wildcard and an
//! exact host one label under it. A namespace's claim on a host is as old as
//! its oldest Worker claiming it; claims are taken oldest first (ties by
//! namespace, then host), and one is admitted unless a reservation for
//! another namespace covers its host or it overlaps a claim of another
//! namespace admitted before it.

use std::collections::{BTreeMap, HashMap};

use super::{Age, Holder, Reservation};
use crate::WorkerKey;

/// One namespace's claim on a (normalised) host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostClaim {
    pub age: Age,
    /// The oldest Worker making this claim (ties by name), named to others.
    pub worker: WorkerKey,
    pub host: String,
}

impl HostClaim {
    /// The order claims are taken in: oldest first, then namespace, host,
    /// and the Worker's name.
    fn order(&self) -> (Age, &str, &str, &str) {
        (
            self.age,
            &self.worker.namespace,
            &self.host,
            &self.worker.name,
        )
    }
}

/// (namespace, host) → `None` if admitted, else who holds the host.
pub(super) type HostDecisions = BTreeMap<(String, String), Option<Holder>>;

/// Decides every namespace's claim on every host.
pub(super) fn decide(
    claims: impl IntoIterator<Item = HostClaim>,
    reservations: &[Reservation],
) -> HostDecisions {
    // One claim per (namespace, host): the oldest Worker's.
    let mut merged: HashMap<(String, String), HostClaim> = HashMap::new();
    for claim in claims {
        let key = (claim.worker.namespace.clone(), claim.host.clone());
        match merged.get(&key) {
            Some(existing) if existing.order() <= claim.order() => {}
            _ => {
                merged.insert(key, claim);
            }
        }
    }
    let mut claims: Vec<HostClaim> = merged.into_values().collect();
    claims.sort_by(|a, b| a.order().cmp(&b.order()));

    let mut admitted = Admitted::default();
    let mut decisions = BTreeMap::new();
    for claim in claims {
        let refusal = reservations
            .iter()
            .find(|r| r.namespace != claim.worker.namespace && r.covers(&claim.host))
            .map(|r| Holder::Reserved(r.clone()))
            .or_else(|| admitted.blocking(&claim));
        if refusal.is_none() {
            admitted.add(&claim);
        }
        decisions.insert((claim.worker.namespace, claim.host), refusal);
    }
    decisions
}

/// Whether some request host matches both patterns.
pub fn overlap(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let under = |wildcard: &str, exact: &str| {
        wildcard.strip_prefix("*.").is_some_and(|suffix| {
            !exact.starts_with("*.")
                && exact
                    .split_once('.')
                    .is_some_and(|(label, rest)| !label.is_empty() && rest == suffix)
        })
    };
    under(a, b) || under(b, a)
}

/// Admitted claims, indexed for the overlap test.
#[derive(Default)]
struct Admitted {
    /// Every admitted pattern → its claims.
    by_host: HashMap<String, Vec<HostClaim>>,
    /// Admitted exact hosts by their parent domain (`a.example.com` under
    /// `example.com`), for wildcards.
    by_parent: HashMap<String, Vec<HostClaim>>,
}

impl Admitted {
    fn add(&mut self, claim: &HostClaim) {
        self.by_host
            .entry(claim.host.clone())
            .or_default()
            .push(claim.clone());
        if !claim.host.starts_with("*.")
            && let Some((_, parent)) = claim.host.split_once('.')
        {
            self.by_parent
                .entry(parent.to_owned())
                .or_default()
                .push(claim.clone());
        }
    }

    /// The oldest admitted claim of another namespace that overlaps `claim`.
    fn blocking(&self, claim: &HostClaim) -> Option<Holder> {
        let wildcard_over = claim
            .host
            .split_once('.')
            .filter(|_| !claim.host.starts_with("*."))
            .map(|(_, parent)| format!("*.{parent}"));
        let same = self.by_host.get(&claim.host);
        let exact_under = claim
            .host
            .strip_prefix("*.")
            .and_then(|suffix| self.by_parent.get(suffix));
        let wildcard = wildcard_over.and_then(|w| self.by_host.get(&w));
        [same, exact_under, wildcard]
            .into_iter()
            .flatten()
            .flatten()
            .filter(|c| c.worker.namespace != claim.worker.namespace)
            .min_by(|a, b| a.order().cmp(&b.order()))
            .map(|c| Holder::Namespace {
                worker: c.worker.clone(),
                host: c.host.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_overlap_when_a_host_matches_both() {
        assert!(overlap("a.example.com", "a.example.com"));
        assert!(overlap("*.example.com", "a.example.com"));
        assert!(overlap("a.example.com", "*.example.com"));
        assert!(!overlap("*.example.com", "example.com"));
        assert!(!overlap("*.example.com", "a.b.example.com"));
        assert!(!overlap("*.example.com", "*.b.example.com"));
        assert!(!overlap("a.example.com", "b.example.com"));
    }
}
