//! Properties of the ownership rule over random claims on a small set of
//! overlapping hosts.
#![allow(clippy::unwrap_used)]

use isolane_hosts::{Claim, Owner, Reservation, decide, overlap};
use proptest::prelude::*;

const HOSTS: &[&str] = &[
    "example.test",
    "*.example.test",
    "a.example.test",
    "b.example.test",
    "*.a.example.test",
    "x.a.example.test",
    "other.test",
    "*.other.test",
    "w.other.test",
];
const NAMESPACES: &[&str] = &["a", "b", "c"];

fn claims() -> impl Strategy<Value = Vec<Claim>> {
    prop::collection::vec(
        (
            0..NAMESPACES.len(),
            0..HOSTS.len(),
            prop::option::of(0i128..20),
            0u8..3,
        ),
        0..24,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .map(|(ns, host, since, worker)| Claim {
                namespace: NAMESPACES[ns].to_owned(),
                host: HOSTS[host].to_owned(),
                since,
                worker: format!("w{worker}"),
            })
            .collect()
    })
}

fn reservations() -> impl Strategy<Value = Vec<Reservation>> {
    prop::collection::vec((0..NAMESPACES.len(), 0..HOSTS.len()), 0..2).prop_map(|raw| {
        raw.into_iter()
            .map(|(ns, host)| Reservation {
                host: HOSTS[host].to_owned(),
                namespace: NAMESPACES[ns].to_owned(),
            })
            .collect()
    })
}

fn admitted(claims: &[Claim], owners: &isolane_hosts::Owners) -> Vec<(String, String)> {
    let mut out: Vec<_> = claims
        .iter()
        .filter(|c| owners.check(&c.namespace, &c.host).is_ok())
        .map(|c| (c.namespace.clone(), c.host.clone()))
        .collect();
    out.sort();
    out.dedup();
    out
}

proptest! {
    /// No host is served by two namespaces.
    #[test]
    fn no_two_namespaces_share_a_host(claims in claims(), reservations in reservations()) {
        let owners = decide(claims.clone(), &reservations);
        let ok = admitted(&claims, &owners);
        for (ns_a, host_a) in &ok {
            for (ns_b, host_b) in &ok {
                prop_assert!(ns_a == ns_b || !overlap(host_a, host_b),
                    "{ns_a}:{host_a} and {ns_b}:{host_b} both admitted");
            }
            for r in &reservations {
                prop_assert!(r.namespace == *ns_a || !r.covers(host_a));
            }
        }
    }

    /// The order claims arrive in changes nothing.
    #[test]
    fn order_does_not_matter(claims in claims(), reservations in reservations(), seed in any::<u64>()) {
        let mut shuffled = claims.clone();
        let n = shuffled.len();
        if n > 1 {
            for i in 0..n {
                let j = (seed.wrapping_mul(i as u64 + 7) % n as u64) as usize;
                shuffled.swap(i, j);
            }
        }
        prop_assert_eq!(decide(claims, &reservations), decide(shuffled, &reservations));
    }

    /// Every refusal names a real holder: a reservation covering the host, or
    /// an admitted, overlapping claim of another namespace.
    #[test]
    fn refusals_name_who_holds_the_host(claims in claims(), reservations in reservations()) {
        let owners = decide(claims.clone(), &reservations);
        let ok = admitted(&claims, &owners);
        for claim in &claims {
            if let Err(owner) = owners.check(&claim.namespace, &claim.host) {
                match owner {
                    Owner::Reserved { namespace, host } => {
                        prop_assert!(*namespace != claim.namespace);
                        prop_assert!(reservations.iter().any(|r| r.host == *host && r.covers(&claim.host)));
                    }
                    Owner::Worker { namespace, host, .. } => {
                        prop_assert!(*namespace != claim.namespace);
                        prop_assert!(overlap(host, &claim.host));
                        prop_assert!(ok.contains(&(namespace.clone(), host.clone())));
                    }
                }
            }
        }
    }

    /// A claim on a host nobody else touches never changes other decisions.
    #[test]
    fn an_unrelated_claim_changes_nothing(claims in claims(), reservations in reservations()) {
        let before = decide(claims.clone(), &reservations);
        let mut more = claims.clone();
        more.push(Claim {
            namespace: "d".into(),
            host: "unrelated.test".into(),
            since: Some(-1),
            worker: "w".into(),
        });
        let after = decide(more, &reservations);
        for claim in &claims {
            prop_assert_eq!(
                before.check(&claim.namespace, &claim.host).is_ok(),
                after.check(&claim.namespace, &claim.host).is_ok()
            );
        }
        prop_assert!(after.check("d", "unrelated.test").is_ok());
    }
}
