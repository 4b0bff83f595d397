//! Route ownership: which Worker, if any, serves each route several Workers
//! claim. [`decide`] is the whole rule, one pure function used alike by the
//! operator's status (`RoutesAdmitted`), its admission webhook and the
//! router's route table, so they can never disagree.
//!
//! Two steps, in order:
//! 1. **A host belongs to one namespace** (`ownership/hosts.rs`): a host —
//!    every path under it, and any wildcard that covers it — is served by
//!    Workers of at most one namespace: the one [recorded](HostOwner) as its
//!    owner (`ownership/owners.rs`: a host admitted to a namespace stays its
//!    own while any of its Workers claims it, and for a grace period after
//!    the last one goes), else the one whose claim on it is oldest (its
//!    oldest Worker's creation time, then the namespace name). Another
//!    namespace's claim on an overlapping host (equal, or a wildcard and a
//!    host one label under it), or one on a host the platform admin
//!    [reserved](Reservation) for another namespace, is not admitted.
//! 2. **Within a namespace, age**: of the Workers whose host was admitted,
//!    the oldest (creation time, then `namespace/name`) keeps a host + path
//!    prefix; the others do not get it.
//!
//! Hosts are compared normalised (lower case, no trailing dot); prefixes as
//! written. A claim with an unknown creation time is younger than every
//! known one.

mod hosts;
mod owners;
mod reservation;

use std::collections::BTreeMap;
use std::fmt;

pub use hosts::overlap;
pub use owners::{HostOwner, next_owners};
pub use reservation::{ParseReservationError, Reservation};

use crate::{Route, WorkerKey, normalize_host};

/// One Worker's claim on its routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The Worker.
    pub worker: WorkerKey,
    /// When it was created, in any unit that orders (the operator and the
    /// router use nanoseconds since the epoch); `None`: unknown, younger
    /// than every known time.
    pub since: Option<i128>,
    /// Its routes, as declared.
    pub routes: Vec<Route>,
}

/// Who holds a route a Worker does not get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// An older Worker of the same namespace claims the same host + prefix
    /// (or, at equal age, one whose name sorts first).
    OlderWorker(WorkerKey),
    /// The host belongs to another namespace: `worker`, its oldest Worker
    /// on `host`, which overlaps the claimed host.
    Namespace { worker: WorkerKey, host: String },
    /// The host is reserved for another namespace.
    Reserved(Reservation),
    /// The host is recorded as another namespace's, `namespace`, which no
    /// longer claims it: held for it until the grace period ends or an
    /// admin releases it. `host` overlaps the claimed host.
    Held { namespace: String, host: String },
}

/// Completes "route `r` …", as in `RoutesAdmitted`'s message.
impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::OlderWorker(key) => write!(f, "is held by older Worker {key}"),
            Holder::Namespace { worker, host } => write!(
                f,
                "is not admitted: host {host} belongs to namespace {} (Worker {worker})",
                worker.namespace
            ),
            Holder::Reserved(reservation) => write!(
                f,
                "is not admitted: host {} is reserved for namespace {}",
                reservation.host, reservation.namespace
            ),
            Holder::Held { namespace, host } => write!(
                f,
                "is not admitted: host {host} is held for namespace {namespace}, its owner, until released"
            ),
        }
    }
}

/// How old a claim is: unknown ages sort last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Age {
    unknown: bool,
    since: Option<i128>,
}

impl Age {
    fn of(since: Option<i128>) -> Self {
        Self {
            unknown: since.is_none(),
            since,
        }
    }
}

/// The decision over every claim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Each Worker's distinct routes, in declaration order, each with
    /// `None` if admitted, else who holds it.
    workers: BTreeMap<WorkerKey, Vec<(Route, Option<Holder>)>>,
    /// Normalised (host, prefix) → the Worker admitted on it.
    owners: BTreeMap<(String, String), WorkerKey>,
    /// (namespace, normalised host pattern) claimed → `None` if admitted,
    /// else who holds the host.
    hosts: hosts::HostDecisions,
}

impl Ownership {
    /// `worker`'s routes, each with `None` if admitted, else who holds it
    /// (nothing for a Worker that claimed nothing).
    pub fn routes(&self, worker: &WorkerKey) -> &[(Route, Option<Holder>)] {
        self.workers.get(worker).map_or(&[], Vec::as_slice)
    }

    /// The routes `worker` does not get, each with who holds it.
    pub fn lost(&self, worker: &WorkerKey) -> Vec<(Route, Holder)> {
        self.routes(worker)
            .iter()
            .filter_map(|(route, holder)| Some((route.clone(), holder.clone()?)))
            .collect()
    }

    /// Every (Worker, route) claimed, with `None` if admitted, else who
    /// holds it; by Worker, then in declaration order.
    pub fn decisions(&self) -> impl Iterator<Item = (&WorkerKey, &Route, Option<&Holder>)> {
        self.workers.iter().flat_map(|(worker, routes)| {
            routes
                .iter()
                .map(move |(route, holder)| (worker, route, holder.as_ref()))
        })
    }

