//! The route table: which Worker answers a host and path.
//!
//! Built each time the watch sees a change, then published as an immutable
//! snapshot that every request reads without a lock. Which Worker holds a
//! route is the one ownership rule, `isolane_worker::decide`, the operator's
//! too (a host belongs to one namespace, reserved hosts to theirs; within a
//! namespace the oldest Worker keeps a host + prefix, ties by
//! `namespace/name`), applied to the same claims: every Worker not being
//! deleted claims its routes, Ready or not. The table then indexes the
//! admitted routes of the Workers it can send requests to (Ready, with a
//! revision): a route an older Worker holds while it is not Ready is not
//! served to a younger claimant, just as the operator's `RoutesAdmitted`
//! says. The lookup rules (exact host before its one-label wildcard,
//! longest whole-segment prefix first) are `isolane_worker::RouteIndex`'s,
//! shared with `isolane dev`; nothing matched is a 404 at the proxy.

use std::collections::HashMap;
use std::sync::Arc;

use isolane_crds::{ConditionStatus, ConditionType, Worker};
pub use isolane_worker::normalize_host;
use isolane_worker::{Claim, Holder, HostOwner, Reservation, Route, RouteIndex, WorkerKey, decide};

use crate::metrics::{Served, WorkerSlot};
use crate::split::Split;

/// What a request is routed to: one Worker and its traffic split.
#[derive(Debug)]
pub struct Backend {
    /// `namespace/name`.
    pub worker_id: String,
    /// Which revision each request runs (`split.rs`).
    pub split: Split,
    /// The Worker's per-worker metrics slot (hit counter, tracked flag).
    pub slot: Arc<WorkerSlot>,
}

impl Backend {
    /// The metrics record of a request to this Worker that ran `revision`.
    pub fn served<'a>(&'a self, revision: &'a str) -> Served<'a> {
        Served {
            worker_id: &self.worker_id,
            slot: &self.slot,
            revision,
        }
    }
}

/// A Worker the router may send requests to, before it is indexed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutableWorker {
    /// The Worker, its age and its routes.
    pub claim: Claim,
    /// The revisions its requests run.
    pub split: Split,
    /// Cron schedules from the spec (`spec.triggers`).
    pub triggers: Option<isolane_worker::Triggers>,
}

impl RoutableWorker {
    /// The routable view of `worker`, or `None` while it has no revision, is not
    /// `Ready=True`, is being deleted, or lacks a name or namespace.
    pub fn from_worker(worker: &Worker) -> Option<Self> {
        let status = worker.status.as_ref()?;
        let split = Split::from_worker(worker)?;
        let ready = status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Ready.as_str() && c.status == ConditionStatus::True.as_str()
        });
        if !ready || worker.metadata.deletion_timestamp.is_some() {
            return None;
        }
        Some(Self {
            claim: worker.claim()?,
            split,
            triggers: worker.spec.triggers.clone().filter(|t| !t.crons.is_empty()),
        })
    }

    /// The Worker.
    pub fn key(&self) -> &WorkerKey {
        &self.claim.worker
    }

    /// `namespace/name`, as in metrics and logs.
    pub fn worker_id(&self) -> String {
        self.claim.worker.to_string()
    }
}

/// What the router makes of a Worker it watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Watched {
    /// Requests may go to it.
    Routable(RoutableWorker),
    /// It claims routes (so it may hold them) but cannot be sent requests
    /// yet: not Ready, or no revision.
    Claimant(Claim),
    /// Being deleted, or without a name: it claims nothing.
    Ignored,
}

impl Watched {
    /// What `worker` is to the route table.
    pub fn from_worker(worker: &Worker) -> Self {
        if let Some(routable) = RoutableWorker::from_worker(worker) {
            return Self::Routable(routable);
        }
        match worker.claim() {
            Some(claim) if !claim.routes.is_empty() => Self::Claimant(claim),
            _ => Self::Ignored,
        }
    }
}

/// A claimed route the table does not serve for `worker`: `holder` holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The Worker whose claim is not admitted.
    pub worker: WorkerKey,
    /// The route it claims.
    pub route: Route,
    /// Who holds it.
    pub holder: Holder,
}

