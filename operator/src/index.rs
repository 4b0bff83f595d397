//! What every Worker refers to and claims, kept from the Worker watch stream.
//!
//! Two questions need an answer without scanning every Worker: "which Workers
//! read this ConfigMap or Secret?" (so a change to it re-reconciles exactly
//! those) and "who owns this route?" (conflicts). [`WorkerIndex::apply_event`]
//! is called on each watch event *after* the reflector store has seen it and
//! *before* the Worker is reconciled, so a reconcile always finds its own
//! references indexed: a referenced object created after the reconcile read it
//! as missing is mapped back to the Worker by the index.
//!
//! Guarantees: after a relist (`Init` … `InitDone`), Workers that vanished while
//! the watch was down are forgotten. Caveats: a Worker deleted without passing
//! through the operator's finalizer is forgotten only when its delete event
//! arrives, which it always does unless the watch restarts in between.

mod callers;

use std::collections::{BTreeSet, HashMap, HashSet};

use isolane_crds::{Worker, WorkerClass, WorkerSpec};
use isolane_worker::{Bundle, Route};
use isolane_worker::{Claim, HostOwner, Reservation};
use kube::runtime::watcher;

use crate::routes::{RouteTable, WorkerKey};
use callers::{Callers, targets};

/// The kind of an object a Worker reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReferenceKind {
    /// A ConfigMap (script or env).
    ConfigMap,
    /// A Secret (env).
    Secret,
}

impl ReferenceKind {
    /// The API kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConfigMap => "ConfigMap",
            Self::Secret => "Secret",
        }
    }
}

/// A ConfigMap or Secret in a namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReferenceKey {
    /// ConfigMap or Secret.
    pub kind: ReferenceKind,
    /// Its namespace (always the Worker's).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

#[derive(Debug)]
struct Entry {
    claim: Claim,
    references: Vec<ReferenceKey>,
    /// The Workers its service bindings name.
    services: Vec<WorkerKey>,
    /// The namespaces its dispatch namespace bindings name.
    dispatch: Vec<String>,
    /// The queues it consumes (`spec.queueConsumers`).
    consumers: Vec<isolane_worker::QueueConsumer>,
}

/// References and route claims of every Worker of the installation's class
/// the watch has seen.
#[derive(Debug, Default)]
pub struct WorkerIndex {
    /// The class of the Workers indexed (the caches' watch keeps only
    /// those; the webhook leaves the others to their installation).
    class: WorkerClass,
    entries: HashMap<WorkerKey, Entry>,
    readers: HashMap<ReferenceKey, BTreeSet<WorkerKey>>,
    callers: Callers,
    /// For each namespace, the Workers whose dispatch namespace bindings
    /// name it: a change to its Namespace's labels re-reconciles them.
    dispatching: HashMap<String, BTreeSet<WorkerKey>>,
    routes: RouteTable,
    /// Workers seen since the current relist started.
    relisting: Option<HashSet<WorkerKey>>,
    /// The tenant policies and the Namespaces' labels (`policy.rs`).
    policies: crate::policy::TenantPolicies,
}

impl WorkerIndex {
    /// An empty index whose route table honours `reservations`.
    pub fn with_reservations(reservations: Vec<Reservation>) -> Self {
        Self {
            routes: RouteTable::with_reservations(reservations),
            ..Self::default()
        }
    }

    /// The index of the Workers of `class` only.
    #[must_use]
    pub fn serving(mut self, class: WorkerClass) -> Self {
        self.class = class;
        self
    }

    /// The class of the Workers indexed.
    pub fn class(&self) -> &WorkerClass {
        &self.class
    }

    /// The tenant policies and the Namespaces' labels.
    pub fn policies(&self) -> &crate::policy::TenantPolicies {
        &self.policies
    }

    /// The tenant policies and the Namespaces' labels, to update.
    pub fn policies_mut(&mut self) -> &mut crate::policy::TenantPolicies {
        &mut self.policies
    }

    /// The Workers of `namespace`.
    pub fn workers_in(&self, namespace: &str) -> Vec<WorkerKey> {
        self.entries
            .keys()
            .filter(|key| key.namespace == namespace)
            .cloned()
            .collect()
    }

    /// Whether `worker` is of the indexed class (this installation's).
    pub fn serves(&self, worker: &Worker) -> bool {
        self.class.serves(worker)
    }

