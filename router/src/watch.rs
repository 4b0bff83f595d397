//! Kubernetes watches that feed the proxy: Workers become the route table,
//! node Leases become the fleet.
//!
//! Both follow kube's watcher protocol: after a (re)list (`Init` … `InitDone`)
//! the local state is replaced wholesale, so objects deleted while the watch
//! was down disappear; single events then update it. Each reports ready
//! through its [`ReadyHandle`] after its first complete list, and a failing
//! watch retries with kube's default backoff while the proxy keeps serving
//! from the last state it saw.
//!
//! Lease expiry produces no event, so the Lease watch also wakes when the
//! next live Lease would lapse (and at least every [`MAX_RECHECK`]) to
//! re-evaluate membership against the clock.

use std::collections::HashMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use isolane_crds::Worker;
use isolane_membership::{NODE_LABEL, NodeMember, live_members};
use isolane_telemetry::ReadyHandle;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use tracing::{debug, info, warn};

use crate::Proxy;
use crate::routes::RoutableWorker;

/// The longest the Lease watch goes without re-checking expiry.
pub const MAX_RECHECK: Duration = Duration::from_secs(5);

/// Watches Workers (in `namespace`, or all) into the proxy's route table until
/// the watch stream ends.
pub async fn workers(client: Client, namespace: Option<&str>, proxy: Proxy, ready: ReadyHandle) {
    let api: Api<Worker> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut state = Relist::<Option<RoutableWorker>>::default();
    while let Some(first) = events.next().await {
        // Apply everything already waiting before rebuilding the table once.
        let mut changed = false;
        let mut next = Some(first);
        while let Some(event) = next {
            match event {
                Ok(event) => {
                    changed |=
                        state.apply(event, |w| (worker_key(w), RoutableWorker::from_worker(w)));
                }
                Err(error) => {
                    proxy.metrics().watch_error("workers");
                    warn!(%error, "worker watch failed; retrying");
                }
            }
            next = events.next().now_or_never().flatten();
        }
        if changed && state.synced {
            let routable: Vec<RoutableWorker> = state.objects.values().flatten().cloned().collect();
            debug!(routable = routable.len(), "route table rebuilt");
            proxy.set_workers(routable);
            if !ready.is_ready() {
                info!(workers = state.objects.len(), "worker watch synced");
                ready.set_ready();
            }
        }
    }
}

/// Watches node Leases in `namespace` into the proxy's fleet until the watch
/// stream ends.
pub async fn leases(client: Client, namespace: &str, proxy: Proxy, ready: ReadyHandle) {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let config = watcher::Config::default().labels(&format!("{NODE_LABEL}=true"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut state = Relist::<Lease>::default();
    let mut last_errors: Vec<String> = Vec::new();
    loop {
        let recheck = next_expiry(state.objects.values(), Timestamp::now());
        tokio::select! {
            event = events.next() => match event {
                None => return,
                Some(Ok(event)) => {
                    state.apply(event, |lease| (lease.name_any(), lease.clone()));
                }
                Some(Err(error)) => {
                    proxy.metrics().watch_error("leases");
                    warn!(%error, "lease watch failed; retrying");
                    continue;
                }
            },
            () = tokio::time::sleep(recheck) => {}
        }
        if !state.synced {
            continue;
        }
        let (members, errors) = live_members(state.objects.values(), Timestamp::now());
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        if errors != last_errors {
            for error in &errors {
                warn!(%error, "ignoring a node lease");
            }
            last_errors = errors;
        }
        proxy.set_members(members);
        if !ready.is_ready() {
            info!(leases = state.objects.len(), "lease watch synced");
            ready.set_ready();
        }
    }
}

/// How long until the earliest live Lease among `leases` lapses, capped at
/// [`MAX_RECHECK`].
fn next_expiry<'a>(leases: impl Iterator<Item = &'a Lease>, now: Timestamp) -> Duration {
    leases
        .filter_map(|lease| NodeMember::from_lease(lease).ok()?.expires_at)
        .filter_map(|expires| {
            let ms = expires.as_millisecond() - now.as_millisecond();
            // +1 ms: wake just after the expiry instant, when `is_live` turns false.
            u64::try_from(ms)
                .ok()
                .map(|ms| Duration::from_millis(ms + 1))
        })
        .min()
        .map_or(MAX_RECHECK, |d| d.min(MAX_RECHECK))
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
struct Relist<T> {
    objects: HashMap<String, T>,
    /// Objects of a relist in progress.
    pending: Option<HashMap<String, T>>,
    /// A relist has completed at least once.
    synced: bool,
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
    fn apply<K>(&mut self, event: Event<K>, key: impl Fn(&K) -> (String, T)) -> bool {
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
    use std::time::Duration as StdDuration;

    use isolane_membership::node_lease;

    use super::*;

    fn lease(name: &str, seconds: u64, renewed: Timestamp) -> Lease {
        node_lease(
            name,
            "ns",
            &["http://n:1".to_owned()],
            1,
            false,
            StdDuration::from_secs(seconds),
            renewed,
        )
    }

    #[test]
    fn rechecks_when_the_next_lease_lapses() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let leases = [lease("a", 3, now), lease("b", 2, now)];
        assert_eq!(next_expiry(leases.iter(), now), Duration::from_millis(2001));
        let long = [lease("a", 60, now)];
        assert_eq!(next_expiry(long.iter(), now), MAX_RECHECK);
        let expired = [lease("a", 1, now)];
        let later = now
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(5))
            .unwrap();
        assert_eq!(next_expiry(expired.iter(), later), MAX_RECHECK);
        assert_eq!(next_expiry([].iter(), now), MAX_RECHECK);
    }

    #[test]
    fn a_relist_replaces_everything() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let key = |l: &Lease| (l.name_any(), l.clone());
        let mut state = Relist::<Lease>::default();
        assert!(!state.apply(Event::Init, key));
        assert!(!state.apply(Event::InitApply(lease("a", 10, now)), key));
        assert!(state.apply(Event::InitDone, key), "the first list counts");
        assert!(state.synced);
        assert!(state.apply(Event::Apply(lease("b", 10, now)), key));
        assert!(
            !state.apply(Event::Apply(lease("b", 10, now)), key),
            "no change"
        );
        // A relist that no longer has "a" (deleted while the watch was down).
        state.apply(Event::Init, key);
        state.apply(Event::InitApply(lease("b", 10, now)), key);
        assert!(state.apply(Event::InitDone, key));
        assert_eq!(state.objects.keys().collect::<Vec<_>>(), ["b"]);
        assert!(state.apply(Event::Delete(lease("b", 10, now)), key));
        assert!(state.objects.is_empty());
    }
}