/// An immutable index from host and path to [`Backend`] (the matching
/// rules are `isolane_worker::RouteIndex`'s).
#[derive(Debug, Default)]
pub struct RouteTable {
    index: RouteIndex<Arc<Backend>>,
    backends: Vec<Arc<Backend>>,
    /// Each admitted host pattern (normalised: `a.example.com` or
    /// `*.example.com`) and the namespace it was admitted to, routable or
    /// not: whose certificate the HTTPS ingress may serve for it.
    hosts: HashMap<String, String>,
}

impl RouteTable {
    /// Indexes `workers`, giving each its metrics slot from `slot`; returns the
    /// table and the claims it did not admit. Every Worker claims its routes
    /// (`isolane dev`, tests).
    pub fn build(
        workers: Vec<RoutableWorker>,
        slot: impl FnMut(&str) -> Arc<WorkerSlot>,
    ) -> (Self, Vec<Conflict>) {
        Self::build_with(workers, &[], &[], &[], slot)
    }

    /// [`RouteTable::build`], with the claims of Workers requests cannot go
    /// to yet (`claimants`: they hold what the rule gives them, unserved)
    /// hosts reserved for namespaces, and hosts the operator recorded as
    /// namespaces' (`owners`).
    pub fn build_with(
        mut workers: Vec<RoutableWorker>,
        claimants: &[Claim],
        reservations: &[Reservation],
        owners: &[HostOwner],
        mut slot: impl FnMut(&str) -> Arc<WorkerSlot>,
    ) -> (Self, Vec<Conflict>) {
        let claims = workers.iter().map(|w| w.claim.clone());
        let ownership = decide(
            claims.chain(claimants.iter().cloned()),
            reservations,
            owners,
        );
        // A stable order, whatever the watch's.
        workers.sort_by(|a, b| a.key().cmp(b.key()));
        let mut table = Self::default();
        for (namespace, host) in ownership.admitted_hosts() {
            table
                .hosts
                .entry(host.to_owned())
                .or_insert_with(|| namespace.to_owned());
        }
        for worker in workers {
            let backend = Arc::new(Backend {
                slot: slot(&worker.worker_id()),
                worker_id: worker.worker_id(),
                split: worker.split,
            });
            for (route, holder) in ownership.routes(&worker.claim.worker) {
                if holder.is_none() {
                    // `false` only for a route the Worker itself declares
                    // twice, spelled differently.
                    table
                        .index
                        .insert(&route.host, &route.path_prefix, Arc::clone(&backend));
                }
            }
            table.backends.push(backend);
        }
        let conflicts = ownership
            .decisions()
            .filter_map(|(worker, route, holder)| {
                Some(Conflict {
                    worker: worker.clone(),
                    route: route.clone(),
                    holder: holder?.clone(),
                })
            })
            .collect();
        (table, conflicts)
    }

