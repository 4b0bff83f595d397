//! The bundles a node can run: an in-memory index of worker id → its
//! revisions, fed by a watch on the labelled Secrets of the node's namespace
//! (`bundles/watch.rs`). The operator writes one Secret per revision it keeps
//! (a traffic split runs several at once); every one is held until its
//! Secret goes, plus the newest few revisions a Secret held before being
//! rewritten in place.
//!
//! Reads are lock-free: the index is an immutable snapshot behind an
//! `ArcSwap`, replaced whole on every change (changes are rare; requests are
//! not; only writers take a lock). A request for a revision not seen yet waits on a `watch` channel that
//! every change bumps — woken by the watch, never polling — up to a bound.

mod pull;
mod watch;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
// Looked up per request: foldhash (seeded per process) rather than SipHash.
use foldhash::HashMap;
use isolane_engine::WorkerBundle;
use tokio::sync::watch as channel;

use crate::error::Error;

pub use pull::Puller;
pub use watch::{BundleError, parse_secret, watch_bundles};

/// Worker id → revisions, and Secret name → worker id (for deletions).
#[derive(Debug, Clone, Default)]
struct Snapshot {
    workers: HashMap<String, Revisions>,
    secrets: HashMap<String, String>,
}

/// One worker's revisions, newest first.
#[derive(Debug, Clone, Default)]
struct Revisions {
    newest_first: VecDeque<Held>,
}

/// A revision and the Secret it came from.
#[derive(Debug, Clone)]
struct Held {
    bundle: Arc<WorkerBundle>,
    secret: String,
    /// The Secret still holds this revision. A Secret rewritten in place
    /// with another revision leaves the old one superseded: kept (a few) so
    /// requests routed to it meanwhile still run.
    current: bool,
}

/// A worker revision the index holds, for `Stats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub worker_id: String,
    pub revision: String,
}

/// The node's bundles. Cheap to share (`Arc`); every method takes `&self`.
#[derive(Debug)]
pub struct BundleIndex {
    snapshot: ArcSwap<Snapshot>,
    /// Bumped on every change; waiters for a revision watch it.
    changes: channel::Sender<u64>,
    /// Whether the first full list of Secrets has been applied.
    synced: channel::Sender<bool>,
    writer: Mutex<()>,
    keep: usize,
}

// === impl BundleIndex ===

impl BundleIndex {
    /// An empty index keeping, for a Secret rewritten in place, its newest
    /// `keep` revisions.
    pub fn new(keep: usize) -> Self {
        Self {
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            changes: channel::Sender::new(0),
            synced: channel::Sender::new(false),
            writer: Mutex::new(()),
            keep: keep.max(1),
        }
    }

    /// Adds (or re-adds) a revision as the worker's newest, from the Secret
    /// called `secret` (a revision it held before is superseded).
    pub fn insert(&self, secret: &str, bundle: WorkerBundle) {
        self.update(|snapshot| snapshot.insert(secret, Arc::new(bundle), self.keep));
    }

    /// Forgets the revisions of the Secret `secret` (and the worker, when it
    /// has none left). Requests already running keep their `Arc` and finish.
    pub fn remove_secret(&self, secret: &str) {
        self.update(|snapshot| snapshot.remove_secret(secret));
    }

    /// Replaces everything with the bundles of a full list (a watch restart).
    pub fn replace_all(&self, bundles: Vec<(String, WorkerBundle)>) {
        self.update(|snapshot| {
            let mut fresh = Snapshot::default();
            for (secret, bundle) in bundles {
                // Keep the revisions held before, superseded, so a relist
                // during a rollout does not fail requests for the previous one.
                if !fresh.workers.contains_key(&bundle.id)
                    && let Some(old) = snapshot.workers.get(&bundle.id)
                {
                    let mut old = old.clone();
                    for held in &mut old.newest_first {
                        held.current = false;
                        fresh
                            .secrets
                            .entry(held.secret.clone())
                            .or_insert_with(|| bundle.id.clone());
                    }
                    fresh.workers.insert(bundle.id.clone(), old);
                }
                fresh.insert(&secret, Arc::new(bundle), self.keep);
            }
            *snapshot = fresh;
        });
        self.synced.send_replace(true);
    }

