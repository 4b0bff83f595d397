//! What a top-level request and every service call beneath it share
//! (Cloudflare: "Workers connected to one another via Service bindings
//! share the CPU resources of the top-level request", and each call is a
//! subrequest of it): one CPU budget and one subrequest budget, the
//! top-level request's own limits.
//!
//! Without it each call began with a fresh budget of its own, so a Worker
//! bound to itself recursing with fan-out 2 made a tree of 2^32 calls
//! (bounded by the depth of 32 only in height), and a request fanning out
//! to callees that burn CPU used `subrequests` × `cpuMs` of one thread.
//! Now a tree of calls, however wide or deep, makes at most the top-level
//! request's `subrequests` calls and fetches in all and uses at most its
//! `cpuMs` of CPU in all; each request in it is also held to its own
//! Worker's limits (or the lower ones its caller set).
//!
//! Two more rules hold per tree. Its calls live no longer than its
//! top-level request (Cloudflare: "Lifecycle is tied to the top-level
//! Worker"): when that request ends, a callee still running its
//! `ctx.waitUntil` work or streaming a body is canceled, so a client cannot
//! leave callees behind that hold no slot. And at most
//! [`MAX_LOADED_IN_FLIGHT`] distinct Worker Loader Workers have calls in
//! flight at once (Cloudflare's limit of Dynamic Workers per request), so
//! one request cannot keep dozens of loaded isolates busy (none of which
//! the warm set may evict while they are).
//!
//! Its calls also share one line per engine thread: the place each takes
//! in its namespace's share of the job queue of the thread it goes to
//! ([`queue`]), so the calls of one namespace's trees never fill the queue
//! every request of a thread comes through. Durable Object calls take
//! their places there too, and each is one of the tree's subrequests, but
//! the object's own request is not in the tree (an object outlives the
//! request that called it, as on Cloudflare, and runs under its own
//! limits).
//!
//! The tree is made the first time a request makes a service or Durable
//! Object call (from what it used so far), carried to the callee in the call's request
//! extensions (the engine's `host/service.rs`), and kept with the callee's request
//! (the engine's `host/state.rs`): every turn's CPU and every subrequest of any request
//! in it is counted here too. All of a tree's calls run on its top-level
//! request's thread, so atomics and the lock are for `Send` (request
//! extensions), not for contention.

pub mod budget;
pub mod call;
pub mod queue;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::queue::{QueuePlace, TreeQueues};

/// Distinct loaded Workers (Worker Loader code) a tree of calls may have
/// calls in flight to at once: Cloudflare's limit of Dynamic Workers per
/// request.
pub const MAX_LOADED_IN_FLIGHT: usize = 4;

/// The budgets a tree of service calls shares.
#[derive(Debug)]
pub struct CallTree {
    /// CPU nanoseconds every request of the tree used together.
    cpu_ns: AtomicU64,
    /// The top-level request's CPU limit.
    cpu_limit: Duration,
    /// Subrequests every request of the tree made together (service calls
    /// included).
    subrequests: AtomicU32,
    /// The top-level request's subrequest limit.
    subrequest_limit: u32,
    /// Calls in flight by loaded Worker (its bundle id).
    loaded: Mutex<HashMap<String, u32>>,
    /// The top-level request ended: so does every call of the tree.
    ended: AtomicBool,
    end: Notify,
    /// The top-level request's namespace's share of each thread's job
    /// queue, where every call of the tree takes a place.
    queue: TreeQueues,
}

/// A request's place in its tree of calls: when the top-level request's
/// place is dropped (the request is over, however it ended), the tree
/// ends.
#[derive(Debug)]
pub struct Seat {
    pub tree: Arc<CallTree>,
    top_level: bool,
}

impl Seat {
    /// The top-level request's place in its new tree.
    pub fn top_level(tree: Arc<CallTree>) -> Self {
        Self {
            tree,
            top_level: true,
        }
    }

    /// A service call's place in its caller's tree.
    pub fn call(tree: Arc<CallTree>) -> Self {
        Self {
            tree,
            top_level: false,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        if self.top_level {
            self.tree.ended.store(true, Ordering::Relaxed);
            self.tree.end.notify_waiters();
        }
    }
}

/// A call in flight to a loaded Worker: counted in its tree until dropped.
#[derive(Debug)]
pub struct LoadedCall {
    tree: Arc<CallTree>,
    id: String,
}

impl Drop for LoadedCall {
    fn drop(&mut self) {
        let mut loaded = self
            .tree
            .loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(calls) = loaded.get_mut(&self.id) {
            *calls -= 1;
            if *calls == 0 {
                loaded.remove(&self.id);
            }
        }
    }
}

impl CallTree {
    /// The tree of a top-level request that has used `cpu` of `cpu_limit`
    /// and made `subrequests` of its `subrequest_limit` so far, its calls
    /// queued in `queue` (its namespace's shares).
    pub fn new(
        (cpu, cpu_limit): (Duration, Duration),
        (subrequests, subrequest_limit): (u32, u32),
        queue: TreeQueues,
    ) -> Arc<Self> {
        Arc::new(Self {
            cpu_ns: AtomicU64::new(nanos(cpu)),
            cpu_limit,
            subrequests: AtomicU32::new(subrequests),
            subrequest_limit,
            loaded: Mutex::default(),
            ended: AtomicBool::new(false),
            end: Notify::new(),
            queue,
        })
    }

