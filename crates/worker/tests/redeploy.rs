//! Host takeover on redeploy (issue 28, finding 1), as a property of the
//! ownership rule and the operator's records (`decide`, `next_owners`).
//!
//! Namespace `b` owns a host; namespace `a` squats on it and on a wildcard
//! over it, whenever it likes. Then any sequence of `b` creating and
//! deleting Workers — delete then re-create, create then delete, a rename,
//! `kubectl replace --force`, a helm uninstall + install, in every order —
//! with the operator recording owners after every change (it is up) or at
//! any moments (it is down for stretches), and time passing. Then:
//! - while `b`'s host is recorded as `b`'s, what the router would serve
//!   (`decide` over the live claims and the records) gives `a` no route
//!   overlapping it, and admits `b`'s claims on it;
//! - the operator drops that record only once `b` has not been seen
//!   claiming the host for the grace period (so, with the operator up,
//!   never while `b` claims it nor within the grace period after its last
//!   claim).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use isolane_worker::{
    Claim, HostOwner, Ownership, Route, WorkerKey, decide, next_owners, normalize_host, overlap,
};
use proptest::prelude::*;

const HOST: &str = "h.parent.test";
const GRACE: i128 = 100;
/// What `b`'s Workers claim: its host, under two prefixes and spellings.
const B_ROUTES: &[(&str, &str)] = &[(HOST, "/"), ("H.Parent.test.", "/api")];
/// What `a`'s Workers claim: `b`'s host, a wildcard over it, a host of its
/// own under the same parent.
const A_ROUTES: &[(&str, &str)] = &[
    (HOST, "/"),
    (HOST, "/login"),
    ("*.parent.test", "/"),
    ("mine.parent.test", "/"),
];

#[derive(Clone, Debug)]
enum Step {
    /// `b` creates Worker `name` with route `route` (of `B_ROUTES`).
    BCreate { name: usize, route: usize },
    /// `b` deletes Worker `name`.
    BDelete { name: usize },
    /// `kubectl replace --force`: delete `name`, create it again.
    BReplace { name: usize },
    /// A rename: create `to` with `from`'s routes, then delete `from`.
    BRename { from: usize, to: usize },
    /// The same, deleting first.
    BRenameDeleteFirst { from: usize, to: usize },
    /// `helm uninstall` then `helm install`: every Worker of `b` goes, then
    /// comes back under the same names (new creation times).
    BHelmReinstall,
    /// `a` creates Worker `name` with route `route` (of `A_ROUTES`).
    ACreate { name: usize, route: usize },
    /// `a` deletes Worker `name`.
    ADelete { name: usize },
    /// The operator records owners (`next_owners`).
    Sync,
    /// Time passes.
    Advance(i128),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..3usize, 0..B_ROUTES.len()).prop_map(|(name, route)| Step::BCreate { name, route }),
        3 => (0..3usize).prop_map(|name| Step::BDelete { name }),
        2 => (0..3usize).prop_map(|name| Step::BReplace { name }),
        2 => (0..3usize, 0..3usize).prop_map(|(from, to)| Step::BRename { from, to }),
        2 => (0..3usize, 0..3usize).prop_map(|(from, to)| Step::BRenameDeleteFirst { from, to }),
        1 => Just(Step::BHelmReinstall),
        3 => (0..3usize, 0..A_ROUTES.len()).prop_map(|(name, route)| Step::ACreate { name, route }),
        1 => (0..3usize).prop_map(|name| Step::ADelete { name }),
        4 => Just(Step::Sync),
        2 => (1i128..2 * GRACE).prop_map(Step::Advance),
    ]
}

/// The cluster as the rule sees it: live Workers, the records, the clock.
struct World {
    workers: BTreeMap<WorkerKey, Claim>,
    owners: Vec<HostOwner>,
    now: i128,
    /// The operator records owners after every change.
    operator_up: bool,
    /// The last time the operator saw `b` claiming its host.
    b_seen: i128,
}

impl World {
    fn create(&mut self, namespace: &str, name: usize, route: (&str, &str)) {
        let worker = WorkerKey::new(namespace, format!("w{name}"));
        self.now += 1;
        let claim = Claim {
            worker: worker.clone(),
            since: Some(self.now),
            routes: vec![Route::new(route.0, route.1)],
        };
        // An existing Worker of that name keeps its creation time (an
        // update, not a new Worker).
        self.workers.entry(worker).or_insert(claim);
    }