    /// Whether the first full list has been applied.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the first full list has been applied.
    pub async fn wait_synced(&self) {
        let mut synced = self.synced.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we wait.
        let _ = synced.wait_for(|synced| *synced).await;
    }

    /// The bundle for `worker_id` at `revision` (the newest when `revision`
    /// is empty), if the index holds it now.
    pub fn get(&self, worker_id: &str, revision: &str) -> Option<Arc<WorkerBundle>> {
        let snapshot = self.snapshot.load();
        let revisions = snapshot.workers.get(worker_id)?;
        if revision.is_empty() {
            return revisions
                .newest_first
                .iter()
                .find(|held| held.current)
                .or(revisions.newest_first.front())
                .map(|held| held.bundle.clone());
        }
        revisions
            .newest_first
            .iter()
            .find(|held| held.bundle.revision == revision)
            .map(|held| held.bundle.clone())
    }

    /// [`get`](Self::get), waiting up to `wait` for the watch to deliver it.
    pub async fn resolve(
        &self,
        worker_id: &str,
        revision: &str,
        wait: Duration,
    ) -> Result<Arc<WorkerBundle>, Error> {
        // The common case touches nothing shared but the snapshot.
        if let Some(bundle) = self.get(worker_id, revision) {
            return Ok(bundle);
        }
        // Subscribe before looking again, so a change between the look and
        // the wait still wakes us.
        let mut changes = self.changes.subscribe();
        if let Some(bundle) = self.get(worker_id, revision) {
            return Ok(bundle);
        }
        let started = tokio::time::Instant::now();
        let deadline = started + wait;
        loop {
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                break;
            }
            if let Some(bundle) = self.get(worker_id, revision) {
                return Ok(bundle);
            }
        }
        let waited = started.elapsed();
        let known = self.snapshot.load().workers.contains_key(worker_id);
        Err(if known && !revision.is_empty() {
            Error::UnknownRevision {
                worker_id: worker_id.to_owned(),
                revision: revision.to_owned(),
                waited,
            }
        } else {
            Error::UnknownWorker {
                worker_id: worker_id.to_owned(),
                waited,
            }
        })
    }

    /// Every revision held, sorted by worker id, newest revision first.
    pub fn loaded(&self) -> Vec<Loaded> {
        let snapshot = self.snapshot.load();
        let mut loaded: Vec<Loaded> = snapshot
            .workers
            .iter()
            .flat_map(|(worker_id, revisions)| {
                revisions.newest_first.iter().map(|held| Loaded {
                    worker_id: worker_id.clone(),
                    revision: held.bundle.revision.clone(),
                })
            })
            .collect();
        loaded.sort_by(|a, b| a.worker_id.cmp(&b.worker_id));
        loaded
    }

    /// The worker ids held now.
    pub fn worker_ids(&self) -> std::collections::BTreeSet<String> {
        self.snapshot.load().workers.keys().cloned().collect()
    }

    /// Changes from now on: the receiver sees every change made after this
    /// call (`changed()`).
    pub fn subscribe(&self) -> channel::Receiver<u64> {
        self.changes.subscribe()
    }

    /// (workers, revisions) held.
    pub fn counts(&self) -> (usize, usize) {
        let snapshot = self.snapshot.load();
        let revisions = snapshot
            .workers
            .values()
            .map(|r| r.newest_first.len())
            .sum();
        (snapshot.workers.len(), revisions)
    }

    fn update(&self, change: impl FnOnce(&mut Snapshot)) {
        // Writers (the one watch task, and tests) take a lock so no update is
        // lost; readers never do: they load the current snapshot.
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Snapshot::clone(&self.snapshot.load());
        change(&mut next);
        self.snapshot.store(Arc::new(next));
        self.changes.send_modify(|generation| *generation += 1);
    }
}

// === impl Snapshot ===

