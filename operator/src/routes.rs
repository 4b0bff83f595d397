//! Route ownership in the operator: every Worker's claim, kept from the
//! watch (`index.rs`), and what the one ownership rule,
//! `isolane_worker::decide`, makes of them — for the status
//! (`RoutesAdmitted`, [`RouteTable::lost`]) and the admission webhook
//! ([`RouteTable::held_by_others`]). The router applies the same rule to the
//! same claims, so what the status says is what the router serves.
//!
//! Workers being deleted claim nothing (the index records no routes for
//! them), so their routes pass to the next claimant as soon as deletion
//! starts — within their namespace: a host recorded as the namespace's
//! (`owners.rs`) stays its own. Every other Worker claims its routes, Ready
//! or not.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use isolane_worker::{
    Claim, HostOwner, Ownership, Reservation, Route, decide, normalize_host, overlap,
};
pub use isolane_worker::{Holder, WorkerKey};

/// The claims of every Worker, and the decision over them.
#[derive(Debug, Default)]
pub struct RouteTable {
    claims: HashMap<WorkerKey, Claim>,
    /// Route → the Workers claiming it, to find who shares a route.
    by_route: HashMap<Route, BTreeSet<WorkerKey>>,
    /// Normalised host → the Workers claiming a route on it, and parent
    /// domain → its hosts (`a.example.com` under `example.com`): the hosts
    /// overlapping one host without a pass over every claim ([`Hosts`]).
    hosts: Hosts,
    /// Normalised host → the namespaces of the records on it.
    owners_by_host: HashMap<String, Vec<String>>,
    /// Hosts reserved for namespaces (`--reserved-host`).
    reservations: Vec<Reservation>,
    /// Hosts recorded as namespaces' (`owners.rs`).
    owners: Vec<HostOwner>,
    /// The decision over `claims`, made when first asked after a change
    /// (a relist changes every claim before anyone asks).
    decided: OnceLock<Ownership>,
}

impl RouteTable {
    /// An empty table that honours `reservations`.
    pub fn with_reservations(reservations: Vec<Reservation>) -> Self {
        Self {
            reservations,
            ..Self::default()
        }
    }

    /// Records `claim`, replacing the Worker's previous one.
    pub fn set(&mut self, claim: Claim) {
        self.remove(&claim.worker);
        for route in &claim.routes {
            self.by_route
                .entry(route.clone())
                .or_default()
                .insert(claim.worker.clone());
            self.hosts.add(&claim.worker, &route.host);
        }
        self.claims.insert(claim.worker.clone(), claim);
    }

    /// Forgets `worker`'s claim.
    pub fn remove(&mut self, worker: &WorkerKey) {
        self.decided = OnceLock::new();
        let Some(old) = self.claims.remove(worker) else {
            return;
        };
        for route in &old.routes {
            if let Some(claimants) = self.by_route.get_mut(route) {
                claimants.remove(worker);
                if claimants.is_empty() {
                    self.by_route.remove(route);
                }
            }
            self.hosts.remove(worker, &route.host);
        }
    }

    /// Replaces the recorded host owners; returns the hosts whose record
    /// changed (came, went, or changed hands).
    pub fn set_owners(&mut self, mut owners: Vec<HostOwner>) -> Vec<String> {
        owners.sort();
        if owners == self.owners {
            return Vec::new();
        }
        let before: BTreeSet<&HostOwner> = self.owners.iter().collect();
        let after: BTreeSet<&HostOwner> = owners.iter().collect();
        let changed: BTreeSet<String> = before
            .symmetric_difference(&after)
            .map(|owner| owner.host.clone())
            .collect();
        self.owners = owners;
        self.owners_by_host = HashMap::new();
        for owner in &self.owners {
            self.owners_by_host
                .entry(normalize_host(&owner.host))
                .or_default()
                .push(owner.namespace.clone());
        }
        self.decided = OnceLock::new();
        changed.into_iter().collect()
    }