    /// Every admitted (Worker, route).
    pub fn admitted(&self) -> impl Iterator<Item = (&WorkerKey, &Route)> {
        self.decisions()
            .filter(|(_, _, holder)| holder.is_none())
            .map(|(worker, route, _)| (worker, route))
    }

    /// Whether `namespace`'s claim on the (normalised) host pattern `host`
    /// was admitted: some Worker of it claims the host, and it holds it.
    pub fn host_admitted(&self, namespace: &str, host: &str) -> bool {
        self.hosts
            .get(&(namespace.to_owned(), host.to_owned()))
            .is_some_and(Option::is_none)
    }

    /// Every (namespace, normalised host pattern) admitted to a claim.
    pub fn admitted_hosts(&self) -> impl Iterator<Item = (&str, &str)> {
        self.hosts
            .iter()
            .filter(|(_, holder)| holder.is_none())
            .map(|((namespace, host), _)| (namespace.as_str(), host.as_str()))
    }

    /// The Worker admitted on `route` (its host normalised), if any.
    pub fn owner(&self, route: &Route) -> Option<&WorkerKey> {
        self.owners
            .get(&(normalize_host(&route.host), route.path_prefix.clone()))
    }
}

/// Decides every claim: see the module documentation. Pass one claim per
/// Worker, and none for Workers being deleted (their routes pass on as soon
/// as deletion starts); a second claim with the same key adds its routes to
/// the first's and keeps the older time. `reservations`: hosts reserved for
/// namespaces; `owners`: hosts recorded as namespaces' (`next_owners`). The
/// result does not depend on the order of any of them.
pub fn decide(
    claims: impl IntoIterator<Item = Claim>,
    reservations: &[Reservation],
    owners: &[HostOwner],
) -> Ownership {
    let claims = merge(claims);
    let host_claims = claims.iter().flat_map(|(worker, (age, routes))| {
        routes.iter().map(|route| hosts::HostClaim {
            age: *age,
            worker: worker.clone(),
            host: normalize_host(&route.host),
        })
    });
    let hosts = hosts::decide(host_claims, reservations, owners);
    let host_holder = |worker: &WorkerKey, route: &Route| {
        hosts
            .get(&(worker.namespace.clone(), normalize_host(&route.host)))
            .cloned()
            .flatten()
    };

    let owners = oldest_per_route(&claims, &host_holder);
    let workers = claims
        .iter()
        .map(|(worker, (_, routes))| {
            let decided = routes
                .iter()
                .map(|route| {
                    let holder = host_holder(worker, route).or_else(|| {
                        let key = (normalize_host(&route.host), route.path_prefix.clone());
                        owners
                            .get(&key)
                            .filter(|(_, owner)| *owner != worker)
                            .map(|(_, owner)| Holder::OlderWorker((*owner).clone()))
                    });
                    (route.clone(), holder)
                })
                .collect();
            (worker.clone(), decided)
        })
        .collect();
    let owners = owners
        .into_iter()
        .map(|(route, (_, worker))| (route, worker.clone()))
        .collect();
    Ownership {
        workers,
        owners,
        hosts,
    }
}

/// Within a namespace: the oldest Worker whose host was admitted keeps
/// each host + prefix (other namespaces' claims on it were refused, and
/// `host_holder` names who holds them).
fn oldest_per_route<'a>(
    claims: &'a BTreeMap<WorkerKey, (Age, Vec<Route>)>,
    host_holder: &impl Fn(&WorkerKey, &Route) -> Option<Holder>,
) -> BTreeMap<(String, String), (Age, &'a WorkerKey)> {
    let mut owners: BTreeMap<(String, String), (Age, &WorkerKey)> = BTreeMap::new();
    for (worker, (age, routes)) in claims {
        for route in routes {
            if host_holder(worker, route).is_some() {
                continue;
            }
            let key = (normalize_host(&route.host), route.path_prefix.clone());
            let candidate = (*age, worker);
            owners
                .entry(key)
                .and_modify(|owner| *owner = (*owner).min(candidate))
                .or_insert(candidate);
        }
    }
    owners
}

