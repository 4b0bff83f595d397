//! Admission: a bound on requests in flight per thread, fair by namespace,
//! and the draining switch. Both are checked before a request costs
//! anything, so overload is shed early and cheaply (per request: a short
//! lock of its thread's namespace table and a few atomic adds, one cache
//! line per thread; no counter shared between threads).
//!
//! The rule, per thread, with `limit` = `--max-inflight-per-thread` and
//! `guarantee` = [`isolane_engine::guaranteed`]`(limit)` (a 64th of the
//! limit, at least 4): a request is admitted when its namespace (the worker
//! id before '/') has fewer than `guarantee` requests in flight on the
//! thread, whatever the others hold; otherwise when the thread has fewer
//! than `limit` in flight. A request's place lasts until its response body
//! ends, so without the guarantee slow readers of a few namespaces' public
//! Workers could fill a thread and lock every other namespace on it out.
//!
//! Bound: requests admitted on the limit are at most `limit` in flight
//! (each saw fewer than that in flight); those admitted on the guarantee
//! are at most `guarantee` per namespace (each saw fewer than that of its
//! namespace); so a thread has at most `limit + guarantee × namespaces` in
//! flight, namespaces being those with requests in flight on it. Once the
//! thread is full, a namespace that holds `guarantee` or more gets nothing
//! more until the thread has room again: the hogs are capped at what they
//! hold. The engine applies the same rule to its own slots
//! (`crates/engine/src/schedule.rs`), each namespace also within its
//! `--worker-slots`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use foldhash::HashMap;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use crate::error::Error;
use crate::metrics::NodeMetrics;

/// Namespaces remembered per thread before those with nothing in flight
/// are forgotten (a request of a namespace seen lately allocates nothing).
const KEPT_IDLE: usize = 64;

/// One thread's counters, alone on their cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot {
    in_flight: AtomicUsize,
    /// Requests in flight by namespace (foldhash, as the bundle index: per
    /// request, seeded per process).
    namespaces: Mutex<HashMap<Box<str>, Arc<AtomicUsize>>>,
}

impl Slot {
    /// `namespace`'s counter on this thread.
    fn namespace(&self, namespace: &str) -> Arc<AtomicUsize> {
        let mut namespaces = self.namespaces.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(counter) = namespaces.get(namespace) {
            return counter.clone();
        }
        if namespaces.len() >= KEPT_IDLE {
            // Only permits hold the other references, and they are only
            // made under this lock: a counter held here alone is at 0.
            namespaces.retain(|_, counter| Arc::strong_count(counter) > 1);
        }
        namespaces.entry(Box::from(namespace)).or_default().clone()
    }
}

/// The node's admission state. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Admission {
    slots: Vec<Slot>,
    max_per_thread: usize,
    /// Requests a namespace may always have in flight on a thread.
    guarantee: usize,
    draining: AtomicBool,
    /// Cancelled when the drain's WebSocket grace ends: open WebSockets
    /// close with 1012.
    sockets_closing: CancellationToken,
    /// The open WebSockets, one token each, so the drain can tell when the
    /// last has gone.
    sockets: TaskTracker,
    /// Requests in flight on all threads, for the drain.
    total: AtomicUsize,
    idle: Notify,
    metrics: Arc<NodeMetrics>,
}

/// A request's place on its thread; released when dropped (after its
/// response body has ended or the call was dropped).
#[derive(Debug)]
pub struct Permit {
    admission: Arc<Admission>,
    thread: usize,
    /// Its namespace's counter on the thread.
    namespace: Arc<AtomicUsize>,
}

// === impl Admission ===

impl Admission {
    pub fn new(threads: usize, max_per_thread: usize, metrics: Arc<NodeMetrics>) -> Arc<Self> {
        Arc::new(Self {
            slots: (0..threads).map(|_| Slot::default()).collect(),
            max_per_thread,
            guarantee: isolane_engine::guaranteed(max_per_thread),
            draining: AtomicBool::new(false),
            sockets_closing: CancellationToken::new(),
            sockets: TaskTracker::new(),
            total: AtomicUsize::new(0),
            idle: Notify::new(),
            metrics,
        })
    }

    /// Threads the node has.
    pub fn threads(&self) -> usize {
        self.slots.len()
    }