    /// Resolves with a call's place in the tree's share of the job queue
    /// of thread `thread`, where the call goes, once one is free
    /// ([`queue`]).
    pub fn queue_place(&self, thread: usize) -> impl Future<Output = QueuePlace> + use<> {
        self.queue.place_on(thread)
    }

    /// Resolves when the tree's top-level request has ended.
    pub async fn ended(&self) {
        loop {
            // Made before the check: a `notify_waiters` after it wakes it.
            let notified = self.end.notified();
            if self.ended.load(Ordering::Relaxed) {
                return;
            }
            notified.await;
        }
    }

    /// One more call in flight to loaded Worker `id`: refused when it
    /// would be the tree's `MAX_LOADED_IN_FLIGHT + 1`th distinct one.
    pub fn enter_loaded(self: &Arc<Self>, id: &str) -> Result<LoadedCall, String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if !loaded.contains_key(id) && loaded.len() >= MAX_LOADED_IN_FLIGHT {
            return Err(format!(
                "Worker Loader: a request may have calls in flight to at most {MAX_LOADED_IN_FLIGHT} distinct loaded Workers at once (its service calls' included); await one first"
            ));
        }
        *loaded.entry(id.to_owned()).or_default() += 1;
        Ok(LoadedCall {
            tree: self.clone(),
            id: id.to_owned(),
        })
    }

    /// Counts `cpu` of a turn of any request of the tree.
    pub fn charge(&self, cpu: Duration) {
        self.cpu_ns.fetch_add(nanos(cpu), Ordering::Relaxed);
    }

    /// CPU the whole tree may still use.
    pub fn cpu_remaining(&self) -> Duration {
        let used = Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed));
        self.cpu_limit.saturating_sub(used)
    }

    /// The top-level request's CPU limit, the tree's.
    pub fn cpu_limit(&self) -> Duration {
        self.cpu_limit
    }

    /// Counts one subrequest; `Err(limit)` (the top-level request's) when
    /// the tree has made them all.
    pub fn take_subrequest(&self) -> Result<(), u32> {
        let limit = self.subrequest_limit;
        (self.subrequests)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| limit)
    }

    /// Runs `work` until it ends, or until the tree's top-level request
    /// ends (`false`): then the call's request is canceled.
    /// A request without a tree should await its work directly: this
    /// future is larger than the work's own.
    pub async fn unless_ended(&self, work: impl Future<Output = ()>) -> bool {
        tokio::select! {
            () = work => true,
            () = self.ended() => false,
        }
    }

    /// Subrequests the tree made so far.
    #[cfg(test)]
    fn subrequests(&self) -> u32 {
        self.subrequests.load(Ordering::Relaxed)
    }
}

fn nanos(cpu: Duration) -> u64 {
    u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share() -> TreeQueues {
        TreeQueues::new(&Arc::new(crate::queue::CallQueues::new(1, 1)), 0, "ns")
    }

    #[test]
    fn a_tree_starts_from_what_its_top_level_request_used_and_shares_the_rest() {
        let ms = Duration::from_millis;
        let tree = CallTree::new((ms(4), ms(10)), (2, 3), share());
        assert_eq!(tree.cpu_remaining(), ms(6));
        tree.charge(ms(5));
        assert_eq!(tree.cpu_remaining(), ms(1));
        tree.charge(ms(5));
        assert_eq!(tree.cpu_remaining(), Duration::ZERO);
        assert_eq!(tree.take_subrequest(), Ok(()));
        assert_eq!(tree.take_subrequest(), Err(3));
        assert_eq!(tree.subrequests(), 3);
    }

    #[test]
    fn at_most_four_distinct_loaded_workers_are_in_flight_and_a_finished_one_frees_its_place() {
        let tree = CallTree::new((Duration::ZERO, Duration::MAX), (0, 50), share());
        let calls: Vec<_> = (0..4)
            .map(|i| tree.enter_loaded(&format!("w{i}")).unwrap())
            .collect();
        let again = tree.enter_loaded("w0").unwrap();
        assert!(tree.enter_loaded("w4").is_err());
        drop(again);
        assert!(
            tree.enter_loaded("w4").is_err(),
            "w0 still has a call in flight"
        );
        drop(calls);
        assert!(tree.enter_loaded("w4").is_ok());
    }

    #[tokio::test]
    async fn the_tree_ends_when_its_top_level_seat_is_dropped_not_a_call_s() {
        let tree = CallTree::new((Duration::ZERO, Duration::MAX), (0, 50), share());
        let (top, call) = (Seat::top_level(tree.clone()), Seat::call(tree.clone()));
        let waiting = tokio::spawn({
            let tree = tree.clone();
            async move { tree.ended().await }
        });
        drop(call);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(top);
        waiting.await.unwrap();
    }
}