/// One entry per Worker: its age and distinct routes.
fn merge(claims: impl IntoIterator<Item = Claim>) -> BTreeMap<WorkerKey, (Age, Vec<Route>)> {
    let mut merged: BTreeMap<WorkerKey, (Age, Vec<Route>)> = BTreeMap::new();
    for claim in claims {
        let (age, routes) = merged
            .entry(claim.worker)
            .or_insert_with(|| (Age::of(claim.since), Vec::new()));
        *age = (*age).min(Age::of(claim.since));
        routes.extend(claim.routes);
        *routes = Route::distinct(routes);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(worker: &str, since: Option<i128>, routes: &[(&str, &str)]) -> Claim {
        let (namespace, name) = worker.split_once('/').unwrap();
        Claim {
            worker: WorkerKey::new(namespace, name),
            since,
            routes: routes.iter().map(|(h, p)| Route::new(*h, *p)).collect(),
        }
    }

    fn key(worker: &str) -> WorkerKey {
        let (namespace, name) = worker.split_once('/').unwrap();
        WorkerKey::new(namespace, name)
    }

    fn lost(ownership: &Ownership, worker: &str) -> Vec<String> {
        ownership
            .lost(&key(worker))
            .iter()
            .map(|(route, holder)| format!("route {route} {holder}"))
            .collect()
    }

    #[test]
    fn the_oldest_claimant_owns_a_route_then_the_name_breaks_ties() {
        let r = [("a.example.com", "/")];
        let claims = [
            claim("a/new", Some(20), &r),
            claim("a/twin", Some(10), &r),
            claim("a/a", None, &r),
            claim("a/old", Some(10), &r),
        ];
        let ownership = decide(claims.clone(), &[], &[]);
        // a/old and a/twin are as old; a/old sorts first.
        assert_eq!(
            ownership.owner(&Route::new("a.example.com", "/")),
            Some(&key("a/old"))
        );
        for loser in ["a/new", "a/twin", "a/a"] {
            assert_eq!(
                lost(&ownership, loser),
                ["route a.example.com/ is held by older Worker a/old"]
            );
        }
        assert!(ownership.lost(&key("a/old")).is_empty());
        // Without the older ones, the unknown age loses to any known one.
        let ownership = decide([claims[0].clone(), claims[2].clone()], &[], &[]);
        assert_eq!(
            ownership.owner(&Route::new("A.example.com.", "/")),
            Some(&key("a/new"))
        );
    }

    #[test]
    fn the_older_namespace_keeps_a_host_and_every_wildcard_over_it() {
        let ownership = decide(
            [
                claim("b/site", Some(1), &[("victim.example", "/")]),
                claim("a/thief", Some(2), &[("victim.example", "/login")]),
                claim("a/wild", Some(3), &[("*.example", "/")]),
                claim("c/other", Some(4), &[("other.example", "/")]),
                claim("b/login", Some(5), &[("login.victim.example", "/")]),
            ],
            &[],
            &[],
        );
        assert!(ownership.lost(&key("b/site")).is_empty());
        assert_eq!(
            lost(&ownership, "a/thief"),
            [
                "route victim.example/login is not admitted: host victim.example belongs to namespace b (Worker b/site)"
            ]
        );
        // `*.example` covers victim.example, held by b.
        assert_eq!(
            lost(&ownership, "a/wild"),
            [
                "route *.example/ is not admitted: host victim.example belongs to namespace b (Worker b/site)"
            ]
        );
        assert!(ownership.lost(&key("c/other")).is_empty());
        assert!(ownership.lost(&key("b/login")).is_empty());
        assert_eq!(
            ownership.owner(&Route::new("victim.example", "/login")),
            None
        );
    }

    #[test]
    fn the_age_of_a_host_is_its_namespaces_oldest_worker() {
        // z/old is older than a/twin, but namespace a's claim on the host is
        // as old (a/first) and its name sorts first: z's claim is refused.
        let ownership = decide(
            [
                claim("z/old", Some(10), &[("a.example.com", "/")]),
                claim("a/twin", Some(20), &[("a.example.com", "/")]),
                claim("a/first", Some(10), &[("a.example.com", "/x")]),
            ],
            &[],
            &[],
        );
        assert_eq!(
            lost(&ownership, "z/old"),
            [
                "route a.example.com/ is not admitted: host a.example.com belongs to namespace a (Worker a/first)"
            ]
        );
        assert!(ownership.lost(&key("a/twin")).is_empty());
    }

    #[test]
    fn reservations_keep_other_namespaces_out() {
        let reservations: Vec<Reservation> = ["*.corp.example=team-a", "corp.example=team-a"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        let ownership = decide(
            [
                claim("team-b/x", Some(1), &[("x.corp.example", "/")]),
                claim("team-b/wild", Some(2), &[("*.a.corp.example", "/")]),
                claim("team-b/apex", Some(3), &[("corp.example", "/")]),
                claim("team-a/y", Some(4), &[("y.corp.example", "/")]),
                claim("team-b/own", Some(5), &[("corpexample.com", "/")]),
            ],
            &reservations,
            &[],
        );
        assert_eq!(ownership.lost(&key("team-b/x")).len(), 1);
        assert_eq!(ownership.lost(&key("team-b/wild")).len(), 1);
        assert_eq!(
            lost(&ownership, "team-b/apex"),
            [
                "route corp.example/ is not admitted: host corp.example is reserved for namespace team-a"
            ]
        );
        assert!(ownership.lost(&key("team-a/y")).is_empty());
        assert!(ownership.lost(&key("team-b/own")).is_empty());
    }

    #[test]
    fn routes_are_reported_once_in_declaration_order() {
        let ownership = decide(
            [claim(
                "a/w",
                Some(1),
                &[("b.test", "/"), ("a.test", "/"), ("b.test", "/")],
            )],
            &[],
            &[],
        );
        let routes: Vec<_> = ownership.admitted().map(|(_, r)| r.to_string()).collect();
        assert_eq!(routes, ["b.test/", "a.test/"]);
        assert!(ownership.routes(&key("a/unknown")).is_empty());
    }
}
