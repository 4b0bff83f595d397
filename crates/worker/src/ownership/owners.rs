//! Recorded host owners: the memory that keeps a host its namespace's
//! across redeploys.
//!
//! Without it, a namespace's claim on a host would be only as old as its
//! oldest Worker claiming the host *now*, so replacing that Worker (create
//! the new one, delete the old; `kubectl replace --force`, a helm
//! reinstall, a rename) would hand the host to an older, refused claim of
//! another namespace — a squatter, or a wildcard over the host — together
//! with the users' requests and credentials.
//!
//! So the operator (the only writer, as leader) records each host pattern
//! it admits: [`HostOwner`], "host H belongs to namespace N since T". Every
//! reader of the rule ([`super::decide`]) takes the records as input and
//! admits them before any live claim: a recorded host stays its
//! namespace's while any of its Workers claims it, and after the last one
//! goes it stays held ([`super::Holder::Held`]) for a grace period, until
//! [`next_owners`] (run by the operator) drops the record, or until an admin
//! deletes the record. Another namespace's claim is never admitted on it
//! meanwhile, however old; a refused claim never ages into ownership.
//!
//! A record binds until it is deleted: readers do not expire records by
//! their own clock, so the operator's status, its webhook and the router
//! cannot disagree about a host whose grace period is running out.

use std::collections::BTreeMap;

use super::{Ownership, Reservation};

/// A host pattern (normalised) recorded as one namespace's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostOwner {
    /// The host pattern, normalised (`victim.example`, `*.example`).
    pub host: String,
    /// The namespace it belongs to.
    pub namespace: String,
    /// When it was first admitted to the namespace (nanoseconds since the
    /// epoch): earlier records win over later ones should two overlap.
    pub since: i128,
    /// When the operator saw the namespace's last claim on the host go
    /// (nanoseconds since the epoch); `None` while it is claimed.
    pub released: Option<i128>,
}

impl HostOwner {
    /// The order records are admitted in: oldest first, then host and
    /// namespace.
    pub(super) fn order(&self) -> (i128, &str, &str) {
        (self.since, &self.host, &self.namespace)
    }

    /// Whether a reservation for another namespace covers the host: an
    /// admin's reservation wins over a record.
    pub(super) fn reserved_away(&self, reservations: &[Reservation]) -> bool {
        reservations
            .iter()
            .any(|r| r.namespace != self.namespace && r.covers(&self.host))
    }
}

