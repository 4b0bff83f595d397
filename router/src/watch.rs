//! Kubernetes watches that feed the proxy: Workers become the route table
//! (the routable ones, and the claims of those not Ready yet, which hold
//! routes all the same), with the host owners the operator records
//! ([`host_owners`]); node Leases become the fleet. Only the Workers of the
//! installation's class count ([`workers_of_class`]): another class's are
//! another installation's, whose operator writes their bundles for its own
//! nodes, and whose routes are its router's to serve.
//!
//! Both follow kube's watcher protocol: after a (re)list (`Init` … `InitDone`)
//! the local state is replaced wholesale, so objects deleted while the watch
//! was down disappear; single events then update it. The Worker watch keeps
//! its Workers in kube's reflector store; the host owners, a handful of
//! small records, in a [`Relist`]. Each reports ready
//! through its [`ReadyHandle`] after its first complete list, and a failing
//! watch retries with kube's default backoff while the proxy keeps serving
//! from the last state it saw.
//!
//! The Lease watch is the one the operator uses too
//! (`isolane_membership::watch`): Lease expiry produces no event, so it also
//! wakes when the next live Lease would lapse (and at least every
//! [`MAX_RECHECK`]) to re-evaluate membership against the clock.

use std::collections::HashMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use isolane_crds::{HOST_OWNER_LABEL, Worker, WorkerClass, host_owner_from};
use isolane_membership::{Members, MembershipObserver};
use isolane_telemetry::ReadyHandle;
use isolane_worker::HostOwner;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use tracing::{debug, info, warn};

use crate::Proxy;
use crate::routes::{RoutableWorker, Watched};
use isolane_worker::Claim;

/// The longest the Lease watch goes without re-checking expiry.
pub const MAX_RECHECK: Duration = Duration::from_secs(5);

/// [`workers_of_class`] for the default class.
pub async fn workers(client: Client, namespace: Option<&str>, proxy: Proxy, ready: ReadyHandle) {
    workers_of_class(client, namespace, &WorkerClass::default(), proxy, ready).await;
}

/// Watches Workers (in `namespace`, or all) into the proxy's route table until
/// the watch stream ends; only those of `class` are routed or hold routes.
/// The Workers are kube's reflector's: its [`Store`]
/// holds them, relists included; the route table is built from what each
/// is to the router ([`Routing`]).
pub async fn workers_of_class(
    client: Client,
    namespace: Option<&str>,
    class: &WorkerClass,
    proxy: Proxy,
    ready: ReadyHandle,
) {
    let api: Api<Worker> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let (store, writer) = reflector::store();
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        // Nothing the router reads: not kept in the store.
        .modify(|worker: &mut Worker| worker.managed_fields_mut().clear())
        .reflect(writer)
        .boxed();
    let mut routing = Routing::new(class.clone());
    while let Some(first) = events.next().await {
        // Apply everything already waiting before rebuilding the table once.
        let mut changed = false;
        let mut next = Some(first);
        while let Some(event) = next {
            match event {
                Ok(event) => changed |= routing.apply(&event, &store),
                Err(error) => {
                    proxy.metrics().watch_error("workers");
                    warn!(%error, "worker watch failed; retrying");
                }
            }
            next = events.next().now_or_never().flatten();
        }
        if changed && routing.synced {
            routing.publish(&proxy);
            if !ready.is_ready() {
                info!(workers = store.len(), "worker watch synced");
                ready.set_ready();
            }
        }
    }
}

/// What each Worker of the reflector's store is to the route table, kept
/// beside the store so that an event that changes nothing the router reads
/// (a status write, the router's own `status.cron`) rebuilds nothing.
#[derive(Debug)]
struct Routing {
    /// The class of the Workers routed; the others are ignored.
    class: WorkerClass,
    workers: HashMap<String, Watched>,
    /// The store has been listed at least once.
    synced: bool,
}

impl Routing {
    fn new(class: WorkerClass) -> Self {
        Self {
            class,
            workers: HashMap::new(),
            synced: false,
        }
    }

    /// What `worker` is to this router's table: nothing unless it is of
    /// the class.
    fn watched(&self, worker: &Worker) -> Watched {
        if self.class.serves(worker) {
            Watched::from_worker(worker)
        } else {
            Watched::Ignored
        }
    }

    /// Follows `event`, which the reflector has applied to `store`; returns
    /// whether what the route table is built from changed.
    fn apply(&mut self, event: &Event<Worker>, store: &Store<Worker>) -> bool {
        match event {
            // A relist in progress: the store swaps it in at `InitDone`.
            Event::Init | Event::InitApply(_) => false,
            Event::InitDone => {
                let fresh: HashMap<String, Watched> = store
                    .state()
                    .iter()
                    .map(|worker| (worker_key(worker), self.watched(worker)))
                    .collect();
                let changed = !self.synced || fresh != self.workers;
                self.workers = fresh;
                self.synced = true;
                changed
            }
            // An ignored Worker is as good as none (another class's, most
            // often): its coming and going changes nothing.
            Event::Apply(worker) => {
                let watched = self.watched(worker);
                let before = self.workers.get(&worker_key(worker));
                let changed = before.unwrap_or(&Watched::Ignored) != &watched;
                self.workers.insert(worker_key(worker), watched);
                changed
            }
            Event::Delete(worker) => !matches!(
                self.workers.remove(&worker_key(worker)),
                None | Some(Watched::Ignored)
            ),
        }
    }

