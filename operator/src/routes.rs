//! Route ownership: who holds a host + path prefix when several Workers claim it.
//!
//! Two rules, in order:
//! 1. a host belongs to one namespace (`isolane_hosts::decide`, the rule the
//!    router applies too): a claim on a host that another namespace holds —
//!    the same host, or a wildcard overlapping it — or that is reserved for
//!    another namespace is not admitted;
//! 2. within a namespace, age: the Worker created first keeps a host + path
//!    prefix, ties broken by `namespace/name`.
//!
//! A Worker with an unknown creation time (never the case for objects read
//! from the API) sorts last. Workers being deleted claim nothing, so their
//! routes pass to the next claimant as soon as deletion starts.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use isolane_crds::Route;
use isolane_hosts::{Claim, Owner, Owners, Reservation};
use k8s_openapi::jiff::Timestamp;

/// A Worker by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerKey {
    /// The Worker's namespace.
    pub namespace: String,
    /// The Worker's name.
    pub name: String,
}

impl WorkerKey {
    /// A key from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for WorkerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A host + path prefix, the unit of ownership.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteKey {
    /// The host (`api.example.com`, `*.example.com`).
    pub host: String,
    /// The path prefix (`/`, `/v1`).
    pub path_prefix: String,
}

impl From<&Route> for RouteKey {
    fn from(route: &Route) -> Self {
        Self {
            host: route.host.clone(),
            path_prefix: route.path_prefix.clone(),
        }
    }
}

impl fmt::Display for RouteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.host, self.path_prefix)
    }
}

/// A Worker claiming routes, ordered oldest first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claimant {
    /// `true` sorts after `false`: unknown creation times lose.
    unknown_age: bool,
    created: Option<Timestamp>,
    /// The Worker.
    pub key: WorkerKey,
}

impl Claimant {
    /// A claimant created at `created`.
    pub fn new(key: WorkerKey, created: Option<Timestamp>) -> Self {
        Self {
            unknown_age: created.is_none(),
            created,
            key,
        }
    }
}

/// Who holds a route a Worker does not get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// An older Worker of the same namespace claims the same host + prefix.
    OlderWorker(WorkerKey),
    /// The host belongs to another namespace, or is reserved for one.
    Host(Owner),
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::OlderWorker(key) => write!(f, "is held by older Worker {key}"),
            Holder::Host(owner) => write!(f, "is not admitted: {owner}"),
        }
    }
}

/// The claimants of every route.
#[derive(Debug, Default)]
pub struct RouteTable {
    claims: HashMap<RouteKey, BTreeSet<Claimant>>,
    /// Hosts reserved for namespaces (`--reserved-host`).
    reservations: Vec<Reservation>,
}

impl RouteTable {
    /// An empty table that honours `reservations`.
    pub fn with_reservations(reservations: Vec<Reservation>) -> Self {
        Self {
            claims: HashMap::new(),
            reservations,
        }
    }

    /// Which namespace may serve each claimed host.
    fn host_owners(&self) -> Owners {
        let claims = self.claims.iter().flat_map(|(route, claimants)| {
            claimants.iter().map(|claimant| Claim {
                namespace: claimant.key.namespace.clone(),
                host: route.host.clone(),
                since: claimant.created.map(|t| t.as_nanosecond()),
                worker: claimant.key.name.clone(),
            })
        });
        isolane_hosts::decide(claims, &self.reservations)
    }