    /// Admits a request for `worker_id` on `thread`, or refuses it
    /// (draining, bad thread, thread at its limit and the worker's
    /// namespace at its guarantee: see the module's doc).
    pub fn admit(self: &Arc<Self>, thread: u32, worker_id: &str) -> Result<Permit, Error> {
        self.admit_within(thread, worker_id, true)
    }

    /// Admits a peer node's Durable Object call on `thread` whatever its
    /// load (still not while draining): the request that made it holds a
    /// slot on its own node, which bounds such calls, and refusing it
    /// would fail that admitted request.
    pub fn admit_object_call(
        self: &Arc<Self>,
        thread: u32,
        worker_id: &str,
    ) -> Result<Permit, Error> {
        self.admit_within(thread, worker_id, false)
    }

    fn admit_within(
        self: &Arc<Self>,
        thread: u32,
        worker_id: &str,
        bounded: bool,
    ) -> Result<Permit, Error> {
        let index = usize::try_from(thread).unwrap_or(usize::MAX);
        let Some(slot) = self.slots.get(index) else {
            return Err(Error::InvalidThread {
                thread,
                threads: self.slots.len(),
            });
        };
        if self.is_draining() {
            self.metrics.rejection(index, "draining");
            return Err(Error::Draining);
        }
        let namespace = slot.namespace(isolane_engine::namespace_of(worker_id));
        let mine = namespace.fetch_add(1, Ordering::AcqRel);
        let before = slot.in_flight.fetch_add(1, Ordering::AcqRel);
        if bounded && before >= self.max_per_thread && mine >= self.guarantee {
            slot.in_flight.fetch_sub(1, Ordering::AcqRel);
            namespace.fetch_sub(1, Ordering::AcqRel);
            self.metrics.rejection(index, "overloaded");
            return Err(Error::Overloaded { thread: index });
        }
        self.total.fetch_add(1, Ordering::AcqRel);
        self.metrics.in_flight_changed(index, 1);
        Ok(Permit {
            admission: self.clone(),
            thread: index,
            namespace,
        })
    }

    /// Requests in flight on `thread` now.
    pub fn in_flight(&self, thread: usize) -> usize {
        self.slots
            .get(thread)
            .map_or(0, |s| s.in_flight.load(Ordering::Acquire))
    }

    /// Requests of `namespace` in flight on `thread` now.
    pub fn namespace_in_flight(&self, thread: usize, namespace: &str) -> usize {
        let Some(slot) = self.slots.get(thread) else {
            return 0;
        };
        let namespaces = slot.namespaces.lock().unwrap_or_else(|p| p.into_inner());
        namespaces
            .get(namespace)
            .map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// Requests in flight on every thread now.
    pub fn total_in_flight(&self) -> usize {
        self.total.load(Ordering::Acquire)
    }

    /// From now on, new requests (and so new WebSockets) are refused with
    /// [`Error::Draining`]; open WebSockets keep working until
    /// [`Admission::close_sockets`].
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
        self.sockets.close();
        self.metrics.set_draining(true);
    }

    /// Cancelled by [`Admission::close_sockets`] (what open WebSockets wait
    /// on, to close with 1012).
    pub fn sockets_closing(&self) -> CancellationToken {
        self.sockets_closing.clone()
    }

    /// A WebSocket's place among the open ones, held for its life.
    pub fn socket_opened(&self) -> TaskTrackerToken {
        self.sockets.token()
    }

    /// WebSockets open now.
    pub fn open_sockets(&self) -> usize {
        self.sockets.len()
    }

    /// Waits, once draining, until every WebSocket has gone or `deadline`
    /// passes. Returns how many are still open.
    pub async fn wait_sockets(&self, deadline: tokio::time::Instant) -> usize {
        let _ = tokio::time::timeout_at(deadline, self.sockets.wait()).await;
        self.sockets.len()
    }

    /// Closes every open WebSocket with 1012 (service restart), both ways.
    pub fn close_sockets(&self) {
        self.sockets_closing.cancel();
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Waits until no request is in flight, or `timeout` passes. Returns how
    /// many were still in flight (0 when all finished).
    pub async fn wait_idle(&self, timeout: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            // Register before checking, so a release in between wakes us.
            idle.as_mut().enable();
            let left = self.total_in_flight();
            if left == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.total_in_flight();
            }
        }
    }
}

// === impl Permit ===

