//! Properties of the route-ownership rule (`isolane_worker::decide`) over
//! random claims on a small set of overlapping hosts and prefixes, so
//! conflicts are the rule rather than the exception.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use isolane_worker::{
    Claim, Holder, HostOwner, Ownership, Reservation, Route, WorkerKey, decide, normalize_host,
    overlap,
};
use proptest::prelude::*;

/// Hosts that overlap one another in every way the rule knows, with
/// spellings that normalise to the same host.
const HOSTS: &[&str] = &[
    "example.test",
    "*.example.test",
    "a.example.test",
    "A.Example.test.",
    "b.example.test",
    "*.a.example.test",
    "x.a.example.test",
    "other.test",
    "*.other.test",
    "w.other.test",
];
const PREFIXES: &[&str] = &["/", "/api", "/api/v1"];
const NAMESPACES: &[&str] = &["a", "b", "c"];

/// Claims of distinct Workers (up to four names per namespace).
fn claims() -> impl Strategy<Value = Vec<Claim>> {
    let routes = prop::collection::vec((0..HOSTS.len(), 0..PREFIXES.len()), 0..4);
    prop::collection::vec(
        (
            0..NAMESPACES.len(),
            0..4usize,
            prop::option::weighted(0.9, 0i128..20),
            routes,
        ),
        0..14,
    )
    .prop_map(|raw| {
        let mut claims: BTreeMap<WorkerKey, Claim> = BTreeMap::new();
        for (ns, name, since, routes) in raw {
            let worker = WorkerKey::new(NAMESPACES[ns], format!("w{name}"));
            let routes = routes
                .into_iter()
                .map(|(h, p)| Route::new(HOSTS[h], PREFIXES[p]))
                .collect();
            claims.entry(worker.clone()).or_insert(Claim {
                worker,
                since,
                routes,
            });
        }
        claims.into_values().collect()
    })
}

fn reservations() -> impl Strategy<Value = Vec<Reservation>> {
    prop::collection::vec((0..NAMESPACES.len(), 0..HOSTS.len()), 0..2).prop_map(|raw| {
        raw.into_iter()
            .map(|(ns, host)| Reservation {
                host: normalize_host(HOSTS[host]),
                namespace: NAMESPACES[ns].to_owned(),
            })
            .collect()
    })
}

/// Recorded owners, possibly overlapping one another (an admin's edits).
fn owners() -> impl Strategy<Value = Vec<HostOwner>> {
    prop::collection::vec((0..NAMESPACES.len(), 0..HOSTS.len(), 0i128..20), 0..3).prop_map(|raw| {
        raw.into_iter()
            .map(|(ns, host, since)| HostOwner {
                host: normalize_host(HOSTS[host]),
                namespace: NAMESPACES[ns].to_owned(),
                since,
                released: None,
            })
            .collect()
    })
}

/// Every admitted (Worker, normalised host, prefix).
fn admitted(ownership: &Ownership) -> Vec<(WorkerKey, String, String)> {
    ownership
        .admitted()
        .map(|(worker, route)| {
            (
                worker.clone(),
                normalize_host(&route.host),
                route.path_prefix.clone(),
            )
        })
        .collect()
}

/// Every decision, as owned values, leaving out `except`'s.
fn decisions(ownership: &Ownership, except: &WorkerKey) -> Vec<(WorkerKey, Route, Option<Holder>)> {
    ownership
        .decisions()
        .filter(|(worker, _, _)| *worker != except)
        .map(|(worker, route, holder)| (worker.clone(), route.clone(), holder.cloned()))
        .collect()
}