    /// The Workers of other namespaces claiming a host that overlaps `host`.
    pub fn overlapping(&self, namespace: &str, host: &str) -> Vec<WorkerKey> {
        let mut keys: BTreeSet<WorkerKey> = BTreeSet::new();
        for (route, claimants) in &self.claims {
            if isolane_hosts::overlap(&route.host, host) {
                keys.extend(
                    claimants
                        .iter()
                        .filter(|c| c.key.namespace != namespace)
                        .map(|c| c.key.clone()),
                );
            }
        }
        keys.into_iter().collect()
    }
    /// Records that `claimant` claims `routes`.
    pub fn claim<'a>(
        &mut self,
        claimant: &Claimant,
        routes: impl IntoIterator<Item = &'a RouteKey>,
    ) {
        for route in routes {
            self.claims
                .entry(route.clone())
                .or_default()
                .insert(claimant.clone());
        }
    }

    /// Forgets that `claimant` claims `routes`.
    pub fn release<'a>(
        &mut self,
        claimant: &Claimant,
        routes: impl IntoIterator<Item = &'a RouteKey>,
    ) {
        for route in routes {
            if let Some(claimants) = self.claims.get_mut(route) {
                claimants.remove(claimant);
                if claimants.is_empty() {
                    self.claims.remove(route);
                }
            }
        }
    }

    /// The Workers claiming `route`, oldest (the owner) first.
    pub fn claimants(&self, route: &RouteKey) -> impl Iterator<Item = &WorkerKey> {
        self.claims
            .get(route)
            .into_iter()
            .flat_map(|claimants| claimants.iter().map(|claimant| &claimant.key))
    }

    /// The owner of `route`: its oldest claimant.
    pub fn owner(&self, route: &RouteKey) -> Option<&WorkerKey> {
        self.claimants(route).next()
    }

    /// The routes of `routes` that `worker` does not get, each with who
    /// holds it: the host rule first, then age within the namespace.
    pub fn lost(&self, worker: &WorkerKey, routes: &[RouteKey]) -> Vec<(RouteKey, Holder)> {
        let owners = self.host_owners();
        routes
            .iter()
            .filter_map(|route| {
                if let Err(owner) = owners.check(&worker.namespace, &route.host) {
                    return Some((route.clone(), Holder::Host(owner.clone())));
                }
                // Within the namespace: the oldest claimant of this namespace.
                let owner = self
                    .claimants(route)
                    .find(|key| key.namespace == worker.namespace)?;
                (owner != worker).then(|| (route.clone(), Holder::OlderWorker(owner.clone())))
            })
            .collect()
    }

    /// What any of `routes` would take from others, for admission: a new
    /// claim on a host reserved for, or claimed by, another namespace, or on
    /// a route another Worker holds, is refused whatever the ages.
    pub fn held_by_others(
        &self,
        worker: &WorkerKey,
        routes: &[RouteKey],
    ) -> Vec<(RouteKey, String)> {
        routes
            .iter()
            .filter_map(|route| {
                let host = isolane_hosts::normalize(&route.host);
                if let Some(reservation) = self
                    .reservations
                    .iter()
                    .find(|r| r.namespace != worker.namespace && r.covers(&host))
                {
                    let owner = Owner::Reserved {
                        namespace: reservation.namespace.clone(),
                        host: reservation.host.clone(),
                    };
                    return Some((route.clone(), owner.to_string()));
                }
                if let Some(other) = self.overlapping(&worker.namespace, &host).first() {
                    let their_host = self
                        .claims
                        .iter()
                        .find(|(r, c)| {
                            isolane_hosts::overlap(&r.host, &host)
                                && c.iter().any(|c| c.key == *other)
                        })
                        .map_or(host.clone(), |(r, _)| r.host.clone());
                    let owner = Owner::Worker {
                        namespace: other.namespace.clone(),
                        worker: other.name.clone(),
                        host: their_host,
                    };
                    return Some((route.clone(), owner.to_string()));
                }
                let other = self.claimants(route).find(|key| *key != worker)?;
                Some((
                    route.clone(),
                    format!("is already claimed by Worker {other}"),
                ))
            })
            .collect()
    }
}

/// The distinct routes of a Worker, in declaration order.
pub fn route_keys(routes: &[Route]) -> Vec<RouteKey> {
    let mut keys: Vec<RouteKey> = Vec::with_capacity(routes.len());
    for route in routes {
        let key = RouteKey::from(route);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Option<Timestamp> {
        Some(Timestamp::from_second(seconds).unwrap())
    }

    fn route(host: &str, path: &str) -> RouteKey {
        RouteKey {
            host: host.to_owned(),
            path_prefix: path.to_owned(),
        }
    }

    #[test]
    fn the_oldest_claimant_owns_a_route_then_the_name_breaks_ties() {
        let mut table = RouteTable::default();
        let r = route("a.example.com", "/");
        let old = Claimant::new(WorkerKey::new("z", "old"), at(10));
        let new = Claimant::new(WorkerKey::new("a", "new"), at(20));
        let twin = Claimant::new(WorkerKey::new("a", "twin"), at(10));
        let unknown = Claimant::new(WorkerKey::new("a", "a"), None);
        for claimant in [&new, &old, &unknown] {
            table.claim(claimant, [&r]);
        }
        assert_eq!(table.owner(&r), Some(&old.key));
        table.claim(&twin, [&r]);
        assert_eq!(table.owner(&r), Some(&twin.key));
        assert_eq!(
            table.lost(&new.key, std::slice::from_ref(&r)),
            vec![(r.clone(), Holder::OlderWorker(twin.key.clone()))]
        );
        assert!(table.lost(&twin.key, std::slice::from_ref(&r)).is_empty());
        // z/old is older than a/twin, but namespace a holds the host (the
        // tie on age goes to the namespace name): z's claim is not admitted.
        assert!(matches!(
            table.lost(&old.key, std::slice::from_ref(&r))[..],
            [(_, Holder::Host(_))]
        ));
        table.release(&twin, [&r]);
        table.release(&old, [&r]);
        assert_eq!(table.owner(&r), Some(&new.key));
        assert_eq!(
            table.held_by_others(&new.key, std::slice::from_ref(&r)),
            vec![(r.clone(), "is already claimed by Worker a/a".to_owned())]
        );
        table.release(&new, [&r]);
        table.release(&unknown, [&r]);
        assert!(table.claims.is_empty());
    }

    #[test]
    fn route_keys_are_distinct_and_ordered() {
        let routes = vec![
            Route {
                host: "b".into(),
                path_prefix: "/".into(),
            },
            Route {
                host: "a".into(),
                path_prefix: "/".into(),
            },
            Route {
                host: "b".into(),
                path_prefix: "/".into(),
            },
        ];
        assert_eq!(route_keys(&routes), vec![route("b", "/"), route("a", "/")]);
    }
}
