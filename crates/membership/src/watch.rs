//! The one watch of runtime-node Leases, shared by the operator (for
//! `status.placement`) and the router (for routing).
//!
//! A kube-runtime reflector keeps the Leases labelled [`NODE_LABEL`]`=true`
//! in a [`Store`]: after a (re)list (`Init` … `InitDone`) the store is
//! replaced wholesale, so a Lease deleted while the watch was down is gone;
//! single events then update it. A failing watch retries with kube's default
//! backoff while the last membership stays in force.
//!
//! Membership is evaluated against the clock after the first complete list,
//! after every Lease event, and — because a Lease lapsing produces no event —
//! when the next live Lease would lapse, and at least every `max_recheck`.
//! Each evaluation is handed to a [`MembershipObserver`], which decides what
//! changed for it.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use tracing::{info, warn};

use crate::{MembershipError, NODE_LABEL, NodeMember, live_members};

/// One evaluation of the node Leases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Members {
    /// The live, non-draining nodes, sorted by name.
    pub live: Vec<NodeMember>,
    /// Leases that do not describe a usable node.
    pub invalid: Vec<MembershipError>,
    /// How many Leases the store holds (live or not).
    pub leases: usize,
}

/// What a Lease watch reports to.
pub trait MembershipObserver {
    /// Membership as evaluated now (see the module docs for when); the
    /// first call means the first complete list is in.
    fn members(&mut self, members: Members);

    /// The watch failed; it retries with backoff.
    fn watch_failed(&mut self, error: &watcher::Error) {
        warn!(%error, "node Lease watch failed; retrying");
    }
}

/// Watches the node Leases through `api` (their namespace) into `observer`
/// until the watch stream ends.
pub async fn watch(api: Api<Lease>, max_recheck: Duration, observer: impl MembershipObserver) {
    let config = watcher::Config::default().labels(&format!("{NODE_LABEL}=true"));
    let events = watcher::watcher(api, config).default_backoff();
    follow(events, max_recheck, observer).await;
}

/// [`watch`] over any stream of watcher events (tests feed their own).
pub async fn follow<S>(events: S, max_recheck: Duration, mut observer: impl MembershipObserver)
where
    S: Stream<Item = Result<Event<Lease>, watcher::Error>> + Send,
{
    let (store, writer) = reflector::store::<Lease>();
    let events = events.reflect(writer);
    let mut events = std::pin::pin!(events);
    let mut listed = false;
    let mut logged: Vec<MembershipError> = Vec::new();
    loop {
        let recheck = next_recheck(&store, Timestamp::now(), max_recheck);
        tokio::select! {
            event = events.next() => match event {
                None => return,
                Some(Ok(Event::InitDone)) => {
                    if !listed {
                        info!(leases = store.len(), "node Lease watch synced");
                    }
                    listed = true;
                }
                // A relist in progress: the store changes at its InitDone.
                Some(Ok(Event::Init | Event::InitApply(_))) => continue,
                Some(Ok(Event::Apply(_) | Event::Delete(_))) => {}
                Some(Err(error)) => {
                    observer.watch_failed(&error);
                    continue;
                }
            },
            () = tokio::time::sleep(recheck) => {}
        }
        if !listed {
            continue;
        }
        let members = evaluate(&store, Timestamp::now());
        if members.invalid != logged {
            for error in &members.invalid {
                warn!(%error, kind = error.kind(), "ignoring a node Lease");
            }
            logged.clone_from(&members.invalid);
        }
        observer.members(members);
    }
}

/// The membership `store` describes at `now`.
pub fn evaluate(store: &Store<Lease>, now: Timestamp) -> Members {
    let leases = store.state();
    let (live, invalid) = live_members(leases.iter().map(Arc::as_ref), now);
    Members {
        live,
        invalid,
        leases: leases.len(),
    }
}

/// How long until the earliest live Lease in `store` lapses, capped at
/// `max_recheck`.
pub fn next_recheck(store: &Store<Lease>, now: Timestamp, max_recheck: Duration) -> Duration {
    store
        .state()
        .iter()
        .filter_map(|lease| NodeMember::from_lease(lease).ok()?.expires_at)
        .filter_map(|expires| {
            let ms = expires.as_millisecond() - now.as_millisecond();
            // +1 ms: wake just after the expiry instant, when `is_live` turns false.
            u64::try_from(ms)
                .ok()
                .map(|ms| Duration::from_millis(ms + 1))
        })
        .min()
        .map_or(max_recheck, |d| d.min(max_recheck))
}