    /// Hands the routable Workers and the claims of the others to `proxy`.
    fn publish(&self, proxy: &Proxy) {
        let mut routable: Vec<RoutableWorker> = Vec::new();
        let mut claimants: Vec<Claim> = Vec::new();
        for watched in self.workers.values() {
            match watched {
                Watched::Routable(worker) => routable.push(worker.clone()),
                Watched::Claimant(claim) => claimants.push(claim.clone()),
                Watched::Ignored => {}
            }
        }
        debug!(
            routable = routable.len(),
            claimants = claimants.len(),
            "route table rebuilt"
        );
        proxy.set_claims(routable, claimants);
    }
}

/// Watches the host owners the operator records (ConfigMaps labelled
/// `isolane.dev/host-owner=true` in `namespace`, the operator's) into the
/// proxy's route table until the watch stream ends; `synced` turns true
/// after the first list. Without them a host whose namespace is redeploying
/// could go to another namespace's waiting claim, so the Worker watch
/// publishes nothing before they are read (`main.rs`).
pub async fn host_owners(
    client: Client,
    namespace: &str,
    proxy: Proxy,
    ready: ReadyHandle,
    synced: tokio::sync::watch::Sender<bool>,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let config = watcher::Config::default().labels(&format!("{HOST_OWNER_LABEL}=true"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut state = Relist::<Option<HostOwner>>::default();
    let read = |config_map: &ConfigMap| {
        let owner = host_owner_from(config_map)
            .inspect_err(|error| warn!(%error, kind = error.kind(), "ignoring a host-owner record"))
            .ok();
        (config_map.name_any(), owner)
    };
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                if state.apply(event, read) && state.synced {
                    let owners: Vec<HostOwner> =
                        state.objects.values().flatten().cloned().collect();
                    debug!(owners = owners.len(), "host owners changed");
                    proxy.set_owners(owners);
                    synced.send_replace(true);
                    ready.set_ready();
                }
            }
            Err(error) => {
                proxy.metrics().watch_error("host_owners");
                warn!(%error, "host-owner watch failed; retrying");
            }
        }
    }
}

/// Watches node Leases in `namespace` into the proxy's fleet until the watch
/// stream ends.
pub async fn leases(client: Client, namespace: &str, proxy: Proxy, ready: ReadyHandle) {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    isolane_membership::watch::watch(api, MAX_RECHECK, Fleet { proxy, ready }).await;
}

/// The proxy's fleet, as the Lease watch's observer.
struct Fleet {
    proxy: Proxy,
    ready: ReadyHandle,
}

impl MembershipObserver for Fleet {
    fn members(&mut self, members: Members) {
        self.proxy.set_members(members.live);
        self.ready.set_ready();
    }

    fn watch_failed(&mut self, error: &watcher::Error) {
        self.proxy.metrics().watch_error("leases");
        warn!(%error, "lease watch failed; retrying");
    }
}

fn worker_key(worker: &Worker) -> String {
    format!(
        "{}/{}",
        worker.namespace().unwrap_or_default(),
        worker.name_any()
    )
}

/// The objects of a watch, replaced wholesale on each relist.
#[derive(Debug)]
pub(crate) struct Relist<T> {
    pub(crate) objects: HashMap<String, T>,
    /// Objects of a relist in progress.
    pending: Option<HashMap<String, T>>,
    /// A relist has completed at least once.
    pub(crate) synced: bool,
}

impl<T> Default for Relist<T> {
    fn default() -> Self {
        Self {
            objects: HashMap::new(),
            pending: None,
            synced: false,
        }
    }
}