impl Snapshot {
    fn insert(&mut self, secret: &str, bundle: Arc<WorkerBundle>, keep: usize) {
        // A Secret renamed onto another worker id: forget what it held there.
        if let Some(previous) = self.secrets.get(secret)
            && *previous != bundle.id
        {
            let previous = previous.clone();
            self.forget(&previous, secret);
        }
        self.secrets.insert(secret.to_owned(), bundle.id.clone());
        let revisions = self.workers.entry(bundle.id.clone()).or_default();
        let held = &mut revisions.newest_first;
        for older in held.iter_mut().filter(|h| h.secret == secret) {
            older.current = false;
        }
        held.retain(|h| h.bundle.revision != bundle.revision);
        held.push_front(Held {
            bundle,
            secret: secret.to_owned(),
            current: true,
        });
        // Superseded revisions: the newest `keep - 1` of them stay.
        let mut superseded = 0;
        held.retain(|h| {
            if h.current {
                return true;
            }
            superseded += 1;
            superseded < keep
        });
    }

    fn remove_secret(&mut self, secret: &str) {
        if let Some(worker_id) = self.secrets.remove(secret) {
            self.forget(&worker_id, secret);
        }
    }

    /// Drops the revisions `worker_id` got from `secret`.
    fn forget(&mut self, worker_id: &str, secret: &str) {
        if let Some(revisions) = self.workers.get_mut(worker_id) {
            revisions.newest_first.retain(|h| h.secret != secret);
            if revisions.newest_first.is_empty() {
                self.workers.remove(worker_id);
            }
        }
    }
}

/// A Durable Object binding to a class another Worker hosts finds it here
/// (its newest revision).
impl isolane_engine::WorkerLookup for BundleIndex {
    fn current(&self, worker_id: &str) -> Option<Arc<WorkerBundle>> {
        self.get(worker_id, "")
    }
}

/// The service bindings of `bindings`: binding name to the Worker (of the
/// same namespace) it calls and its entrypoint.
fn services(
    bindings: &[isolane_worker::Binding],
) -> std::collections::BTreeMap<String, isolane_engine::ServiceTarget> {
    bindings
        .iter()
        .filter_map(|binding| {
            let service = binding.service.as_ref()?;
            let target = isolane_engine::ServiceTarget {
                worker: service.name.clone(),
                entrypoint: service.entrypoint.clone(),
                props: service.props.as_ref().map(isolane_worker::Props::to_json),
            };
            Some((binding.name.clone(), target))
        })
        .collect()
}