    /// The backend for a request to `host` (as in the Host header or
    /// `:authority`, port allowed) and `path`.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&Arc<Backend>> {
        self.index.lookup(host, path)
    }

    /// The namespace admitted to the normalised host `host`: the one whose
    /// Workers claim it exactly, else the one admitted to its one-label
    /// wildcard (the order a request's lookup takes); `None` when no
    /// namespace was admitted to either.
    pub fn host_namespace(&self, host: &str) -> Option<&str> {
        if let Some(namespace) = self.hosts.get(host) {
            return Some(namespace);
        }
        let (_, parent) = host.split_once('.')?;
        self.hosts.get(&format!("*.{parent}")).map(String::as_str)
    }

    /// Every routable Worker in the table, by `namespace/name`.
    pub fn backends(&self) -> &[Arc<Backend>] {
        &self.backends
    }

    /// The backend of `worker_id`, if it is routable.
    pub fn backend(&self, worker_id: &str) -> Option<&Arc<Backend>> {
        self.backends.iter().find(|b| b.worker_id == worker_id)
    }

    /// How many routable Workers the table holds.
    pub fn len(&self) -> usize {
        self.backends.len()
    }

    /// Whether no Worker is routable.
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isolane_crds::{WorkerSpec, WorkerStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::jiff::Timestamp;

    fn claim(id: &str, created: i128, routes: &[(&str, &str)]) -> Claim {
        let (namespace, name) = id.split_once('/').unwrap();
        Claim {
            worker: WorkerKey::new(namespace, name),
            since: Some(created),
            routes: routes.iter().map(|(h, p)| Route::new(*h, *p)).collect(),
        }
    }

    fn worker(id: &str, created: i128, routes: &[(&str, &str)]) -> RoutableWorker {
        RoutableWorker {
            claim: claim(id, created, routes),
            split: Split::single(&format!("rev-{id}")),
            triggers: None,
        }
    }

    fn table(workers: Vec<RoutableWorker>) -> RouteTable {
        RouteTable::build(workers, |_| Arc::default()).0
    }

    fn id<'a>(t: &'a RouteTable, host: &str, path: &str) -> Option<&'a str> {
        t.lookup(host, path).map(|b| b.worker_id.as_str())
    }

    #[test]
    fn exact_host_and_longest_prefix() {
        let t = table(vec![
            worker("ns/root", 1, &[("api.example.com", "/")]),
            worker("ns/v1", 2, &[("api.example.com", "/v1")]),
            worker("ns/v1-users", 3, &[("api.example.com", "/v1/users")]),
        ]);
        assert_eq!(id(&t, "api.example.com", "/"), Some("ns/root"));
        assert_eq!(id(&t, "api.example.com", "/other"), Some("ns/root"));
        assert_eq!(id(&t, "api.example.com", "/v1"), Some("ns/v1"));
        assert_eq!(id(&t, "api.example.com", "/v1/"), Some("ns/v1"));
        assert_eq!(id(&t, "api.example.com", "/v1/items"), Some("ns/v1"));
        assert_eq!(
            id(&t, "api.example.com", "/v1/users/7"),
            Some("ns/v1-users")
        );
        assert_eq!(id(&t, "api.example.com", "/v1/usersx"), Some("ns/v1"));
        assert_eq!(id(&t, "api.example.com", "/v1x"), Some("ns/root"));
    }

    #[test]
    fn host_is_normalised() {
        let t = table(vec![worker("ns/a", 1, &[("api.example.com", "/")])]);
        assert_eq!(id(&t, "API.Example.COM", "/"), Some("ns/a"));
        assert_eq!(id(&t, "api.example.com:8080", "/"), Some("ns/a"));
        assert_eq!(id(&t, "api.example.com.", "/"), Some("ns/a"));
        assert_eq!(normalize_host("[::1]:8080"), "[::1]");
        assert_eq!(normalize_host("[::1]"), "[::1]");
    }

    #[test]
    fn wildcard_is_one_label_deep() {
        let t = table(vec![worker("ns/wild", 1, &[("*.example.com", "/")])]);
        assert_eq!(id(&t, "a.example.com", "/x"), Some("ns/wild"));
        assert_eq!(id(&t, "b.example.com:80", "/"), Some("ns/wild"));
        assert_eq!(id(&t, "example.com", "/"), None);
        assert_eq!(id(&t, "a.b.example.com", "/"), None);
        assert_eq!(id(&t, "aexample.com", "/"), None);
    }

    #[test]
    fn exact_host_wins_over_wildcard_then_falls_back() {
        let t = table(vec![
            worker("ns/wild", 1, &[("*.example.com", "/")]),
            worker("ns/api", 2, &[("api.example.com", "/v1")]),
        ]);
        assert_eq!(id(&t, "api.example.com", "/v1/x"), Some("ns/api"));
        // The exact host has no route for /other: the wildcard's applies.
        assert_eq!(id(&t, "api.example.com", "/other"), Some("ns/wild"));
        assert_eq!(id(&t, "www.example.com", "/v1"), Some("ns/wild"));
    }

    #[test]
    fn the_older_worker_keeps_a_contested_route() {
        let (t, conflicts) = RouteTable::build(
            vec![
                worker(
                    "ns/newer",
                    20,
                    &[("a.test", "/"), ("a.test", "/only-newer")],
                ),
                worker("ns/older", 10, &[("a.test", "/")]),
            ],
            |_| Arc::default(),
        );
        assert_eq!(id(&t, "a.test", "/"), Some("ns/older"));
        assert_eq!(id(&t, "a.test", "/only-newer/x"), Some("ns/newer"));
        assert_eq!(
            conflicts,
            vec![Conflict {
                worker: WorkerKey::new("ns", "newer"),
                route: Route::new("a.test", "/"),
                holder: Holder::OlderWorker(WorkerKey::new("ns", "older")),
            }]
        );
        // Same age: the smaller worker id wins, whatever the input order.
        for order in [["ns/b", "ns/a"], ["ns/a", "ns/b"]] {
            let t = table(
                order
                    .iter()
                    .map(|w| worker(w, 5, &[("t.test", "/")]))
                    .collect(),
            );
            assert_eq!(id(&t, "t.test", "/"), Some("ns/a"));
        }
    }

    #[test]
    fn an_older_worker_that_is_not_ready_holds_its_routes_unserved() {
        let younger = worker("ns/younger", 20, &[("a.test", "/"), ("a.test", "/own")]);
        let broken = claim("ns/broken", 10, &[("a.test", "/")]);
        let (t, conflicts) = RouteTable::build_with(
            vec![younger.clone()],
            std::slice::from_ref(&broken),
            &[],
            &[],
            |_| Arc::default(),
        );
        // The operator reports the younger one's route as held by ns/broken:
        // the router does not serve it there either.
        assert_eq!(id(&t, "a.test", "/"), None);
        assert_eq!(id(&t, "a.test", "/own"), Some("ns/younger"));
        assert_eq!(
            conflicts,
            vec![Conflict {
                worker: younger.key().clone(),
                route: Route::new("a.test", "/"),
                holder: Holder::OlderWorker(broken.worker.clone()),
            }]
        );
        // Once the older one is deleted (it claims nothing), the route is served.
        let (t, conflicts) =
            RouteTable::build_with(vec![younger], &[], &[], &[], |_| Arc::default());
        assert_eq!(id(&t, "a.test", "/"), Some("ns/younger"));
        assert!(conflicts.is_empty());
    }

    #[test]
    fn unknown_host_or_path_has_no_route() {
        let t = table(vec![worker("ns/a", 1, &[("a.test", "/api")])]);
        assert_eq!(id(&t, "b.test", "/api"), None);
        assert_eq!(id(&t, "a.test", "/"), None);
        assert_eq!(id(&t, "a.test", "/ap"), None);
        assert_eq!(id(&t, "", "/api"), None);
        assert!(table(Vec::new()).lookup("a.test", "/").is_none());
    }

    /// A Worker in namespace `ns`, created at second 1, routed on a.test/x.
    fn resource() -> Worker {
        let spec: WorkerSpec = serde_json::from_value(serde_json::json!({
            "script": "export default {}",
            "routes": [{"host": "a.test", "pathPrefix": "/x"}],
        }))
        .unwrap();
        let mut w = Worker::new("hello", spec);
        w.metadata.namespace = Some("ns".into());
        w.metadata.creation_timestamp = Some(Time(Timestamp::from_second(1).unwrap()));
        w
    }

    fn status(revision: Option<&str>, ready: &str) -> WorkerStatus {
        WorkerStatus {
            revision: revision.map(str::to_owned),
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: ready.into(),
                reason: "Test".into(),
                message: String::new(),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
                observed_generation: None,
            }],
            ..WorkerStatus::default()
        }
    }

    #[test]
    fn only_ready_workers_with_a_revision_are_routable_but_all_claim() {
        let mut w = resource();
        let claimant = Watched::Claimant(w.claim().unwrap());
        assert!(RoutableWorker::from_worker(&w).is_none());
        assert_eq!(Watched::from_worker(&w), claimant);
        for (revision, ready) in [(Some("r1"), "False"), (None, "True")] {
            w.status = Some(status(revision, ready));
            assert!(RoutableWorker::from_worker(&w).is_none());
            assert_eq!(Watched::from_worker(&w), claimant);
        }
        w.status = Some(status(Some("r1"), "True"));
        let r = RoutableWorker::from_worker(&w).unwrap();
        assert_eq!(r.worker_id(), "ns/hello");
        assert_eq!(r.split.serving().collect::<Vec<_>>(), ["r1"]);
        assert_eq!(r.claim.routes, [Route::new("a.test", "/x")]);
        assert_eq!(r.claim.since, Some(1_000_000_000));
        assert_eq!(Watched::from_worker(&w), Watched::Routable(r));
        // Being deleted: it claims nothing.
        w.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(RoutableWorker::from_worker(&w).is_none());
        assert_eq!(Watched::from_worker(&w), Watched::Ignored);
    }

    #[test]
    fn a_host_belongs_to_one_namespace() {
        let (t, conflicts) = RouteTable::build(
            vec![
                worker("b/site", 10, &[("victim.example", "/")]),
                // Namespace a tries a longer prefix on b's host, and a
                // wildcard over it: neither is served.
                worker(
                    "a/thief",
                    20,
                    &[("victim.example", "/login"), ("*.example", "/")],
                ),
                worker("a/own", 30, &[("a.example", "/")]),
            ],
            |_| Arc::default(),
        );
        assert_eq!(id(&t, "victim.example", "/login"), Some("b/site"));
        assert_eq!(id(&t, "other.example", "/"), None);
        assert_eq!(id(&t, "a.example", "/"), Some("a/own"));
        assert_eq!(conflicts.len(), 2, "{conflicts:?}");
        assert!(conflicts.iter().all(|c| {
            c.worker.to_string() == "a/thief"
                && c.holder
                    .to_string()
                    .contains("belongs to namespace b (Worker b/site)")
        }));
    }

    #[test]
    fn a_host_namespace_is_the_one_its_requests_are_routed_to() {
        let (t, _) = RouteTable::build(
            vec![
                worker("b/site", 10, &[("victim.example", "/")]),
                worker("a/thief", 20, &[("victim.example", "/login")]),
                worker("c/wild", 30, &[("*.wild.example", "/")]),
                // Under c's older wildcard: not admitted.
                worker("d/exact", 40, &[("one.wild.example", "/")]),
                worker("c/api", 50, &[("api.wild.example", "/")]),
            ],
            |_| Arc::default(),
        );
        let routed = |host: &str| Some(id(&t, host, "/")?.split('/').next()?.to_owned());
        for host in [
            "victim.example",
            "two.wild.example",
            "one.wild.example",
            "api.wild.example",
        ] {
            assert_eq!(t.host_namespace(host), routed(host).as_deref(), "{host}");
        }
        assert_eq!(t.host_namespace("victim.example"), Some("b"));
        assert_eq!(t.host_namespace("one.wild.example"), Some("c"));
        assert_eq!(t.host_namespace("api.wild.example"), Some("c"));
        // One label deep, as routes are.
        assert_eq!(t.host_namespace("a.two.wild.example"), None);
        assert_eq!(t.host_namespace("wild.example"), None);
        assert_eq!(t.host_namespace("nobody.example"), None);
    }

    #[test]
    fn reserved_hosts_are_served_only_to_their_namespace() {
        let reservations = vec!["*.corp.example=team-a".parse().unwrap()];
        let (t, _) = RouteTable::build_with(
            vec![
                worker("team-b/early", 1, &[("x.corp.example", "/")]),
                worker("team-a/app", 2, &[("y.corp.example", "/")]),
            ],
            &[],
            &reservations,
            &[],
            |_| Arc::default(),
        );
        assert_eq!(id(&t, "x.corp.example", "/"), None);
        assert_eq!(id(&t, "y.corp.example", "/"), Some("team-a/app"));
    }

    #[test]
    fn a_recorded_host_is_served_to_its_namespace_after_a_redeploy() {
        // b's new Worker is younger than a's squatter and wildcard; b's
        // host is recorded as b's: b is served, a never.
        let owners = [HostOwner {
            host: "victim.example".into(),
            namespace: "b".into(),
            since: 1,
            released: None,
        }];
        let squatters = || {
            vec![
                worker("a/squat", 10, &[("victim.example", "/")]),
                worker("a/wild", 11, &[("*.example", "/")]),
            ]
        };
        let mut workers = squatters();
        workers.push(worker("b/site-v2", 20, &[("victim.example", "/")]));
        let (t, _) = RouteTable::build_with(workers, &[], &[], &owners, |_| Arc::default());
        assert_eq!(id(&t, "victim.example", "/"), Some("b/site-v2"));
        assert_eq!(id(&t, "other.example", "/"), None);
        // Between b's delete and its re-create: held for b, nobody served.
        let (t, conflicts) =
            RouteTable::build_with(squatters(), &[], &[], &owners, |_| Arc::default());
        assert_eq!(id(&t, "victim.example", "/"), None);
        assert_eq!(conflicts.len(), 2, "{conflicts:?}");
    }
}
