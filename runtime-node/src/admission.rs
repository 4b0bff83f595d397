//! Admission: a bound on requests in flight per thread, and the draining
//! switch. Both are checked before a request costs anything, so overload is
//! shed early and cheaply (an atomic add per request, one cache line per
//! thread: no lock, no shared counter between threads).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use crate::error::Error;
use crate::metrics::NodeMetrics;

/// One thread's counter, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot {
    in_flight: AtomicUsize,
}

/// The node's admission state. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Admission {
    slots: Vec<Slot>,
    max_per_thread: usize,
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
}

// === impl Admission ===

impl Admission {
    pub fn new(threads: usize, max_per_thread: usize, metrics: Arc<NodeMetrics>) -> Arc<Self> {
        Arc::new(Self {
            slots: (0..threads).map(|_| Slot::default()).collect(),
            max_per_thread,
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

    /// Admits a request on `thread`, or refuses it (draining, bad thread,
    /// thread at its limit).
    pub fn admit(self: &Arc<Self>, thread: u32) -> Result<Permit, Error> {
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
        let before = slot.in_flight.fetch_add(1, Ordering::AcqRel);
        if before >= self.max_per_thread {
            slot.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.metrics.rejection(index, "overloaded");
            return Err(Error::Overloaded { thread: index });
        }
        self.total.fetch_add(1, Ordering::AcqRel);
        self.metrics.in_flight_changed(index, 1);
        Ok(Permit {
            admission: self.clone(),
            thread: index,
        })
    }

    /// Requests in flight on `thread` now.
    pub fn in_flight(&self, thread: usize) -> usize {
        self.slots
            .get(thread)
            .map_or(0, |s| s.in_flight.load(Ordering::Acquire))
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
        let a = admission.admit(0).unwrap();
        let _b = admission.admit(0).unwrap();
        assert_eq!(admission.admit(0).unwrap_err().kind(), "overloaded");
        let _c = admission.admit(1).unwrap();
        assert_eq!(admission.in_flight(0), 2);
        drop(a);
        assert_eq!(admission.in_flight(0), 1);
        assert!(admission.admit(0).is_ok());
        assert_eq!(admission.admit(2).unwrap_err().kind(), "invalid_thread");
    }

    #[tokio::test(start_paused = true)]
    async fn draining_refuses_new_requests_and_waits_for_the_rest() {
        let admission = admission(4);
        let permit = admission.admit(1).unwrap();
        admission.start_draining();
        assert_eq!(admission.admit(0).unwrap_err().kind(), "draining");
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