impl Permit {
    pub fn thread(&self) -> usize {
        self.thread
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let admission = &self.admission;
        if let Some(slot) = admission.slots.get(self.thread) {
            slot.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        self.namespace.fetch_sub(1, Ordering::AcqRel);
        admission.metrics.in_flight_changed(self.thread, -1);
        if admission.total.fetch_sub(1, Ordering::AcqRel) == 1 {
            admission.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(max: usize) -> Arc<Admission> {
        let metrics = NodeMetrics::register(&prometheus::Registry::new(), 2).unwrap();
        Admission::new(2, max, Arc::new(metrics))
    }

    #[test]
    fn each_thread_is_bounded_on_its_own() {
        let admission = admission(2);
        let a = admission.admit(0, "demo/a").unwrap();
        let _b = admission.admit(0, "demo/b").unwrap();
        assert_eq!(
            admission.admit(0, "demo/a").unwrap_err().kind(),
            "overloaded"
        );
        let _c = admission.admit(1, "demo/a").unwrap();
        assert_eq!(admission.in_flight(0), 2);
        drop(a);
        assert_eq!(admission.in_flight(0), 1);
        assert!(admission.admit(0, "demo/a").is_ok());
        assert_eq!(
            admission.admit(2, "demo/a").unwrap_err().kind(),
            "invalid_thread"
        );
    }

    /// Admits on thread 0 until refused; returns the permits.
    fn fill(admission: &Arc<Admission>, worker: &str, most: usize) -> Vec<Permit> {
        (0..most)
            .map_while(|_| admission.admit(0, worker).ok())
            .collect()
    }

    #[test]
    fn a_full_thread_caps_the_hogs_and_still_admits_a_newcomer() {
        let admission = admission(256);
        let guarantee = admission.guarantee;
        assert_eq!(guarantee, 4);
        // Four namespaces fill the thread, 64 each.
        let hogs: Vec<_> = (0..4)
            .flat_map(|n| fill(&admission, &format!("hog{n}/w"), 64))
            .collect();
        assert_eq!(hogs.len(), 256);
        // They hold more than the guarantee: refused from now on.
        for n in 0..4 {
            let refused = admission.admit(0, &format!("hog{n}/other"));
            assert_eq!(refused.unwrap_err().kind(), "overloaded");
        }
        // A newcomer gets its guarantee (any of its Workers), no more.
        let mut web = fill(&admission, "web/a", 100);
        assert_eq!(web.len(), guarantee);
        assert_eq!(
            admission.admit(0, "web/b").unwrap_err().kind(),
            "overloaded"
        );
        assert_eq!(admission.namespace_in_flight(0, "web"), guarantee);
        // One of its requests ends: it has room again, the hogs do not.
        drop(web.pop());
        assert!(admission.admit(0, "web/a").is_ok());
        assert!(admission.admit(0, "hog0/w").is_err());
        assert_eq!(admission.in_flight(0), 256 + guarantee - 1);
    }

    #[test]
    fn in_flight_stays_within_the_limit_plus_the_guarantee_per_namespace() {
        let (limit, namespaces) = (16, 40);
        let admission = admission(limit);
        let guarantee = admission.guarantee;
        // Every namespace asks for far more than the limit, in turn.
        let mut held = Vec::new();
        for round in 0..3 {
            for n in 0..namespaces {
                held.extend(fill(&admission, &format!("ns{n}/r{round}"), 2 * limit));
            }
        }
        assert!(held.len() <= limit + guarantee * namespaces);
        // The first namespace took the limit; every other one its guarantee.
        assert_eq!(held.len(), limit + guarantee * (namespaces - 1));
        drop(held);
        assert_eq!(admission.in_flight(0), 0);
        assert_eq!(admission.namespace_in_flight(0, "ns0"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn draining_refuses_new_requests_and_waits_for_the_rest() {
        let admission = admission(4);
        let permit = admission.admit(1, "demo/a").unwrap();
        admission.start_draining();
        assert_eq!(admission.admit(0, "demo/a").unwrap_err().kind(), "draining");
        assert_eq!(admission.wait_idle(Duration::from_secs(1)).await, 1);
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.wait_idle(Duration::from_secs(60)).await })
        };
        tokio::task::yield_now().await;
        drop(permit);
        assert_eq!(waiter.await.unwrap(), 0);
    }
}
