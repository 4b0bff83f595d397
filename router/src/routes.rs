//! The route table: which Worker answers a host and path.
//!
//! Built from the routable Workers (status has a revision and `Ready=True`) each
//! time the watch sees a change, then published as an immutable snapshot that
//! every request reads without a lock. The lookup rules (exact host before
//! its one-label wildcard, longest whole-segment prefix first) are
//! `isolane_hosts::RouteIndex`'s, shared with `isolane dev`; nothing matched
//! is a 404 at the proxy. When two Workers claim the same host and prefix (a conflict
//! the operator reports on the newer one), the older Worker keeps the route —
//! ties broken by worker id — so every router replica agrees.
//!
//! Hosts belong to namespaces: a Worker's route on a host that another
//! namespace holds (the same host, or a wildcard overlapping it) or that is
//! reserved for another namespace is not served, whatever the webhook let
//! through. The rule is `isolane_hosts::decide`, the one the operator uses.
//! Workers being deleted claim nothing.

use std::collections::HashMap;
use std::sync::Arc;

use isolane_crds::{ConditionStatus, ConditionType, Worker};
pub use isolane_hosts::normalize_host;
use isolane_hosts::{Claim, Owners, Reservation, RouteIndex};
use k8s_openapi::jiff::Timestamp;

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
    /// `namespace/name`.
    pub worker_id: String,
    /// The revisions its requests run.
    pub split: Split,
    /// When the Worker was created; older Workers win route conflicts.
    pub created: Option<Timestamp>,
    /// `(host, pathPrefix)` pairs from the spec.
    pub routes: Vec<(String, String)>,
    /// Cron schedules from the spec (`spec.triggers`).
    pub triggers: Option<isolane_crds::Triggers>,
}

impl RoutableWorker {
    /// The routable view of `worker`, or `None` while it has no revision, is not
    /// `Ready=True`, or lacks a name or namespace.
    pub fn from_worker(worker: &Worker) -> Option<Self> {
        let namespace = worker.metadata.namespace.as_deref()?;
        let name = worker.metadata.name.as_deref()?;
        let status = worker.status.as_ref()?;
        let split = Split::from_worker(worker)?;
        let ready = status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Ready.as_str() && c.status == ConditionStatus::True.as_str()
        });
        if !ready || worker.metadata.deletion_timestamp.is_some() {
            return None;
        }
        Some(Self {
            worker_id: format!("{namespace}/{name}"),
            split,
            created: worker.metadata.creation_timestamp.as_ref().map(|t| t.0),
            routes: worker
                .spec
                .routes
                .iter()
                .map(|r| (r.host.clone(), r.path_prefix.clone()))
                .collect(),
            triggers: worker.spec.triggers.clone().filter(|t| !t.crons.is_empty()),
        })
    }
}

/// A route that lost a conflict: `loser` also claims `host` + `path_prefix`,
/// which `winner` keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The contested host.
    pub host: String,
    /// The contested prefix.
    pub path_prefix: String,
    /// The worker that keeps the route.
    pub winner: String,
    /// The worker whose claim is ignored.
    pub loser: String,
}

/// The namespace of a `namespace/name` worker id.
fn namespace_of(worker_id: &str) -> &str {
    worker_id
        .split_once('/')
        .map_or("", |(namespace, _)| namespace)
}

/// Which namespace may serve each host the Workers claim.
fn host_owners(workers: &[RoutableWorker], reservations: &[Reservation]) -> Owners {
    let claims = workers.iter().flat_map(|worker| {
        let (namespace, name) = worker.worker_id.split_once('/').unwrap_or(("", ""));
        let since = worker.created.map(|t| t.as_nanosecond());
        worker.routes.iter().map(move |(host, _)| Claim {
            namespace: namespace.to_owned(),
            host: normalize_host(host),
            since,
            worker: name.to_owned(),
        })
    });
    isolane_hosts::decide(claims, reservations)
}

/// An immutable index from host and path to [`Backend`] (the matching
/// rules are `isolane_hosts::RouteIndex`'s).
#[derive(Debug, Default)]
pub struct RouteTable {
    index: RouteIndex<Arc<Backend>>,
    backends: Vec<Arc<Backend>>,
}

impl RouteTable {
    /// Indexes `workers`, giving each its metrics slot from `slot`; returns the
    /// table and the conflicts it resolved.
    pub fn build(
        workers: Vec<RoutableWorker>,
        slot: impl FnMut(&str) -> Arc<WorkerSlot>,
    ) -> (Self, Vec<Conflict>) {
        Self::build_with(workers, &[], slot)
    }