/// The order in which claims are aged: unknown last, then by key.
fn age(claim: &Claim) -> (bool, Option<i128>, &WorkerKey) {
    (claim.since.is_none(), claim.since, &claim.worker)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The order claims, reservations and records arrive in changes nothing.
    #[test]
    fn order_does_not_matter(
        (claims, shuffled) in claims().prop_flat_map(|c| (Just(c.clone()), Just(c).prop_shuffle())),
        (reservations, shuffled_reservations) in
            reservations().prop_flat_map(|r| (Just(r.clone()), Just(r).prop_shuffle())),
        (owners, shuffled_owners) in
            owners().prop_flat_map(|o| (Just(o.clone()), Just(o).prop_shuffle())),
    ) {
        prop_assert_eq!(
            decide(claims, &reservations, &owners),
            decide(shuffled, &shuffled_reservations, &shuffled_owners)
        );
    }

    /// Every claimed route is decided once, admitted or with a holder.
    #[test]
    fn every_route_is_decided(claims in claims(), reservations in reservations()) {
        let ownership = decide(claims.clone(), &reservations, &[]);
        for claim in &claims {
            prop_assert_eq!(
                ownership.routes(&claim.worker).len(),
                Route::distinct(&claim.routes).len()
            );
        }
    }

    /// A host + prefix (host normalised) is admitted to one Worker at most,
    /// and `owner` names it.
    #[test]
    fn a_route_is_admitted_to_one_worker_at_most(claims in claims(), reservations in reservations()) {
        let ownership = decide(claims, &reservations, &[]);
        let mut owners: BTreeMap<(String, String), BTreeSet<WorkerKey>> = BTreeMap::new();
        for (worker, host, prefix) in admitted(&ownership) {
            owners.entry((host, prefix)).or_default().insert(worker);
        }
        for ((host, prefix), workers) in owners {
            prop_assert_eq!(workers.len(), 1, "{}{} admitted to {:?}", host, prefix, workers);
            prop_assert_eq!(
                ownership.owner(&Route::new(host, prefix)),
                workers.first()
            );
        }
    }

    /// Overlapping hosts (equal, or a wildcard and a host one label under
    /// it) are admitted to one namespace at most, and a reserved host to
    /// its namespace only.
    #[test]
    fn a_host_is_admitted_to_one_namespace_at_most(
        claims in claims(),
        reservations in reservations(),
        owners in owners(),
    ) {
        let ok = admitted(&decide(claims, &reservations, &owners));
        for (a, host_a, _) in &ok {
            for (b, host_b, _) in &ok {
                prop_assert!(a.namespace == b.namespace || !overlap(host_a, host_b),
                    "{a}:{host_a} and {b}:{host_b} both admitted");
            }
            for r in &reservations {
                prop_assert!(r.namespace == a.namespace || !r.covers(host_a),
                    "{a}:{host_a} admitted under {r:?}");
            }
        }
    }

    /// Every refusal names a real holder: an older (or equally old, sorting
    /// first) Worker of the namespace admitted on the route, an admitted
    /// Worker of another namespace on an overlapping host, or a reservation
    /// for another namespace covering the host.
    #[test]
    fn refusals_name_who_holds_the_route(
        claims in claims(),
        reservations in reservations(),
        owners in owners(),
    ) {
        let ownership = decide(claims.clone(), &reservations, &owners);
        let ok = admitted(&ownership);
        let by_key: BTreeMap<&WorkerKey, &Claim> = claims.iter().map(|c| (&c.worker, c)).collect();
        for (worker, route, holder) in ownership.decisions() {
            let host = normalize_host(&route.host);
            match holder {
                None => {}
                Some(Holder::OlderWorker(older)) => {
                    prop_assert_eq!(&older.namespace, &worker.namespace);
                    prop_assert!(age(by_key[older]) < age(by_key[worker]));
                    prop_assert!(ok.contains(&(older.clone(), host, route.path_prefix.clone())));
                }
                Some(Holder::Namespace { worker: other, host: theirs }) => {
                    prop_assert!(other.namespace != worker.namespace);
                    prop_assert!(overlap(theirs, &host));
                    // Admitted, or recorded and claimed (maybe under
                    // prefixes an older Worker of its namespace holds).
                    prop_assert!(
                        ok.iter().any(|(w, h, _)| w.namespace == other.namespace && h == theirs)
                            || owners.iter().any(|o| o.namespace == other.namespace && o.host == *theirs)
                    );
                }
                Some(Holder::Reserved(reservation)) => {
                    prop_assert!(reservation.namespace != worker.namespace);
                    prop_assert!(reservations.contains(reservation) && reservation.covers(&host));
                }
                Some(Holder::Held { namespace, host: theirs }) => {
                    // A record of another namespace no Worker of it claims.
                    prop_assert!(*namespace != worker.namespace);
                    prop_assert!(overlap(theirs, &host));
                    prop_assert!(owners.iter().any(|o| o.namespace == *namespace && o.host == *theirs));
                    prop_assert!(!ok.iter().any(|(w, h, _)| w.namespace == *namespace && h == theirs));
                }
            }
        }
    }

    /// A claim younger than a Worker never takes an admitted route from it.
    #[test]
    fn a_younger_claim_takes_nothing_from_older_workers(
        claims in claims(),
        reservations in reservations(),
        since in 0i128..22,
        routes in prop::collection::vec((0..HOSTS.len(), 0..PREFIXES.len()), 1..4),
        ns in 0..NAMESPACES.len(),
    ) {
        let before = decide(claims.clone(), &reservations, &[]);
        let newcomer = Claim {
            worker: WorkerKey::new(NAMESPACES[ns], "newcomer"),
            since: Some(since),
            routes: routes.into_iter().map(|(h, p)| Route::new(HOSTS[h], PREFIXES[p])).collect(),
        };
        let after = decide(claims.iter().cloned().chain([newcomer]), &reservations, &[]);
        let older: BTreeSet<&WorkerKey> = claims
            .iter()
            .filter(|c| c.since.is_some_and(|s| s < since))
            .map(|c| &c.worker)
            .collect();
        let still = admitted(&after);
        for kept in admitted(&before).into_iter().filter(|(w, _, _)| older.contains(w)) {
            prop_assert!(still.contains(&kept), "{kept:?} taken by a younger claim");
        }
    }

    /// Removing a Worker that won nothing changes no other decision.
    #[test]
    fn a_claim_that_won_nothing_changes_nothing(claims in claims(), reservations in reservations()) {
        let all = decide(claims.clone(), &reservations, &[]);
        for loser in claims.iter().filter(|c| all.routes(&c.worker).iter().all(|(_, h)| h.is_some())) {
            let rest = claims.iter().filter(|c| c.worker != loser.worker).cloned();
            let without = decide(rest, &reservations, &[]);
            prop_assert_eq!(decisions(&all, &loser.worker), decisions(&without, &loser.worker));
        }
    }

    /// A claim on a host nobody else touches is admitted and changes nothing.
    #[test]
    fn an_unrelated_claim_is_admitted_and_changes_nothing(claims in claims(), reservations in reservations()) {
        let before = decide(claims.clone(), &reservations, &[]);
        let stranger = WorkerKey::new("d", "stranger");
        let after = decide(
            claims.into_iter().chain([Claim {
                worker: stranger.clone(),
                since: Some(-1),
                routes: vec![Route::new("unrelated.test", "/")],
            }]),
            &reservations,
            &[],
        );
        prop_assert_eq!(decisions(&before, &stranger), decisions(&after, &stranger));
        prop_assert!(after.lost(&stranger).is_empty());
    }
}