    /// Applies a watch event; returns the *other* Workers it may change and
    /// that so need a reconcile: those whose route ownership may have changed
    /// (they share a route the Worker gained or released), and those whose
    /// service bindings name a Worker that came or went.
    pub fn apply_event(&mut self, event: &watcher::Event<Worker>) -> Vec<WorkerKey> {
        match event {
            watcher::Event::Apply(worker) => self.upsert(worker),
            watcher::Event::InitApply(worker) => {
                let affected = self.upsert(worker);
                if let (Some(seen), Some(key)) = (self.relisting.as_mut(), worker.key()) {
                    seen.insert(key);
                }
                affected
            }
            watcher::Event::Delete(worker) => match worker.key() {
                Some(key) => self.remove(&key),
                None => Vec::new(),
            },
            watcher::Event::Init => {
                self.relisting = Some(HashSet::new());
                Vec::new()
            }
            watcher::Event::InitDone => {
                let Some(seen) = self.relisting.take() else {
                    return Vec::new();
                };
                let gone: Vec<WorkerKey> = self
                    .entries
                    .keys()
                    .filter(|key| !seen.contains(*key))
                    .cloned()
                    .collect();
                let mut affected = BTreeSet::new();
                for key in gone {
                    affected.extend(self.remove(&key));
                }
                affected.into_iter().collect()
            }
        }
    }

    /// Records (or replaces) what `worker` references and claims; a Worker
    /// of another class is forgotten.
    pub fn upsert(&mut self, worker: &Worker) -> Vec<WorkerKey> {
        let Some(claim) = worker.claim() else {
            return Vec::new();
        };
        if !self.serves(worker) {
            return self.remove(&claim.worker);
        }
        let key = claim.worker.clone();
        let (references, services, dispatch) = if worker.metadata.deletion_timestamp.is_some() {
            (Vec::new(), Vec::new(), Vec::new())
        } else {
            (
                references(&key.namespace, &worker.spec),
                targets(&key.namespace, &worker.spec),
                Bundle::dispatch_targets(&worker.spec.bindings)
                    .into_iter()
                    .collect(),
            )
        };
        let old = self.entries.remove(&key);
        let unchanged_routes = old.as_ref().is_some_and(|old| old.claim == claim);
        // A Worker seen for the first time is a target its callers now find.
        let mut affected: BTreeSet<WorkerKey> = match &old {
            Some(_) => BTreeSet::new(),
            None => self.callers.of(&key).cloned().collect(),
        };
        let mut touched: Vec<Route> = Vec::new();
        if let Some(old) = old {
            self.forget_links(&key, &old);
            touched.extend(old.claim.routes);
        }
        self.remember_links(&key, &references, &services, &dispatch);
        touched.extend(claim.routes.iter().cloned());
        if !unchanged_routes {
            self.routes.set(claim.clone());
            affected.extend(self.others_on(&key, &touched));
        }
        let entry = Entry {
            claim,
            references,
            services,
            dispatch,
            consumers: worker.spec.queue_consumers.clone(),
        };
        self.entries.insert(key.clone(), entry);
        affected.remove(&key);
        affected.into_iter().collect()
    }