    /// Replaces one record: `before` goes (if recorded), `after` comes (if
    /// not recorded already); returns the hosts whose record changed. The
    /// records' watch calls this for each event, so that one record does
    /// not cost a copy and a sort of every record.
    pub fn replace_owner(
        &mut self,
        before: Option<&HostOwner>,
        after: Option<HostOwner>,
    ) -> Vec<String> {
        if before == after.as_ref() {
            return Vec::new();
        }
        let mut changed = Vec::new();
        if let Some(before) = before
            && let Ok(at) = self.owners.binary_search(before)
        {
            self.owners.remove(at);
            if let Some(namespaces) = self.owners_by_host.get_mut(&normalize_host(&before.host))
                && let Some(at) = namespaces.iter().position(|n| *n == before.namespace)
            {
                namespaces.swap_remove(at);
            }
            changed.push(before.host.clone());
        }
        if let Some(after) = after
            && let Err(at) = self.owners.binary_search(&after)
        {
            self.owners_by_host
                .entry(normalize_host(&after.host))
                .or_default()
                .push(after.namespace.clone());
            changed.push(after.host.clone());
            self.owners.insert(at, after);
        }
        if !changed.is_empty() {
            self.decided = OnceLock::new();
        }
        changed.dedup();
        changed
    }

    /// The recorded host owners.
    pub fn owners(&self) -> &[HostOwner] {
        &self.owners
    }

    /// The decision over every recorded claim.
    pub fn ownership(&self) -> &Ownership {
        self.decided.get_or_init(|| {
            decide(
                self.claims.values().cloned(),
                &self.reservations,
                &self.owners,
            )
        })
    }

    /// The Workers claiming `route`, by key.
    pub fn claimants(&self, route: &Route) -> impl Iterator<Item = &WorkerKey> {
        self.by_route.get(route).into_iter().flatten()
    }

    /// `worker`'s recorded claim, if any.
    pub fn claim(&self, worker: &WorkerKey) -> Option<&Claim> {
        self.claims.get(worker)
    }

    /// The Worker admitted on `route`, if any.
    pub fn owner(&self, route: &Route) -> Option<&WorkerKey> {
        self.ownership().owner(route)
    }

    /// The Workers claiming a host that overlaps `host` (any prefix, any
    /// namespace): whose decision may change when a claim on `host` does,
    /// as the host's owner and its age are decided per host.
    pub fn on_overlapping_hosts(&self, host: &str) -> Vec<WorkerKey> {
        let mut keys: BTreeSet<WorkerKey> = BTreeSet::new();
        for host in self.hosts.overlapping(&normalize_host(host)) {
            keys.extend(self.hosts.claimants(&host).cloned());
        }
        keys.into_iter().collect()
    }

    /// The routes of `claim` its Worker does not get, each with who holds
    /// it. The recorded decision answers when `claim` is the one recorded;
    /// otherwise (the watch has not delivered this version of the Worker
    /// yet) the rule is applied with `claim` in place of the recorded one.
    /// An uncontested claim ([`Self::uncontested`]) loses nothing, which is
    /// what the rule says of it, without deciding over every claim (a
    /// decision made after each new Worker, over 10,000 claims, was most
    /// of the operator's time).
    pub fn lost(&self, claim: &Claim) -> Vec<(Route, Holder)> {
        if self.uncontested(claim) {
            return Vec::new();
        }
        if self.claims.get(&claim.worker) == Some(claim) {
            return self.ownership().lost(&claim.worker);
        }
        self.with_claim(claim.clone()).lost(&claim.worker)
    }

    /// True when nothing can refuse any route of `claim`: each host is
    /// exact (no wildcard), no other Worker claims a host overlapping it,
    /// every record on an overlapping host is the Worker's namespace's, and
    /// no other namespace's reservation covers or overlaps it. The rule
    /// (`isolane_worker::decide`) refuses a host only for another
    /// namespace's reservation, record or older overlapping claim, and a
    /// route only for another Worker's claim on it.
    fn uncontested(&self, claim: &Claim) -> bool {
        let namespace = &claim.worker.namespace;
        claim.routes.iter().all(|route| {
            let host = normalize_host(&route.host);
            !host.starts_with("*.")
                && self.hosts.overlapping(&host).iter().all(|overlapping| {
                    self.hosts
                        .claimants(overlapping)
                        .all(|worker| *worker == claim.worker)
                        && self
                            .owners_by_host
                            .get(overlapping)
                            .is_none_or(|owners| owners.iter().all(|owner| owner == namespace))
                })
                && !self.reservations.iter().any(|reservation| {
                    reservation.namespace != *namespace
                        && (reservation.covers(&host) || overlap(&reservation.host, &host))
                })
        })
    }