    /// [`RouteTable::build`], with hosts reserved for namespaces.
    pub fn build_with(
        mut workers: Vec<RoutableWorker>,
        reservations: &[Reservation],
        mut slot: impl FnMut(&str) -> Arc<WorkerSlot>,
    ) -> (Self, Vec<Conflict>) {
        let owners = host_owners(&workers, reservations);
        // Oldest first (no timestamp sorts last), then by id: the first claim wins.
        workers.sort_by(|a, b| {
            let age = match (a.created, b.created) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            };
            age.then_with(|| a.worker_id.cmp(&b.worker_id))
        });
        let mut table = Self::default();
        let mut claimed: HashMap<(String, String), String> = HashMap::new();
        let mut conflicts = Vec::new();
        for worker in workers {
            let backend = Arc::new(Backend {
                slot: slot(&worker.worker_id),
                worker_id: worker.worker_id,
                split: worker.split,
            });
            let namespace = namespace_of(&backend.worker_id);
            for (host, prefix) in worker.routes {
                let host = normalize_host(&host);
                if let Err(owner) = owners.check(namespace, &host) {
                    conflicts.push(Conflict {
                        host,
                        path_prefix: prefix,
                        winner: owner.to_string(),
                        loser: backend.worker_id.clone(),
                    });
                    continue;
                }
                let key = (host.clone(), prefix.clone());
                if let Some(winner) = claimed.get(&key) {
                    if *winner != backend.worker_id {
                        conflicts.push(Conflict {
                            host,
                            path_prefix: prefix,
                            winner: winner.clone(),
                            loser: backend.worker_id.clone(),
                        });
                    }
                    continue;
                }
                claimed.insert(key, backend.worker_id.clone());
                table.index.insert(&host, &prefix, Arc::clone(&backend));
            }
            table.backends.push(backend);
        }
        (table, conflicts)
    }

    /// The backend for a request to `host` (as in the Host header or
    /// `:authority`, port allowed) and `path`.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&Arc<Backend>> {
        self.index.lookup(host, path)
    }

    /// Every routable Worker in the table, oldest first.
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

    fn worker(id: &str, created: i64, routes: &[(&str, &str)]) -> RoutableWorker {
        RoutableWorker {
            worker_id: id.to_owned(),
            split: Split::single(&format!("rev-{id}")),
            created: Some(Timestamp::from_second(created).unwrap()),
            routes: routes
                .iter()
                .map(|(h, p)| ((*h).to_owned(), (*p).to_owned()))
                .collect(),
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
                host: "a.test".into(),
                path_prefix: "/".into(),
                winner: "ns/older".into(),
                loser: "ns/newer".into(),
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
    fn unknown_host_or_path_has_no_route() {
        let t = table(vec![worker("ns/a", 1, &[("a.test", "/api")])]);
        assert_eq!(id(&t, "b.test", "/api"), None);
        assert_eq!(id(&t, "a.test", "/"), None);
        assert_eq!(id(&t, "a.test", "/ap"), None);
        assert_eq!(id(&t, "", "/api"), None);
        assert!(table(Vec::new()).lookup("a.test", "/").is_none());
    }

    #[test]
    fn only_ready_workers_with_a_revision_are_routable() {
        use isolane_crds::{Route, WorkerSpec, WorkerStatus};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
        let spec: WorkerSpec = serde_json::from_value(serde_json::json!({
            "script": "export default {}",
            "routes": [{"host": "a.test", "pathPrefix": "/x"}],
        }))
        .unwrap();
        assert_eq!(
            spec.routes,
            vec![Route {
                host: "a.test".into(),
                path_prefix: "/x".into()
            }]
        );
        let mut w = Worker::new("hello", spec);
        w.metadata.namespace = Some("ns".into());
        assert!(RoutableWorker::from_worker(&w).is_none());
        let ready = |status: &str| Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: "Test".into(),
            message: String::new(),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            observed_generation: None,
        };
        w.status = Some(WorkerStatus {
            revision: Some("r1".into()),
            conditions: vec![ready("False")],
            ..WorkerStatus::default()
        });
        assert!(RoutableWorker::from_worker(&w).is_none());
        w.status = Some(WorkerStatus {
            revision: None,
            conditions: vec![ready("True")],
            ..WorkerStatus::default()
        });
        assert!(RoutableWorker::from_worker(&w).is_none());
        w.status = Some(WorkerStatus {
            revision: Some("r1".into()),
            conditions: vec![ready("True")],
            ..WorkerStatus::default()
        });
        let r = RoutableWorker::from_worker(&w).unwrap();
        assert_eq!(r.worker_id, "ns/hello");
        assert_eq!(r.split.serving().collect::<Vec<_>>(), ["r1"]);
        assert_eq!(r.routes, vec![("a.test".to_owned(), "/x".to_owned())]);
        // Being deleted: it claims nothing.
        w.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(RoutableWorker::from_worker(&w).is_none());
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
        assert!(
            conflicts.iter().all(|c| c.loser == "a/thief"
                && c.winner.contains("belongs to namespace b (Worker b/site)"))
        );
    }

    #[test]
    fn reserved_hosts_are_served_only_to_their_namespace() {
        let reservations = vec!["*.corp.example=team-a".parse().unwrap()];
        let (t, _) = RouteTable::build_with(
            vec![
                worker("team-b/early", 1, &[("x.corp.example", "/")]),
                worker("team-a/app", 2, &[("y.corp.example", "/")]),
            ],
            &reservations,
            |_| Arc::default(),
        );
        assert_eq!(id(&t, "x.corp.example", "/"), None);
        assert_eq!(id(&t, "y.corp.example", "/"), Some("team-a/app"));
    }
}
