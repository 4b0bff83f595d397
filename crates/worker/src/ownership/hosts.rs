//! Step 1 of the ownership rule: a host belongs to one namespace.
//!
//! Hosts are exact (`api.example.com`) or one-label wildcards
//! (`*.example.com`, which matches `api.example.com` but neither
//! `example.com` nor `a.b.example.com`). Two host patterns *overlap* when
//! some request host matches both: equal patterns, or a wildcard and an
//! exact host one label under it.
//!
//! Recorded owners ([`HostOwner`], `owners.rs`) are admitted first, oldest
//! record first: a namespace's claim on a host recorded as its own is
//! admitted whatever its Workers' ages, and any other namespace's
//! overlapping claim is refused, whether the owner's Workers claim the host
//! now or not. Then the claims no record covers: a namespace's claim on a
//! host is as old as its oldest Worker claiming it; claims are taken oldest
//! first (ties by namespace, then host), and one is admitted unless a
//! reservation for another namespace covers its host or it overlaps a host
//! admitted to another namespace before it. A reservation for another
//! namespace voids a record too.

use std::collections::{BTreeMap, HashMap};

use super::{Age, Holder, HostOwner, Reservation};
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

/// Decides every namespace's claim on every host: recorded owners first
/// (oldest record first), then the claims no record covers, oldest first.
pub(super) fn decide(
    claims: impl IntoIterator<Item = HostClaim>,
    reservations: &[Reservation],
    owners: &[HostOwner],
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

    let mut admitted = Admitted::default();
    let mut decisions = BTreeMap::new();
    // A record is void where a reservation for another namespace covers
    // its host, or an older record of another namespace overlaps it.
    let mut owners: Vec<&HostOwner> = owners.iter().collect();
    owners.sort_by(|a, b| a.order().cmp(&b.order()));
    for owner in owners {
        if owner.reserved_away(reservations)
            || admitted.blocking(&owner.namespace, &owner.host).is_some()
        {
            continue;
        }
        let key = (owner.namespace.clone(), owner.host.clone());
        let worker = merged.remove(&key).map(|claim| {
            decisions.insert(key.clone(), None);
            claim.worker
        });
        admitted.add(&owner.namespace, &owner.host, worker);
    }

    let mut claims: Vec<HostClaim> = merged.into_values().collect();
    claims.sort_by(|a, b| a.order().cmp(&b.order()));
    for claim in claims {
        let namespace = &claim.worker.namespace;
        let refusal = reservations
            .iter()
            .find(|r| r.namespace != *namespace && r.covers(&claim.host))
            .map(|r| Holder::Reserved(r.clone()))
            .or_else(|| admitted.blocking(namespace, &claim.host));
        if refusal.is_none() {
            admitted.add(namespace, &claim.host, Some(claim.worker.clone()));
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

/// A host admitted to a namespace: by its record, or by its claim.
#[derive(Clone)]
struct Held {
    namespace: String,
    host: String,
    /// The namespace's oldest Worker claiming the host; `None` for a
    /// record no Worker claims now.
    worker: Option<WorkerKey>,
    /// When it was admitted, in the order of [`decide`]: the first admitted
    /// holder is named.
    seq: usize,
}

/// Admitted hosts, indexed for the overlap test.
#[derive(Default)]
struct Admitted {
    /// Every admitted pattern → its holders.
    by_host: HashMap<String, Vec<Held>>,
    /// Admitted exact hosts by their parent domain (`a.example.com` under
    /// `example.com`), for wildcards.
    by_parent: HashMap<String, Vec<Held>>,
    seq: usize,
}

impl Admitted {
    fn add(&mut self, namespace: &str, host: &str, worker: Option<WorkerKey>) {
        let held = Held {
            namespace: namespace.to_owned(),
            host: host.to_owned(),
            worker,
            seq: self.seq,
        };
        self.seq += 1;
        if !host.starts_with("*.")
            && let Some((_, parent)) = host.split_once('.')
        {
            self.by_parent
                .entry(parent.to_owned())
                .or_default()
                .push(held.clone());
        }
        self.by_host.entry(host.to_owned()).or_default().push(held);
    }

    /// The first admitted holder of another namespace whose host overlaps
    /// `host`.
    fn blocking(&self, namespace: &str, host: &str) -> Option<Holder> {
        let wildcard_over = host
            .split_once('.')
            .filter(|_| !host.starts_with("*."))
            .map(|(_, parent)| format!("*.{parent}"));
        let same = self.by_host.get(host);
        let exact_under = host
            .strip_prefix("*.")
            .and_then(|suffix| self.by_parent.get(suffix));
        let wildcard = wildcard_over.and_then(|w| self.by_host.get(&w));
        [same, exact_under, wildcard]
            .into_iter()
            .flatten()
            .flatten()
            .filter(|held| held.namespace != namespace)
            .min_by_key(|held| held.seq)
            .map(|held| match &held.worker {
                Some(worker) => Holder::Namespace {
                    worker: worker.clone(),
                    host: held.host.clone(),
                },
                None => Holder::Held {
                    namespace: held.namespace.clone(),
                    host: held.host.clone(),
                },
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