#[cfg(test)]
mod tests {
    use futures::channel::mpsc;
    use k8s_openapi::jiff::SignedDuration;
    use tokio::sync::mpsc as tokio_mpsc;

    use super::*;
    use crate::node_lease;

    const MAX_RECHECK: Duration = Duration::from_secs(5);

    fn lease(name: &str, seconds: u64, renewed: Timestamp) -> Lease {
        node_lease(
            name,
            "ns",
            &["http://n:1".to_owned()],
            1,
            false,
            Duration::from_secs(seconds),
            renewed,
        )
    }

    fn store_of(leases: &[Lease]) -> Store<Lease> {
        let (store, mut writer) = reflector::store::<Lease>();
        writer.apply_watcher_event(&Event::Init);
        for lease in leases {
            writer.apply_watcher_event(&Event::InitApply(lease.clone()));
        }
        writer.apply_watcher_event(&Event::InitDone);
        store
    }

    #[test]
    fn rechecks_when_the_next_lease_lapses() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let store = store_of(&[lease("a", 3, now), lease("b", 2, now)]);
        assert_eq!(
            next_recheck(&store, now, MAX_RECHECK),
            Duration::from_millis(2001)
        );
        let long = store_of(&[lease("a", 60, now)]);
        assert_eq!(next_recheck(&long, now, MAX_RECHECK), MAX_RECHECK);
        let expired = store_of(&[lease("a", 1, now)]);
        let later = now.checked_add(SignedDuration::from_secs(5)).unwrap();
        assert_eq!(next_recheck(&expired, later, MAX_RECHECK), MAX_RECHECK);
        assert_eq!(next_recheck(&store_of(&[]), now, MAX_RECHECK), MAX_RECHECK);
    }

    /// Sends each evaluation's live node names to the test.
    struct Names(tokio_mpsc::UnboundedSender<Vec<String>>);

    impl MembershipObserver for Names {
        fn members(&mut self, members: Members) {
            let names = members.live.into_iter().map(|m| m.name).collect();
            let _ = self.0.send(names);
        }
    }

    /// [`follow`] over events the test sends, and its evaluations.
    struct Fed {
        events: mpsc::UnboundedSender<Result<Event<Lease>, watcher::Error>>,
        members: tokio_mpsc::UnboundedReceiver<Vec<String>>,
    }

    impl Fed {
        fn start() -> Self {
            let (events, stream) = mpsc::unbounded();
            let (tx, members) = tokio_mpsc::unbounded_channel();
            tokio::spawn(follow(stream, MAX_RECHECK, Names(tx)));
            Self { events, members }
        }

        fn send(&self, events: impl IntoIterator<Item = Event<Lease>>) {
            for event in events {
                self.events.unbounded_send(Ok(event)).unwrap();
            }
        }

        /// Waits for an evaluation whose live nodes are `want`, failing after 10 s.
        async fn until_live(&mut self, want: &[&str]) {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let names = tokio::time::timeout_at(deadline, self.members.recv())
                    .await
                    .unwrap_or_else(|_| panic!("no evaluation with live nodes {want:?} in time"))
                    .expect("the watch is still running");
                if names == want {
                    return;
                }
            }
        }
    }

    #[tokio::test]
    async fn drops_an_expired_lease_without_an_event_and_a_deleted_one() {
        let mut fed = Fed::start();
        // "short" lapses in 1 s, "long" in a minute.
        let now = Timestamp::now();
        let long = lease("long", 60, now);
        fed.send([
            Event::Init,
            Event::InitApply(lease("short", 1, now)),
            Event::InitApply(long.clone()),
            Event::InitDone,
        ]);
        fed.until_live(&["long", "short"]).await;
        // No event: the watch wakes when "short" lapses (well before MAX_RECHECK).
        let started = tokio::time::Instant::now();
        fed.until_live(&["long"]).await;
        assert!(
            started.elapsed() < MAX_RECHECK,
            "waited for the periodic recheck"
        );
        fed.send([Event::Delete(long)]);
        fed.until_live(&[]).await;
    }

    #[tokio::test]
    async fn a_relist_replaces_every_lease() {
        let mut fed = Fed::start();
        let now = Timestamp::now();
        fed.send([
            Event::Init,
            Event::InitApply(lease("a", 60, now)),
            Event::InitDone,
            Event::Apply(lease("b", 60, now)),
        ]);
        fed.until_live(&["a", "b"]).await;
        // A relist that no longer has "a" (deleted while the watch was down).
        fed.send([
            Event::Init,
            Event::InitApply(lease("b", 60, now)),
            Event::InitDone,
        ]);
        fed.until_live(&["b"]).await;
    }
}