    /// The queue consumers of each Worker of `namespace` (its name and
    /// `spec.queueConsumers`), for the rule that a queue has one consumer.
    pub fn queue_consumers<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a [isolane_worker::QueueConsumer])> + 'a {
        self.entries
            .iter()
            .filter(move |(key, entry)| key.namespace == namespace && !entry.consumers.is_empty())
            .map(|(key, entry)| (key.name.as_str(), entry.consumers.as_slice()))
    }

    /// Replaces the recorded host owners; returns the Workers whose route
    /// ownership may have changed (those on a host overlapping one whose
    /// record changed), to reconcile.
    pub fn set_owners(&mut self, owners: Vec<HostOwner>) -> Vec<WorkerKey> {
        let mut affected = BTreeSet::new();
        for host in self.routes.set_owners(owners) {
            affected.extend(self.routes.on_overlapping_hosts(&host));
        }
        affected.into_iter().collect()
    }

    /// Replaces one host-owner record ([`RouteTable::replace_owner`]);
    /// returns the Workers whose route ownership may have changed.
    pub fn replace_owner(
        &mut self,
        before: Option<&HostOwner>,
        after: Option<HostOwner>,
    ) -> Vec<WorkerKey> {
        let mut affected = BTreeSet::new();
        for host in self.routes.replace_owner(before, after) {
            affected.extend(self.routes.on_overlapping_hosts(&host));
        }
        affected.into_iter().collect()
    }

    /// Forgets a Worker; returns the Workers on its routes' hosts and those
    /// whose service bindings name it.
    pub fn remove(&mut self, key: &WorkerKey) -> Vec<WorkerKey> {
        let Some(old) = self.entries.remove(key) else {
            return Vec::new();
        };
        self.forget_links(key, &old);
        self.routes.remove(key);
        let mut affected: BTreeSet<WorkerKey> = self.callers.of(key).cloned().collect();
        affected.extend(self.others_on(key, &old.claim.routes));
        affected.remove(key);
        affected.into_iter().collect()
    }

    /// Whether the Worker `key` is indexed (it exists and is this
    /// installation's).
    pub fn contains(&self, key: &WorkerKey) -> bool {
        self.entries.contains_key(key)
    }

    /// The Workers that read `reference`.
    pub fn readers(&self, reference: &ReferenceKey) -> Vec<WorkerKey> {
        self.readers
            .get(reference)
            .map(|readers| readers.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The route table.
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// How many Workers are indexed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no Worker is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records what `key` reads, calls and dispatches into.
    fn remember_links(
        &mut self,
        key: &WorkerKey,
        references: &[ReferenceKey],
        services: &[WorkerKey],
        dispatch: &[String],
    ) {
        for namespace in dispatch {
            self.dispatching
                .entry(namespace.clone())
                .or_default()
                .insert(key.clone());
        }
        for reference in references {
            self.readers
                .entry(reference.clone())
                .or_default()
                .insert(key.clone());
        }
        self.callers.add(key, services);
    }

    /// Forgets what `key` read, called and dispatched into (its `old` entry).
    fn forget_links(&mut self, key: &WorkerKey, old: &Entry) {
        self.forget_references(key, &old.references);
        self.callers.forget(key, &old.services);
        self.forget_dispatch(key, &old.dispatch);
    }

    /// The Workers whose dispatch namespace bindings name `namespace`.
    pub fn dispatching_into(&self, namespace: &str) -> Vec<WorkerKey> {
        self.dispatching
            .get(namespace)
            .map(|workers| workers.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn forget_dispatch(&mut self, key: &WorkerKey, namespaces: &[String]) {
        for namespace in namespaces {
            if let Some(workers) = self.dispatching.get_mut(namespace) {
                workers.remove(key);
                if workers.is_empty() {
                    self.dispatching.remove(namespace);
                }
            }
        }
    }

    fn forget_references(&mut self, key: &WorkerKey, references: &[ReferenceKey]) {
        for reference in references {
            if let Some(readers) = self.readers.get_mut(reference) {
                readers.remove(key);
                if readers.is_empty() {
                    self.readers.remove(reference);
                }
            }
        }
    }

    fn others_on(&self, key: &WorkerKey, routes: &[Route]) -> Vec<WorkerKey> {
        let mut others = BTreeSet::new();
        for route in routes {
            // Everyone on an overlapping host, whatever the prefix or the
            // namespace: the host rule may have moved for them (a namespace's
            // claim on a host is as old as its oldest Worker there), and the
            // age rule for those on the same route.
            others.extend(self.routes.on_overlapping_hosts(&route.host));
        }
        others.remove(key);
        others.into_iter().collect()
    }
}

/// The ConfigMaps and Secrets a Worker spec reads, in `namespace`.
pub fn references(namespace: &str, spec: &WorkerSpec) -> Vec<ReferenceKey> {
    let reference = |kind, name: &str| ReferenceKey {
        kind,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    };
    let mut references = Vec::new();
    if let Some(from) = &spec.script_from {
        references.push(reference(
            ReferenceKind::ConfigMap,
            &from.config_map_key_ref.name,
        ));
    }
    for var in &spec.env {
        let Some(from) = &var.value_from else {
            continue;
        };
        if let Some(secret) = &from.secret_key_ref {
            references.push(reference(ReferenceKind::Secret, &secret.name));
        }
        if let Some(config_map) = &from.config_map_key_ref {
            references.push(reference(ReferenceKind::ConfigMap, &config_map.name));
        }
    }
    references.sort();
    references.dedup();
    references
}

#[cfg(test)]
mod tests {
    use isolane_crds::{ConfigMapKeyRef, EnvValueFrom, EnvVar, ScriptFrom, SecretKeyRef};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn worker(name: &str, created: i64, hosts: &[&str]) -> Worker {
        let spec = WorkerSpec {
            script: None,
            bundle: None,
            bundle_pull_secrets: Vec::new(),
            script_from: Some(ScriptFrom {
                config_map_key_ref: ConfigMapKeyRef {
                    name: format!("{name}-code"),
                    key: "index.js".into(),
                },
            }),
            env: vec![EnvVar {
                name: "TOKEN".into(),
                value: None,
                value_from: Some(EnvValueFrom {
                    secret_key_ref: Some(SecretKeyRef {
                        name: "shared".into(),
                        key: "token".into(),
                    }),
                    config_map_key_ref: None,
                }),
                json: None,
            }],
            ..crate::fixtures::spec(None, hosts)
        };
        crate::fixtures::worker("ns", name, created, spec)
    }

    fn secret(name: &str) -> ReferenceKey {
        ReferenceKey {
            kind: ReferenceKind::Secret,
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn references_map_back_to_exactly_their_readers() {
        let mut index = WorkerIndex::default();
        index.apply_event(&watcher::Event::Apply(worker("a", 1, &[])));
        index.apply_event(&watcher::Event::Apply(worker("b", 2, &[])));
        assert_eq!(
            index.readers(&secret("shared")),
            vec![WorkerKey::new("ns", "a"), WorkerKey::new("ns", "b")]
        );
        let code = ReferenceKey {
            kind: ReferenceKind::ConfigMap,
            namespace: "ns".into(),
            name: "a-code".into(),
        };
        assert_eq!(index.readers(&code), vec![WorkerKey::new("ns", "a")]);
        assert!(index.readers(&secret("a-code")).is_empty());
        index.apply_event(&watcher::Event::Delete(worker("a", 1, &[])));
        assert!(index.readers(&code).is_empty());
        assert_eq!(
            index.readers(&secret("shared")),
            vec![WorkerKey::new("ns", "b")]
        );
    }

    #[test]
    fn route_changes_wake_the_other_claimants_and_status_updates_do_not() {
        let mut index = WorkerIndex::default();
        assert!(
            index
                .apply_event(&watcher::Event::Apply(worker("old", 1, &["x"])))
                .is_empty()
        );
        assert_eq!(
            index.apply_event(&watcher::Event::Apply(worker("new", 2, &["x"]))),
            vec![WorkerKey::new("ns", "old")]
        );
        // Same routes again (e.g. a status update): nobody else to wake.
        assert!(
            index
                .apply_event(&watcher::Event::Apply(worker("new", 2, &["x"])))
                .is_empty()
        );
        // The old one starts deleting: the new one must take the route.
        let mut deleting = worker("old", 1, &["x"]);
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(5).unwrap()));
        assert_eq!(
            index.apply_event(&watcher::Event::Apply(deleting)),
            vec![WorkerKey::new("ns", "new")]
        );
        assert_eq!(
            index.routes().owner(&Route::new("x", "/")),
            Some(&WorkerKey::new("ns", "new"))
        );
    }

    #[test]
    fn a_change_wakes_every_worker_on_an_overlapping_host() {
        let mut index = WorkerIndex::default();
        let mut first = worker("first", 1, &["h.example"]);
        first.spec.routes[0].path_prefix = "/x".into();
        let mut second = worker("second", 3, &["h.example"]);
        second.spec.routes[0].path_prefix = "/y".into();
        let other = crate::fixtures::worker(
            "other",
            "site",
            2,
            crate::fixtures::spec(None, &["*.example"]),
        );
        index.apply_event(&watcher::Event::Apply(first.clone()));
        index.apply_event(&watcher::Event::Apply(second));
        index.apply_event(&watcher::Event::Apply(other));
        let second = WorkerKey::new("ns", "second");
        assert!(index.routes().ownership().lost(&second).is_empty());
        // Without ns/first, namespace ns claims h.example from second 3 on,
        // after other/site's wildcard: ns/second loses its route, though it
        // shares no host + prefix with ns/first.
        let affected = index.apply_event(&watcher::Event::Delete(first));
        assert_eq!(
            affected,
            vec![second.clone(), WorkerKey::new("other", "site")]
        );
        assert_eq!(index.routes().ownership().lost(&second).len(), 1);
    }

    #[test]
    fn a_changed_host_owner_wakes_the_workers_on_overlapping_hosts() {
        let mut index = WorkerIndex::default();
        let squat = crate::fixtures::worker(
            "a",
            "squat",
            1,
            crate::fixtures::spec(None, &["*.parent.test"]),
        );
        index.apply_event(&watcher::Event::Apply(squat));
        index.apply_event(&watcher::Event::Apply(worker("far", 2, &["other.test"])));
        let squat = WorkerKey::new("a", "squat");
        assert!(index.routes().ownership().lost(&squat).is_empty());
        // h.parent.test is recorded as ns's (no Worker of ns claims it now):
        // the wildcard over it is refused, and only its Worker is woken.
        let owner = HostOwner {
            host: "h.parent.test".into(),
            namespace: "ns".into(),
            since: 0,
            released: Some(5),
        };
        assert_eq!(
            index.set_owners(vec![owner.clone()]),
            std::slice::from_ref(&squat)
        );
        assert_eq!(index.routes().ownership().lost(&squat).len(), 1);
        assert!(index.set_owners(vec![owner]).is_empty(), "no change");
        assert_eq!(index.set_owners(Vec::new()), std::slice::from_ref(&squat));
        assert!(index.routes().ownership().lost(&squat).is_empty());
    }

    #[test]
    fn workers_of_another_class_are_neither_indexed_nor_in_the_way() {
        let mut index = WorkerIndex::default().serving("staging".parse().unwrap());
        let staging = |name: &str, created: i64| {
            let mut worker = worker(name, created, &["x"]);
            worker.spec.worker_class = Some("staging".into());
            worker
        };
        // An older Worker of the default class on the same route is another
        // installation's: it neither holds the route nor reads anything here.
        index.apply_event(&watcher::Event::Apply(worker("prod", 1, &["x"])));
        assert!(index.is_empty());
        index.apply_event(&watcher::Event::Apply(staging("mine", 2)));
        assert_eq!(
            index.routes().owner(&Route::new("x", "/")),
            Some(&WorkerKey::new("ns", "mine"))
        );
        assert_eq!(
            index.readers(&secret("shared")),
            vec![WorkerKey::new("ns", "mine")]
        );
        // Should its class change anyway (the CRD refuses it), it is forgotten.
        index.apply_event(&watcher::Event::Apply(worker("mine", 2, &["x"])));
        assert!(index.is_empty());
        assert!(index.readers(&secret("shared")).is_empty());
    }

    #[test]
    fn a_worker_made_or_deleted_wakes_the_workers_bound_to_it() {
        let mut index = WorkerIndex::default();
        let mut gateway = worker("gateway", 1, &["g.example"]);
        gateway.spec.bindings = vec![isolane_worker::Binding::service("AUTH", "auth", None)];
        let auth_key = WorkerKey::new("ns", "auth");
        assert!(
            index
                .apply_event(&watcher::Event::Apply(gateway.clone()))
                .is_empty()
        );
        assert!(!index.contains(&auth_key));
        let gateway_key = WorkerKey::new("ns", "gateway");
        let auth = worker("auth", 2, &[]);
        assert_eq!(
            index.apply_event(&watcher::Event::Apply(auth.clone())),
            vec![gateway_key.clone()]
        );
        assert!(index.contains(&auth_key));
        // A status update of the target wakes nobody.
        assert!(
            index
                .apply_event(&watcher::Event::Apply(auth.clone()))
                .is_empty()
        );
        assert_eq!(
            index.apply_event(&watcher::Event::Delete(auth.clone())),
            vec![gateway_key]
        );
        // Once the binding is gone, the target's return wakes nobody.
        gateway.spec.bindings.clear();
        index.apply_event(&watcher::Event::Apply(gateway));
        assert!(index.apply_event(&watcher::Event::Apply(auth)).is_empty());
    }

    #[test]
    fn a_relist_forgets_workers_that_vanished() {
        let mut index = WorkerIndex::default();
        index.apply_event(&watcher::Event::Apply(worker("gone", 1, &["x"])));
        index.apply_event(&watcher::Event::Apply(worker("kept", 2, &["x"])));
        index.apply_event(&watcher::Event::Init);
        index.apply_event(&watcher::Event::InitApply(worker("kept", 2, &["x"])));
        let affected = index.apply_event(&watcher::Event::InitDone);
        assert_eq!(affected, vec![WorkerKey::new("ns", "kept")]);
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn the_workers_dispatching_into_a_namespace_are_kept_and_forgotten() {
        let mut platform = worker("platform", 1, &["p"]);
        platform.spec.bindings = vec![
            isolane_worker::Binding::dispatch_namespace("A", "cust-a"),
            isolane_worker::Binding::dispatch_namespace("B", "cust-b"),
        ];
        let mut index = WorkerIndex::default();
        index.apply_event(&watcher::Event::Apply(platform.clone()));
        let key = WorkerKey::new("ns", "platform");
        assert_eq!(index.dispatching_into("cust-a"), vec![key.clone()]);
        assert_eq!(index.dispatching_into("cust-b"), vec![key.clone()]);
        assert!(index.dispatching_into("cust-c").is_empty());
        platform.spec.bindings.pop();
        index.apply_event(&watcher::Event::Apply(platform.clone()));
        assert!(index.dispatching_into("cust-b").is_empty());
        index.apply_event(&watcher::Event::Delete(platform));
        assert!(index.dispatching_into("cust-a").is_empty());
        assert!(index.dispatching.is_empty());
    }
}