/// The dispatch namespace bindings of `bindings`: binding name to the
/// namespace it calls into, and whether that namespace agreed (in
/// `consent`, the operator's [`isolane_worker::Bundle::dispatch_consent`]).
fn dispatchers(
    bindings: &[isolane_worker::Binding],
    consent: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeMap<String, isolane_engine::DispatchTarget> {
    bindings
        .iter()
        .filter_map(|binding| {
            let dispatch = binding.dispatch_namespace.as_ref()?;
            let namespace = dispatch.namespace.clone();
            let target = isolane_engine::DispatchTarget {
                consented: consent.contains(&namespace),
                namespace,
                outbound: dispatch.outbound.clone(),
            };
            Some((binding.name.clone(), target))
        })
        .collect()
}

/// The queue producer bindings of `bindings`: binding name to the queue
/// (and its delay).
fn queues(
    bindings: &[isolane_worker::Binding],
) -> std::collections::BTreeMap<String, isolane_worker::QueueBinding> {
    bindings
        .iter()
        .filter_map(|binding| Some((binding.name.clone(), binding.queue.clone()?)))
        .collect()
}

/// The D1 bindings of `bindings`: binding name to the database.
fn d1(bindings: &[isolane_worker::Binding]) -> std::collections::BTreeMap<String, String> {
    bindings
        .iter()
        .filter_map(|binding| Some((binding.name.clone(), binding.d1.as_ref()?.database.clone())))
        .collect()
}

/// The R2 bindings of `bindings`: name to bucket.
fn r2(bindings: &[isolane_worker::Binding]) -> std::collections::BTreeMap<String, String> {
    bindings
        .iter()
        .filter_map(|binding| {
            Some((
                binding.name.clone(),
                binding.r2_bucket.as_ref()?.bucket.clone(),
            ))
        })
        .collect()
}

/// The workflow bindings of `bindings`: name to the workflow, run by
/// Worker `own` (this one) unless the binding names another.
fn workflows(
    bindings: &[isolane_worker::Binding],
    own: &str,
) -> std::collections::BTreeMap<String, isolane_worker::WorkflowTarget> {
    bindings
        .iter()
        .filter_map(|binding| {
            let flow = binding.workflow.as_ref()?;
            let target = isolane_worker::WorkflowTarget {
                workflow: flow.workflow_name().to_owned(),
                worker: flow.worker.clone().unwrap_or_else(|| own.to_owned()),
                class: flow.class_name.clone(),
            };
            Some((binding.name.clone(), target))
        })
        .collect()
}

/// The names of the Images bindings of `bindings`.
fn images(bindings: &[isolane_worker::Binding]) -> std::collections::BTreeSet<String> {
    bindings
        .iter()
        .filter(|binding| binding.images.is_some())
        .map(|binding| binding.name.clone())
        .collect()
}

/// The names of the Worker Loader bindings of `bindings`.
fn loaders(bindings: &[isolane_worker::Binding]) -> std::collections::BTreeSet<String> {
    bindings
        .iter()
        .filter(|binding| binding.worker_loader.is_some())
        .map(|binding| binding.name.clone())
        .collect()
}

/// KV bindings: binding name to the namespace's KV namespace.
fn kv(bindings: &[isolane_worker::Binding]) -> std::collections::BTreeMap<String, String> {
    bindings
        .iter()
        .filter_map(|binding| Some((binding.name.clone(), binding.kv_namespace.clone()?)))
        .collect()
}

/// The engine's view of a bundle from its Secret.
pub fn worker_bundle(bundle: isolane_worker::Bundle) -> WorkerBundle {
    // The operator (and `isolane dev`) refuse bad settings before a bundle
    // is written; one that slipped through runs without Node.js modules.
    let compat = bundle.compat().unwrap_or_default();
    // A class named with this Worker's own name as its host is its own.
    let name = bundle
        .worker_id
        .split_once('/')
        .map_or("", |(_, name)| name);
    let workflows = workflows(&bundle.bindings, name);
    let (hosted, own): (Vec<_>, Vec<_>) = bundle
        .bindings
        .iter()
        .filter_map(|binding| Some((binding.name.clone(), binding.durable_object.clone()?)))
        .partition(|(_, object)| object.worker.as_deref().is_some_and(|w| w != name));
    WorkerBundle {
        assets: bundle.assets,
        id: bundle.worker_id,
        revision: bundle.revision,
        script: bundle.script,
        modules: bundle.modules.map(std::sync::Arc::new),
        env: bundle.env,
        json_env: bundle.json_env,
        kv: kv(&bundle.bindings),
        sqlite_classes: own
            .iter()
            .filter(|(_, object)| object.sqlite)
            .map(|(_, object)| object.class_name.clone())
            .collect(),
        durable_objects: own
            .into_iter()
            .map(|(binding, object)| (binding, object.class_name))
            .collect(),
        hosted_objects: hosted
            .into_iter()
            .map(|(binding, object)| {
                let hosted = isolane_engine::HostedClass {
                    worker: object.worker.unwrap_or_default(),
                    class: object.class_name,
                };
                (binding, hosted)
            })
            .collect(),
        services: services(&bundle.bindings),
        dispatchers: dispatchers(&bundle.bindings, &bundle.dispatch_consent),
        queues: queues(&bundle.bindings),
        d1: d1(&bundle.bindings),
        images: images(&bundle.bindings),
        loaders: loaders(&bundle.bindings),
        no_network: false,
        cpu_ms_per_second: bundle.cpu_ms_per_second,
        r2: r2(&bundle.bindings),
        workflows,
        queue_consumers: bundle.queue_consumers,
        limits: bundle.limits,
        allowed_hosts: bundle.allowed_hosts,
        compat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(id: &str, revision: &str) -> WorkerBundle {
        WorkerBundle::new(id, revision, "export default {}")
    }

    #[test]
    fn json_bindings_reach_the_engine_beside_the_text_ones() {
        let bundle = isolane_worker::Bundle::new(
            "a/w".into(),
            "export default {}".into(),
            std::collections::BTreeMap::from([("TEXT".to_owned(), "{}".to_owned())]),
            isolane_worker::Limits::default(),
            Vec::new(),
        )
        .with_json_env(std::collections::BTreeMap::from([(
            "CONFIG".to_owned(),
            "[1]".to_owned(),
        )]));
        let engine = worker_bundle(bundle);
        assert_eq!(engine.env["TEXT"], "{}");
        assert_eq!(engine.json_env["CONFIG"], "[1]");
        assert!(!engine.env.contains_key("CONFIG"));
    }

    #[test]
    fn keeps_the_newest_revisions_of_each_worker() {
        let index = BundleIndex::new(2);
        index.insert("s1", bundle("a/w", "r1"));
        index.insert("s1", bundle("a/w", "r2"));
        index.insert("s1", bundle("a/w", "r3"));
        index.insert("s2", bundle("a/x", "q1"));
        assert_eq!(index.get("a/w", "").unwrap().revision, "r3");
        assert!(index.get("a/w", "r2").is_some());
        assert!(index.get("a/w", "r1").is_none(), "only the newest two stay");
        assert_eq!(index.counts(), (2, 3));
        // Re-applying an older revision (a rollback) makes it the newest.
        index.insert("s1", bundle("a/w", "r2"));
        assert_eq!(index.get("a/w", "").unwrap().revision, "r2");
        assert_eq!(index.counts(), (2, 3));
        index.remove_secret("s1");
        assert!(index.get("a/w", "").is_none());
        assert!(index.get("a/w", "r3").is_none());
        assert_eq!(
            index.loaded(),
            vec![Loaded {
                worker_id: "a/x".into(),
                revision: "q1".into()
            }]
        );
    }

    #[test]
    fn revisions_from_their_own_secrets_are_all_held_until_their_secret_goes() {
        let index = BundleIndex::new(1);
        for (secret, revision) in [("w-r1", "r1"), ("w-r2", "r2"), ("w-r3", "r3")] {
            index.insert(secret, bundle("a/w", revision));
        }
        // `keep` bounds only revisions superseded in place: all three stay.
        for revision in ["r1", "r2", "r3"] {
            assert!(index.get("a/w", revision).is_some(), "{revision}");
        }
        assert_eq!(index.get("a/w", "").unwrap().revision, "r3");
        index.remove_secret("w-r2");
        assert!(index.get("a/w", "r2").is_none());
        assert!(index.get("a/w", "r1").is_some());
        assert!(index.get("a/w", "r3").is_some());
        index.remove_secret("w-r3");
        assert_eq!(index.get("a/w", "").unwrap().revision, "r1");
        index.remove_secret("w-r1");
        assert_eq!(index.counts(), (0, 0));
    }

    #[test]
    fn a_relist_replaces_everything_but_keeps_held_revisions() {
        let index = BundleIndex::new(3);
        index.insert("s1", bundle("a/w", "r1"));
        index.insert("s2", bundle("a/gone", "g1"));
        assert!(!index.is_synced());
        index.replace_all(vec![("s1".into(), bundle("a/w", "r2"))]);
        assert!(index.is_synced());
        assert!(index.get("a/gone", "").is_none());
        assert_eq!(index.get("a/w", "").unwrap().revision, "r2");
        assert!(index.get("a/w", "r1").is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_for_an_unseen_revision_waits_for_the_watch() {
        let index = Arc::new(BundleIndex::new(3));
        index.insert("s1", bundle("a/w", "r1"));
        let waiter = {
            let index = index.clone();
            tokio::spawn(async move { index.resolve("a/w", "r2", Duration::from_secs(2)).await })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        index.insert("s1", bundle("a/w", "r2"));
        let found = waiter.await.unwrap().unwrap();
        assert_eq!(found.revision, "r2");

        let started = tokio::time::Instant::now();
        let error = index
            .resolve("a/w", "r9", Duration::from_secs(2))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "revision_unavailable");
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        let error = index
            .resolve("a/nobody", "", Duration::from_millis(10))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "unknown_worker");
    }

    /// The Worker's compatibility settings reach the engine: Node.js
    /// modules, and whether `process.env` holds its text bindings.
    #[test]
    fn compatibility_settings_reach_the_engine() {
        let plain = isolane_worker::Bundle::new(
            "a/w".into(),
            "export default {}".into(),
            Default::default(),
            Default::default(),
            Vec::new(),
        );
        let engine = worker_bundle(plain.clone());
        assert_eq!(engine.compat, isolane_engine::Compat::default());
        let node =
            plain.with_compatibility(Some("2025-11-01".into()), vec!["nodejs_compat".into()]);
        let engine = worker_bundle(node);
        assert_eq!(
            (
                engine.compat.node,
                engine.compat.process_env,
                engine.compat.message_channel
            ),
            (isolane_engine::NodeCompat::V2, true, true)
        );
    }

    #[test]
    fn a_class_another_worker_hosts_is_told_apart_from_the_workers_own() {
        use isolane_worker::Binding;
        let mut bundle = isolane_worker::Bundle::new(
            "team-a/caller".into(),
            "export default {}".into(),
            Default::default(),
            Default::default(),
            Vec::new(),
        );
        bundle.bindings = vec![
            Binding::durable_object("OWN", "Own"),
            Binding::sqlite_durable_object("CHAT", "Chat"),
            Binding::hosted_durable_object("SELF", "Mine", "caller"),
            Binding::hosted_durable_object("HOSTED", "Counter", "host"),
            Binding::kv("KV", "cache"),
            {
                let mut auth = Binding::service("AUTH", "auth", Some("Admin"));
                if let Some(service) = &mut auth.service {
                    service.props = serde_json::from_str(r#"{"role":"admin"}"#).ok();
                }
                auth
            },
        ];
        let worker = worker_bundle(bundle);
        let auth = isolane_engine::ServiceTarget {
            worker: "auth".into(),
            entrypoint: Some("Admin".into()),
            props: Some(r#"{"role":"admin"}"#.into()),
        };
        assert_eq!(worker.services.get("AUTH"), Some(&auth));
        assert_eq!(worker.services.len(), 1);
        let own: Vec<_> = worker
            .durable_objects
            .iter()
            .map(|(b, c)| (b.as_str(), c.as_str()))
            .collect();
        assert_eq!(own, [("CHAT", "Chat"), ("OWN", "Own"), ("SELF", "Mine")]);
        let sqlite: Vec<_> = worker.sqlite_classes.iter().map(String::as_str).collect();
        assert_eq!(sqlite, ["Chat"], "only the class bound with sqlite");
        let hosted = isolane_engine::HostedClass {
            worker: "host".into(),
            class: "Counter".into(),
        };
        assert_eq!(worker.hosted_objects.len(), 1);
        assert_eq!(worker.hosted_objects.get("HOSTED"), Some(&hosted));
    }

    #[test]
    fn dispatch_bindings_reach_the_engine_with_the_consent_the_operator_saw() {
        use isolane_worker::Binding;
        let bundle = isolane_worker::Bundle::new(
            "platform/dispatcher".into(),
            "export default {}".into(),
            Default::default(),
            Default::default(),
            Vec::new(),
        )
        .with_bindings(vec![
            Binding::dispatch_namespace("A", "cust-a"),
            Binding::dispatch_namespace("B", "cust-b"),
        ])
        .with_dispatch_consent(["cust-a".to_owned()].into());
        let worker = worker_bundle(bundle);
        let target = |namespace: &str, consented| isolane_engine::DispatchTarget {
            namespace: namespace.into(),
            consented,
            outbound: None,
        };
        assert_eq!(worker.dispatchers.get("A"), Some(&target("cust-a", true)));
        assert_eq!(worker.dispatchers.get("B"), Some(&target("cust-b", false)));
        assert_eq!(worker.dispatchers.len(), 2);
        assert!(worker.services.is_empty());
    }

    #[test]
    fn images_bindings_reach_the_engine_by_name() {
        use isolane_worker::Binding;
        let bundle = isolane_worker::Bundle::new(
            "web/thumbs".into(),
            "export default {}".into(),
            Default::default(),
            Default::default(),
            Vec::new(),
        )
        .with_bindings(vec![Binding::images("IMAGES"), Binding::kv("KV", "cache")]);
        let worker = worker_bundle(bundle);
        assert_eq!(worker.images, ["IMAGES".to_owned()].into());
        assert_eq!(worker.kv.len(), 1);
    }
}
