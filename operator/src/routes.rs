//! Route ownership: who holds a host + path prefix when several Workers claim it.
//!
//! The rule is age: the Worker created first keeps the route, ties broken by
//! `namespace/name`. A Worker with an unknown creation time (never the case for
//! objects read from the API) sorts last. Workers being deleted claim nothing,
//! so their routes pass to the next claimant as soon as deletion starts.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use isolane_crds::Route;
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

/// The claimants of every route.
#[derive(Debug, Default)]
pub struct RouteTable {
    claims: HashMap<RouteKey, BTreeSet<Claimant>>,
}

impl RouteTable {
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

    /// The routes of `routes` that `worker` does not own, each with its owner.
    pub fn lost(&self, worker: &WorkerKey, routes: &[RouteKey]) -> Vec<(RouteKey, WorkerKey)> {
        routes
            .iter()
            .filter_map(|route| {
                let owner = self.owner(route)?;
                (owner != worker).then(|| (route.clone(), owner.clone()))
            })
            .collect()
    }

    /// The other Workers claiming any of `routes`, for admission: a new claim on
    /// a held route is refused whatever the ages.
    pub fn held_by_others(
        &self,
        worker: &WorkerKey,
        routes: &[RouteKey],
    ) -> Vec<(RouteKey, WorkerKey)> {
        routes
            .iter()
            .filter_map(|route| {
                let other = self.claimants(route).find(|key| *key != worker)?;
                Some((route.clone(), other.clone()))
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
            vec![(r.clone(), twin.key.clone())]
        );
        assert!(table.lost(&twin.key, std::slice::from_ref(&r)).is_empty());
        table.release(&twin, [&r]);
        table.release(&old, [&r]);
        assert_eq!(table.owner(&r), Some(&new.key));
        assert_eq!(
            table.held_by_others(&new.key, std::slice::from_ref(&r)),
            vec![(r.clone(), unknown.key.clone())]
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