    /// What `added` (some of `routes`, the Worker's routes after the change)
    /// would take from others, for admission: each added route that `worker`
    /// would not get if it were younger than every other Worker, with who
    /// holds it. So a change never takes a route or a host from another
    /// Worker, whatever the ages; a route only claimed by Workers that do not
    /// get it themselves (another namespace's host, say) is no obstacle.
    pub fn held_by_others(
        &self,
        worker: &WorkerKey,
        routes: &[Route],
        added: &[Route],
    ) -> Vec<(Route, Holder)> {
        let ownership = self.with_claim(Claim {
            worker: worker.clone(),
            // Unknown: younger than every Worker read from the API.
            since: None,
            routes: Route::distinct(routes),
        });
        ownership
            .lost(worker)
            .into_iter()
            .filter(|(route, _)| added.contains(route))
            .collect()
    }

    /// The decision with `claim` in place of its Worker's recorded one.
    fn with_claim(&self, claim: Claim) -> Ownership {
        let worker = claim.worker.clone();
        let others = self
            .claims
            .values()
            .filter(|other| other.worker != worker)
            .cloned();
        decide(others.chain([claim]), &self.reservations, &self.owners)
    }
}

// === impl Hosts ===

/// The claimed hosts, normalised: who claims each, and each exact host
/// under its parent domain, so that the hosts overlapping one host
/// (`isolane_worker::overlap`: itself; `*.example.com` and each
/// `<label>.example.com` either way) are found by lookups.
#[derive(Debug, Default)]
struct Hosts {
    claimants: HashMap<String, BTreeSet<WorkerKey>>,
    by_parent: HashMap<String, BTreeSet<String>>,
}

impl Hosts {
    fn add(&mut self, worker: &WorkerKey, host: &str) {
        let host = normalize_host(host);
        if let Some(parent) = parent(&host) {
            self.by_parent
                .entry(parent.to_owned())
                .or_default()
                .insert(host.clone());
        }
        self.claimants
            .entry(host)
            .or_default()
            .insert(worker.clone());
    }

    /// Forgets every claim of `worker` on `host`.
    fn remove(&mut self, worker: &WorkerKey, host: &str) {
        let host = normalize_host(host);
        let Some(claimants) = self.claimants.get_mut(&host) else {
            return;
        };
        claimants.remove(worker);
        if !claimants.is_empty() {
            return;
        }
        self.claimants.remove(&host);
        if let Some(parent) = parent(&host)
            && let Some(hosts) = self.by_parent.get_mut(parent)
        {
            hosts.remove(&host);
            if hosts.is_empty() {
                self.by_parent.remove(parent);
            }
        }
    }

    fn claimants(&self, host: &str) -> impl Iterator<Item = &WorkerKey> {
        self.claimants.get(host).into_iter().flatten()
    }

    /// The claimed or possible hosts overlapping normalised `host`,
    /// `host` first.
    fn overlapping(&self, host: &str) -> Vec<String> {
        let mut hosts = vec![host.to_owned()];
        match host.strip_prefix("*.") {
            Some(domain) => hosts.extend(self.by_parent.get(domain).into_iter().flatten().cloned()),
            None => hosts.extend(parent(host).map(|parent| format!("*.{parent}"))),
        }
        hosts
    }
}