    fn delete(&mut self, namespace: &str, name: usize) -> Option<Claim> {
        self.now += 1;
        self.workers
            .remove(&WorkerKey::new(namespace, format!("w{name}")))
    }

    /// Re-creates a deleted Worker's routes under `name`.
    fn recreate(&mut self, name: usize, claim: Option<Claim>) {
        if let Some(route) = claim.and_then(|c| c.routes.into_iter().next()) {
            self.create("b", name, (&route.host, &route.path_prefix));
        }
    }

    fn apply(&mut self, step: &Step) {
        match *step {
            Step::BCreate { name, route } => self.create("b", name, B_ROUTES[route]),
            Step::BDelete { name } => {
                self.delete("b", name);
            }
            Step::BReplace { name } => {
                let old = self.delete("b", name);
                self.check();
                self.recreate(name, old);
            }
            Step::BRename { from, to } => {
                let old = self.workers.get(&WorkerKey::new("b", format!("w{from}")));
                let old = old.cloned();
                self.recreate(to, old);
                self.check();
                self.delete("b", from);
            }
            Step::BRenameDeleteFirst { from, to } => {
                let old = self.delete("b", from);
                self.check();
                self.recreate(to, old);
            }
            Step::BHelmReinstall => {
                let mine: Vec<WorkerKey> = self
                    .workers
                    .keys()
                    .filter(|k| k.namespace == "b")
                    .cloned()
                    .collect();
                let old: Vec<Claim> = mine.iter().filter_map(|k| self.workers.remove(k)).collect();
                self.now += 1;
                self.check();
                for claim in old {
                    let name: usize = claim.worker.name[1..].parse().unwrap();
                    self.recreate(name, Some(claim));
                }
            }
            Step::ACreate { name, route } => self.create("a", name, A_ROUTES[route]),
            Step::ADelete { name } => {
                self.delete("a", name);
            }
            Step::Sync => self.sync(),
            Step::Advance(by) => self.now += by,
        }
        self.check();
    }

    /// The operator records owners; it drops `b`'s record only once it has
    /// not seen `b` claim the host for the grace period.
    fn sync(&mut self) {
        let had = self.b_recorded();
        let ownership = self.decide();
        self.owners = next_owners(&ownership, &self.owners, self.now, GRACE);
        if self.b_claims() {
            self.b_seen = self.now;
        }
        assert!(
            !had || self.b_recorded() || self.now - self.b_seen >= GRACE,
            "b's record dropped at {}, b last seen claiming at {}",
            self.now,
            self.b_seen
        );
    }

    fn b_recorded(&self) -> bool {
        self.owners
            .iter()
            .any(|o| o.namespace == "b" && o.host == HOST)
    }

    fn decide(&self) -> Ownership {
        decide(self.workers.values().cloned(), &[], &self.owners)
    }

    fn b_claims(&self) -> bool {
        self.workers.keys().any(|k| k.namespace == "b")
    }

    /// The property, checked after every change (and, with the operator
    /// up, after it has recorded owners).
    fn check(&mut self) {
        self.check_served();
        if self.operator_up {
            self.sync();
            self.check_served();
        }
    }

    /// While `b`'s host is recorded as its own, `a` gets nothing on it and
    /// `b`'s claims are admitted.
    fn check_served(&self) {
        if !self.b_recorded() {
            return;
        }
        let ownership = self.decide();
        for (worker, route) in ownership.admitted() {
            assert!(
                !(worker.namespace == "a" && overlap(&normalize_host(&route.host), HOST)),
                "{worker} admitted on {route} at {} while {HOST} is b's; records {:?}",
                self.now,
                self.owners
            );
        }
        assert!(
            !self.b_claims() || ownership.host_admitted("b", HOST),
            "b's claim refused at {}; records {:?}",
            self.now,
            self.owners
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_host_owned_by_b_is_never_served_by_a_while_b_holds_it(
        steps in prop::collection::vec(step(), 0..40),
        operator_up in any::<bool>(),
    ) {
        // b owns the host, and the operator has recorded it.
        let mut world = World {
            workers: BTreeMap::new(),
            owners: Vec::new(),
            now: 0,
            operator_up,
            b_seen: 0,
        };
        world.create("b", 0, B_ROUTES[0]);
        world.apply(&Step::Sync);
        prop_assert!(world.b_recorded());
        for step in &steps {
            world.apply(step);
        }
    }
}
