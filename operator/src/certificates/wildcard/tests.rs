use super::*;
use crate::certificates::IssuerKind;

fn reservations(list: &[&str]) -> Vec<Reservation> {
    list.iter().map(|r| r.parse().unwrap()).collect()
}

fn settings(mode: Mode, reserved: &[&str]) -> CertificateSettings {
    CertificateSettings {
        issuer: "ca".to_owned(),
        issuer_kind: IssuerKind::ClusterIssuer,
        mode,
        wildcard_issuer: crate::certificates::Issuer {
            name: "ca".to_owned(),
            kind: IssuerKind::ClusterIssuer,
        },
        reservations: reservations(reserved),
    }
}

fn hosts(list: &[&str]) -> Vec<String> {
    list.iter().map(|h| (*h).to_owned()).collect()
}

#[test]
fn hosts_one_label_under_a_held_domain_are_covered_the_others_are_not() {
    let settings = settings(Mode::Wildcard, &["*.team-a.example.com=team-a"]);
    let admitted = hosts(&[
        "a.team-a.example.com",
        "B.Team-A.example.com.",
        "deep.b.team-a.example.com",
        "shop.other.test",
        "*.team-a.example.com",
        "*.x.team-a.example.com",
        "*.other.test",
    ]);
    let split = split(&admitted, "team-a", &settings);
    let covered = &split.wildcard["team-a.example.com"];
    assert_eq!(
        covered,
        &hosts(&[
            "a.team-a.example.com",
            "B.Team-A.example.com.",
            "*.team-a.example.com"
        ])
    );
    assert_eq!(split.wildcard.len(), 1);
    assert_eq!(
        split.per_host,
        hosts(&["deep.b.team-a.example.com", "shop.other.test"])
    );
    assert_eq!(
        split.uncovered,
        hosts(&["*.x.team-a.example.com", "*.other.test"])
    );
}

#[test]
fn per_host_mode_covers_nothing() {
    let settings = settings(Mode::PerHost, &["*.team-a.example.com=team-a"]);
    let split = split(
        &hosts(&["a.team-a.example.com", "*.team-a.example.com"]),
        "team-a",
        &settings,
    );
    assert!(split.wildcard.is_empty());
    assert_eq!(split.per_host, hosts(&["a.team-a.example.com"]));
    assert_eq!(split.uncovered, hosts(&["*.team-a.example.com"]));
}

#[test]
fn a_domain_is_held_only_through_a_reservation_no_other_namespace_shares() {
    let own = reservations(&["*.team-a.example.com=team-a"]);
    assert!(holds("team-a", "team-a.example.com", &own));
    // The reservation is another namespace's.
    assert!(!holds("team-b", "team-a.example.com", &own));
    assert_eq!(
        covering_domain("c.team-a.example.com", "team-b", &own),
        None
    );
    // No reservation at all: an exact host's parent is not held.
    assert!(!holds("team-a", "other.test", &own));
    // A host under the domain reserved for another namespace: a wildcard
    // would be valid for it.
    let carved = reservations(&[
        "*.team-a.example.com=team-a",
        "pay.team-a.example.com=team-c",
    ]);
    assert!(!holds("team-a", "team-a.example.com", &carved));
    // So is a reservation of a wider domain for another namespace.
    let wider = reservations(&["*.team-a.example.com=team-a", "*.example.com=team-b"]);
    assert!(!holds("team-a", "team-a.example.com", &wider));
    // A deeper one takes no host one label under the domain.
    let deeper = reservations(&[
        "*.team-a.example.com=team-a",
        "*.x.team-a.example.com=team-c",
        "team-a.example.com=team-c",
    ]);
    assert!(holds("team-a", "team-a.example.com", &deeper));
    assert_eq!(held_domains("team-a", &deeper), ["team-a.example.com"]);
    assert!(held_domains("team-c", &deeper).is_empty());
}

#[test]
fn the_desired_wildcards_are_the_held_domains_in_use_with_their_workers() {
    let reserved = reservations(&["*.team-a.example.com=team-a", "*.b.test=team-b"]);
    let a = WorkerKey::new("team-a", "a");
    let b = WorkerKey::new("team-a", "b");
    let c = WorkerKey::new("team-a", "c");
    let other = WorkerKey::new("team-b", "d");
    let workers = [
        (
            a.clone(),
            hosts(&["a.team-a.example.com", "shop.other.test"]),
        ),
        (b.clone(), hosts(&["*.team-a.example.com"])),
        (
            c.clone(),
            hosts(&["deep.x.team-a.example.com", "shop.b.test"]),
        ),
        (other.clone(), hosts(&["shop.b.test"])),
    ];
    let view = workers.iter().map(|(k, h)| (k, h.as_slice()));
    let wanted = desired_wildcards("team-a", &reserved, view);
    let expected: BTreeMap<String, BTreeSet<WorkerKey>> =
        [("team-a.example.com".to_owned(), [a, b].into())].into();
    assert_eq!(wanted, expected);
    let view = workers.iter().map(|(k, h)| (k, h.as_slice()));
    let wanted = desired_wildcards("team-b", &reserved, view);
    assert_eq!(wanted.keys().collect::<Vec<_>>(), ["b.test"]);
    assert_eq!(wanted["b.test"], [other].into());
    // No Worker on the domain: no Certificate.
    assert!(desired_wildcards("team-a", &reserved, std::iter::empty()).is_empty());
}

#[test]
fn after_a_switch_to_per_host_a_wildcard_waits_for_its_hosts_own_certificates() {
    let reserved = reservations(&["*.team-a.example.com=team-a"]);
    let a = WorkerKey::new("team-a", "a");
    let star = WorkerKey::new("team-a", "star");
    let workers = [
        (
            a.clone(),
            hosts(&["x.team-a.example.com", "shop.other.test"]),
        ),
        (star, hosts(&["*.team-a.example.com"])),
    ];
    let view = || workers.iter().map(|(k, h)| (k, h.as_slice()));
    let none = BTreeSet::new();
    let waiting = awaiting("team-a", &reserved, view(), &none);
    assert_eq!(waiting, ["team-a.example.com".to_owned()].into());
    // The covered exact host's own Certificate is Ready: nothing to wait
    // for (the wildcard route gets none, and is not waited for).
    let ready = [crate::certificates::certificate_name(
        "a",
        "x.team-a.example.com",
    )]
    .into();
    assert!(awaiting("team-a", &reserved, view(), &ready).is_empty());
}