/// `example.com` of an exact host `a.example.com` (none for a wildcard or
/// a host of one label).
fn parent(host: &str) -> Option<&str> {
    if host.starts_with("*.") {
        return None;
    }
    host.split_once('.')
        .filter(|(label, _)| !label.is_empty())
        .map(|(_, parent)| parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(namespace: &str, name: &str, since: Option<i128>, routes: &[Route]) -> Claim {
        Claim {
            worker: WorkerKey::new(namespace, name),
            since,
            routes: routes.to_vec(),
        }
    }

    #[test]
    fn the_table_answers_from_the_recorded_claims_and_forgets_them() {
        let mut table = RouteTable::default();
        let r = Route::new("a.example.com", "/");
        let old = claim("a", "old", Some(10), std::slice::from_ref(&r));
        let new = claim("a", "new", Some(20), std::slice::from_ref(&r));
        table.set(new.clone());
        assert_eq!(table.owner(&r), Some(&new.worker));
        table.set(old.clone());
        assert_eq!(table.owner(&r), Some(&old.worker));
        assert_eq!(
            table.lost(&new),
            vec![(r.clone(), Holder::OlderWorker(old.worker.clone()))]
        );
        assert!(table.lost(&old).is_empty());
        assert_eq!(
            table.claimants(&r).collect::<Vec<_>>(),
            [&new.worker, &old.worker]
        );
        // A version of `new` the watch has not delivered: decided as given.
        let moved = claim("a", "new", Some(20), &[Route::new("b.example.com", "/")]);
        assert!(table.lost(&moved).is_empty());
        table.remove(&old.worker);
        assert_eq!(table.owner(&r), Some(&new.worker));
        table.remove(&new.worker);
        assert!(table.claims.is_empty() && table.by_route.is_empty());
        assert!(table.hosts.claimants.is_empty() && table.hosts.by_parent.is_empty());
        assert_eq!(table.owner(&r), None);
    }

    #[test]
    fn one_record_replaced_is_all_records_set() {
        let owner = |host: &str, namespace: &str, released| HostOwner {
            host: host.to_owned(),
            namespace: namespace.to_owned(),
            since: 1,
            released,
        };
        let (a, b) = (owner("a.test", "n1", None), owner("b.test", "n2", None));
        let mut table = RouteTable::default();
        table.set_owners(vec![b.clone(), a.clone()]);
        let released = owner("a.test", "n1", Some(5));
        assert_eq!(
            table.replace_owner(Some(&a), Some(released.clone())),
            ["a.test"]
        );
        let c = owner("c.test", "n1", None);
        assert_eq!(table.replace_owner(None, Some(c.clone())), ["c.test"]);
        // Already recorded (by the recorder's own pass): nothing changes.
        assert!(table.replace_owner(None, Some(c.clone())).is_empty());
        assert_eq!(table.replace_owner(Some(&b), None), ["b.test"]);
        let mut all = RouteTable::default();
        all.set_owners(vec![c, released]);
        assert_eq!(table.owners(), all.owners());
        assert_eq!(table.owners_by_host.get("b.test"), Some(&Vec::new()));
        assert_eq!(
            table.owners_by_host.get("a.test"),
            all.owners_by_host.get("a.test")
        );
    }

    #[test]
    fn admission_refuses_what_a_change_would_take_whatever_the_ages() {
        let mut table = RouteTable::default();
        let r = Route::new("a.example.com", "/");
        table.set(claim("a", "owner", Some(20), std::slice::from_ref(&r)));
        // An older Worker adding the route would take it by age: refused.
        let older = WorkerKey::new("a", "older");
        table.set(claim("a", "older", Some(10), &[]));
        assert_eq!(
            table.held_by_others(&older, std::slice::from_ref(&r), std::slice::from_ref(&r)),
            vec![(r.clone(), Holder::OlderWorker(WorkerKey::new("a", "owner")))]
        );
        // Another namespace on the host, or a wildcard over it: refused.
        let thief = WorkerKey::new("b", "thief");
        let wildcard = Route::new("*.example.com", "/");
        let refused = table.held_by_others(
            &thief,
            std::slice::from_ref(&wildcard),
            std::slice::from_ref(&wildcard),
        );
        assert!(
            matches!(&refused[..], [(_, Holder::Namespace { worker, .. })] if worker.name == "owner"),
            "{refused:?}"
        );
        // The owner re-applying its route takes nothing.
        let owner = WorkerKey::new("a", "owner");
        assert!(
            table
                .held_by_others(&owner, std::slice::from_ref(&r), std::slice::from_ref(&r))
                .is_empty()
        );
        // Only added routes are checked.
        assert!(
            table
                .held_by_others(&older, std::slice::from_ref(&r), &[])
                .is_empty()
        );
    }

    #[test]
    fn a_claim_that_is_not_admitted_is_no_obstacle() {
        // b's claim is refused: the host is reserved for a. a's Worker may
        // add the route (the former rule refused it, as b claimed the host).
        let mut table = RouteTable::with_reservations(vec!["victim.example=a".parse().unwrap()]);
        let r = Route::new("victim.example", "/");
        table.set(claim("b", "early", Some(1), std::slice::from_ref(&r)));
        assert_eq!(
            table.ownership().lost(&WorkerKey::new("b", "early")).len(),
            1
        );
        let worker = WorkerKey::new("a", "site");
        assert!(
            table
                .held_by_others(&worker, std::slice::from_ref(&r), std::slice::from_ref(&r))
                .is_empty()
        );
    }

    mod uncontested {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;

        const NAMESPACES: [&str; 2] = ["n1", "n2"];
        const HOSTS: [&str; 8] = [
            "a.x.test",
            "b.x.test",
            "*.x.test",
            "x.test",
            "*.test",
            "A.X.test:80",
            "c.y.test",
            "*.y.test",
        ];
        const PREFIXES: [&str; 2] = ["/", "/api"];

        fn claims() -> impl Strategy<Value = Vec<Claim>> {
            let route = (0..HOSTS.len(), 0..PREFIXES.len())
                .prop_map(|(host, prefix)| Route::new(HOSTS[host], PREFIXES[prefix]));
            let claim = (
                0..2usize,
                0..4usize,
                proptest::option::of(0..4i128),
                vec(route, 0..3),
            )
                .prop_map(|(namespace, name, since, routes)| Claim {
                    worker: WorkerKey::new(NAMESPACES[namespace], format!("w{name}")),
                    since,
                    routes: Route::distinct(&routes),
                });
            vec(claim, 0..7)
        }

        fn owners() -> impl Strategy<Value = Vec<HostOwner>> {
            let owner = (
                0..5usize,
                0..2usize,
                0..4i128,
                proptest::option::of(0..4i128),
            )
                .prop_map(|(host, namespace, since, released)| HostOwner {
                    host: normalize_host(HOSTS[host]),
                    namespace: NAMESPACES[namespace].to_owned(),
                    since,
                    released,
                });
            vec(owner, 0..3)
        }

        fn reservations() -> impl Strategy<Value = Vec<Reservation>> {
            let reservation = (0..4usize, 0..2usize).prop_map(|(host, namespace)| Reservation {
                host: ["a.x.test", "*.x.test", "*.y.test", "x.test"][host].to_owned(),
                namespace: NAMESPACES[namespace].to_owned(),
            });
            vec(reservation, 0..2)
        }

        proptest! {
            /// The shortcut answers as the rule over every claim does, and
            /// the host index finds the Workers a scan of every route finds.
            #[test]
            fn the_shortcut_and_the_host_index_agree_with_the_rule(
                claims in claims(),
                owners in owners(),
                reservations in reservations(),
            ) {
                let mut table = RouteTable::with_reservations(reservations);
                table.set_owners(owners);
                for claim in &claims {
                    table.set(claim.clone());
                }
                let recorded: Vec<Claim> = table.claims.values().cloned().collect();
                for claim in &recorded {
                    prop_assert_eq!(table.lost(claim), table.ownership().lost(&claim.worker));
                }
                for host in HOSTS {
                    let host = normalize_host(host);
                    let scanned: BTreeSet<WorkerKey> = table
                        .by_route
                        .iter()
                        .filter(|(route, _)| overlap(&normalize_host(&route.host), &host))
                        .flat_map(|(_, claimants)| claimants.iter().cloned())
                        .collect();
                    let indexed = table.on_overlapping_hosts(&host);
                    prop_assert_eq!(indexed, scanned.into_iter().collect::<Vec<_>>());
                }
                for claim in &recorded {
                    table.remove(&claim.worker);
                }
                prop_assert!(table.hosts.claimants.is_empty() && table.hosts.by_parent.is_empty());
            }
        }
    }
}