/// The records the operator keeps after deciding `ownership` (made with
/// `owners`) at `now`: each admitted (namespace, host) keeps its record, or
/// gets one from `now`; a record whose namespace no longer has an admitted
/// claim on the host is marked released (from `now`, unless it was
/// already), and is dropped once it has been released for `grace`. One
/// record per host pattern (a record yields to another namespace's
/// admitted claim on the same host only where a reservation voided it);
/// sorted by host.
pub fn next_owners(
    ownership: &Ownership,
    owners: &[HostOwner],
    now: i128,
    grace: i128,
) -> Vec<HostOwner> {
    let mut next: BTreeMap<String, HostOwner> = BTreeMap::new();
    for owner in owners {
        let claimed = ownership.host_admitted(&owner.namespace, &owner.host);
        let released = if claimed {
            None
        } else {
            Some(owner.released.unwrap_or(now))
        };
        if released.is_some_and(|at| now.saturating_sub(at) >= grace) {
            continue;
        }
        let record = HostOwner {
            released,
            ..owner.clone()
        };
        let rank = |r: &HostOwner| (r.released.is_some(), r.since, r.namespace.clone());
        next.entry(owner.host.clone())
            .and_modify(|kept| {
                if rank(&record) < rank(kept) {
                    *kept = record.clone();
                }
            })
            .or_insert(record);
    }
    for (namespace, host) in ownership.admitted_hosts() {
        let fresh = || HostOwner {
            host: host.to_owned(),
            namespace: namespace.to_owned(),
            since: now,
            released: None,
        };
        next.entry(host.to_owned())
            .and_modify(|kept| {
                if kept.namespace != namespace {
                    *kept = fresh();
                }
            })
            .or_insert_with(fresh);
    }
    next.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Claim, Holder, decide};
    use super::*;
    use crate::{Route, WorkerKey};

    fn claim(namespace: &str, name: &str, since: i128, host: &str) -> Claim {
        Claim {
            worker: WorkerKey::new(namespace, name),
            since: Some(since),
            routes: vec![Route::new(host, "/")],
        }
    }

    fn owner(host: &str, namespace: &str, since: i128, released: Option<i128>) -> HostOwner {
        HostOwner {
            host: host.to_owned(),
            namespace: namespace.to_owned(),
            since,
            released,
        }
    }

    #[test]
    fn a_recorded_host_survives_its_owners_redeploy() {
        // b owns h; a squats on it and on a wildcard over it, both refused.
        let squat = claim("a", "squat", 5, "h.parent.test");
        let wild = claim("a", "wild", 6, "*.parent.test");
        let w1 = claim("b", "w1", 1, "h.parent.test");
        let first = decide([w1, squat.clone(), wild.clone()], &[], &[]);
        let owners = next_owners(&first, &[], 10, 100);
        assert_eq!(owners, [owner("h.parent.test", "b", 10, None)]);

        // b replaces w1 by w2 (younger than both of a's claims): b keeps h.
        let w2 = claim("b", "w2", 20, "h.parent.test");
        let after = decide([w2.clone(), squat.clone(), wild.clone()], &[], &owners);
        assert!(after.lost(&w2.worker).is_empty());
        assert_eq!(after.lost(&squat.worker).len(), 1);
        assert_eq!(after.lost(&wild.worker).len(), 1);

        // b deletes first: h is held for b, released from now on.
        let gap = decide([squat.clone(), wild.clone()], &[], &owners);
        let held = Holder::Held {
            namespace: "b".into(),
            host: "h.parent.test".into(),
        };
        assert_eq!(gap.lost(&squat.worker)[0].1, held);
        assert_eq!(gap.lost(&wild.worker)[0].1, held);
        assert_eq!(
            held.to_string(),
            "is not admitted: host h.parent.test is held for namespace b, its owner, until released"
        );
        let released = next_owners(&gap, &owners, 30, 100);
        assert_eq!(released, [owner("h.parent.test", "b", 10, Some(30))]);
        // Still held at the end of the grace period, kept when claimed again.
        assert_eq!(next_owners(&gap, &released, 129, 100), released);
        let back = decide([w2, squat.clone()], &[], &released);
        assert_eq!(next_owners(&back, &released, 129, 100), owners);
        // Gone after it: the next decision is by age alone.
        assert!(next_owners(&gap, &released, 130, 100).is_empty());
        let free = decide([squat.clone(), wild], &[], &[]);
        assert!(free.lost(&squat.worker).is_empty());
    }

    #[test]
    fn records_yield_to_reservations_and_to_older_records() {
        let reservation: Reservation = "h.test=c".parse().unwrap();
        let b = claim("b", "w", 1, "h.test");
        let ownership = decide(
            [b.clone()],
            std::slice::from_ref(&reservation),
            &[owner("h.test", "b", 1, None)],
        );
        assert_eq!(
            ownership.lost(&b.worker)[0].1,
            Holder::Reserved(reservation)
        );
        // Two records overlap (an admin's edit): the older one holds.
        let a = claim("a", "w", 1, "*.test");
        let records = [owner("*.test", "a", 2, None), owner("h.test", "b", 1, None)];
        let ownership = decide([a.clone(), b.clone()], &[], &records);
        assert!(ownership.lost(&b.worker).is_empty());
        assert_eq!(ownership.lost(&a.worker).len(), 1);
        // The void record is released, and dropped after the grace period.
        let next = next_owners(&ownership, &records, 7, 10);
        assert_eq!(
            next,
            [
                owner("*.test", "a", 2, Some(7)),
                owner("h.test", "b", 1, None)
            ]
        );
    }
}