impl<T: PartialEq> Relist<T> {
    /// Applies `event`, keying objects with `key`; returns whether the
    /// visible objects changed.
    pub(crate) fn apply<K>(&mut self, event: Event<K>, key: impl Fn(&K) -> (String, T)) -> bool {
        match event {
            Event::Init => {
                self.pending = Some(HashMap::new());
                false
            }
            Event::InitApply(object) => {
                let (k, v) = key(&object);
                self.pending.get_or_insert_with(HashMap::new).insert(k, v);
                false
            }
            Event::InitDone => {
                let fresh = self.pending.take().unwrap_or_default();
                let changed = !self.synced || fresh != self.objects;
                self.objects = fresh;
                self.synced = true;
                changed
            }
            Event::Apply(object) => {
                let (k, v) = key(&object);
                let changed = self.objects.get(&k) != Some(&v);
                self.objects.insert(k, v);
                changed
            }
            Event::Delete(object) => self.objects.remove(&key(&object).0).is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    /// An object named `name` holding `value`.
    fn object(name: &str, value: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            data: Some([("k".to_owned(), value.to_owned())].into()),
            ..ConfigMap::default()
        }
    }

    /// A Worker `ns/name` that claims `host` (not Ready: a claimant).
    fn worker(name: &str, host: &str) -> Worker {
        let spec: isolane_crds::WorkerSpec = serde_json::from_value(serde_json::json!({
            "script": "export default {}",
            "routes": [{"host": host}],
        }))
        .unwrap();
        let mut worker = Worker::new(name, spec);
        worker.metadata.namespace = Some("ns".to_owned());
        worker
    }

    /// `event` through the reflector's writer, then the route view.
    fn step(
        writer: &mut reflector::store::Writer<Worker>,
        routing: &mut Routing,
        event: Event<Worker>,
    ) -> bool {
        writer.apply_watcher_event(&event);
        routing.apply(&event, &writer.as_reader())
    }

    #[test]
    fn the_route_view_follows_the_reflector_store() {
        let mut writer = reflector::store::Writer::<Worker>::default();
        let store = writer.as_reader();
        let mut routing = Routing::new(WorkerClass::default());
        let (a, b) = (worker("a", "a.test"), worker("b", "b.test"));
        assert!(!step(&mut writer, &mut routing, Event::Init));
        assert!(!step(
            &mut writer,
            &mut routing,
            Event::InitApply(a.clone())
        ));
        assert!(!step(
            &mut writer,
            &mut routing,
            Event::InitApply(b.clone())
        ));
        assert!(
            !routing.synced,
            "nothing is published before the first list"
        );
        assert!(step(&mut writer, &mut routing, Event::InitDone));
        assert!(routing.synced);
        let mut keys: Vec<&String> = routing.workers.keys().collect();
        keys.sort();
        assert_eq!(keys, ["ns/a", "ns/b"]);
        assert!(matches!(routing.workers["ns/a"], Watched::Claimant(_)));
        // A status write the router does not read changes nothing.
        let mut written = a.clone();
        written.status = Some(isolane_crds::WorkerStatus {
            cron: Some(isolane_crds::CronStatus::default()),
            ..Default::default()
        });
        assert!(!step(&mut writer, &mut routing, Event::Apply(written)));
        // A new route does.
        let moved = worker("a", "c.test");
        assert!(step(&mut writer, &mut routing, Event::Apply(moved.clone())));
        // A relist that no longer has `b` (deleted while the watch was
        // down) drops it, from the store and from the routes.
        step(&mut writer, &mut routing, Event::Init);
        step(&mut writer, &mut routing, Event::InitApply(moved.clone()));
        assert!(step(&mut writer, &mut routing, Event::InitDone));
        assert_eq!(store.len(), 1);
        assert_eq!(routing.workers.keys().collect::<Vec<_>>(), ["ns/a"]);
        // The same list again changes nothing.
        step(&mut writer, &mut routing, Event::Init);
        step(&mut writer, &mut routing, Event::InitApply(moved.clone()));
        assert!(!step(&mut writer, &mut routing, Event::InitDone));
        assert!(step(&mut writer, &mut routing, Event::Delete(moved)));
        assert!(routing.workers.is_empty());
        assert!(store.is_empty());
    }

    #[test]
    fn only_the_workers_of_the_class_hold_routes() {
        let mut writer = reflector::store::Writer::<Worker>::default();
        let mut routing = Routing::new("staging".parse().unwrap());
        let mut staging = worker("s", "s.test");
        staging.spec.worker_class = Some("staging".to_owned());
        step(&mut writer, &mut routing, Event::Init);
        step(
            &mut writer,
            &mut routing,
            Event::InitApply(worker("d", "d.test")),
        );
        step(&mut writer, &mut routing, Event::InitApply(staging));
        assert!(step(&mut writer, &mut routing, Event::InitDone));
        assert!(matches!(routing.workers["ns/d"], Watched::Ignored));
        assert!(matches!(routing.workers["ns/s"], Watched::Claimant(_)));
        // Another default-class Worker changes nothing this router serves.
        assert!(!step(
            &mut writer,
            &mut routing,
            Event::Apply(worker("d2", "s.test"))
        ));
    }

    #[test]
    fn a_relist_replaces_everything() {
        let key = |o: &ConfigMap| (o.name_any(), o.clone());
        let mut state = Relist::<ConfigMap>::default();
        assert!(!state.apply(Event::Init, key));
        assert!(!state.apply(Event::InitApply(object("a", "1")), key));
        assert!(state.apply(Event::InitDone, key), "the first list counts");
        assert!(state.synced);
        assert!(state.apply(Event::Apply(object("b", "1")), key));
        assert!(
            !state.apply(Event::Apply(object("b", "1")), key),
            "no change"
        );
        assert!(state.apply(Event::Apply(object("b", "2")), key));
        // A relist that no longer has "a" (deleted while the watch was down).
        state.apply(Event::Init, key);
        state.apply(Event::InitApply(object("b", "2")), key);
        assert!(state.apply(Event::InitDone, key));
        assert_eq!(state.objects.keys().collect::<Vec<_>>(), ["b"]);
        assert!(state.apply(Event::Delete(object("b", "2")), key));
        assert!(state.objects.is_empty());
    }
}
