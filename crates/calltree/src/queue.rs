//! A namespace's share of an engine thread's job queue, for the calls of
//! its trees: [`CallQueues`], one per engine, a line per thread and
//! namespace.
//!
//! A service call reaches its callee as a job on its thread's bounded job
//! queue (`queue_depth`), and a Durable Object call as a job on its
//! object's home thread's: the queue every request of that thread comes
//! through, where a request that finds it full is refused at once (503,
//! `overloaded`). The thread takes jobs off it between turns, and while
//! requests wait for their start it does so only once the tasks ahead of it
//! ran: the calls that a few trees made in one turn of the thread each (up
//! to their top-level request's `subrequests`, 1,000) were all on it then,
//! and a neighbour's request of another namespace found no room.
//!
//! So a call first takes a place in the share of its tree's namespace (the
//! top-level request's, whoever the callee is) on the thread its job goes
//! to: at most `share` calls of one namespace's trees are on one thread's
//! queue; a call past it waits for a place in its namespace's own line,
//! first come first served, never on the shared queue. A place is given
//! back when the thread takes the call's job off its queue (the engine's
//! `Work::off_queue`), not when the call ends: a call never waits on a call
//! in flight, nor on a slot (a caller waiting on its callee holds no
//! place), so no chain of calls can wait on itself, however deep.
//!
//! The engine makes it with the namespace's share of a thread's slots
//! (`worker_slots`, by default a quarter of `queue_depth`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Namespaces a thread remembers before those with no call waiting or
/// queued are forgotten (a tree of a namespace seen lately allocates
/// nothing here).
const KEPT_IDLE: usize = 64;

/// One thread's lines, by namespace.
type Lines = Mutex<HashMap<Box<str>, Arc<Semaphore>>>;

/// The lines of every engine thread's namespaces (one per engine, shared
/// by its threads: a Durable Object call queues on its object's home
/// thread, which may be another). Locked only as a tree is made and as a
/// call goes to another thread, never for a call on its tree's own.
#[derive(Debug)]
pub struct CallQueues {
    share: usize,
    threads: Box<[Lines]>,
}

/// One namespace's share of one thread's queue, which its trees' calls
/// take places in.
#[derive(Debug, Clone)]
pub struct QueueShare(Arc<Semaphore>);

/// Where a tree's calls take their places: its namespace's share of each
/// thread's queue, its own thread's at hand
/// ([`CallTree::new`](crate::CallTree::new) keeps it).
#[derive(Debug)]
pub struct TreeQueues {
    queues: Arc<CallQueues>,
    namespace: Box<str>,
    thread: usize,
    own: QueueShare,
}

/// A call's place in its namespace's share, held from before its job is
/// queued until its request begins (carried in the call's request
/// extensions, which want `Clone`: a clone shares the place; the engine
/// drops the one it carries as the callee begins).
#[derive(Debug, Clone)]
pub struct QueuePlace {
    _held: Option<Arc<OwnedSemaphorePermit>>,
}

impl CallQueues {
    /// The lines of `threads` threads whose namespaces may each have
    /// `share` calls on each thread's queue (at least one).
    pub fn new(threads: usize, share: usize) -> Self {
        Self {
            share: share.max(1),
            threads: (0..threads).map(|_| Lines::default()).collect(),
        }
    }

    /// `namespace`'s share of thread `thread`'s queue (a share of its own,
    /// in no line, for a thread the engine does not have).
    pub fn share_of(&self, thread: usize, namespace: &str) -> QueueShare {
        let Some(lines) = self.threads.get(thread) else {
            return QueueShare(Arc::new(Semaphore::new(self.share)));
        };
        let mut lines = lines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(line) = lines.get(namespace) {
            return QueueShare(line.clone());
        }
        if lines.len() >= KEPT_IDLE {
            // Trees and places hold the other references: a line held here
            // alone has no call waiting, queued or about to be.
            lines.retain(|_, line| Arc::strong_count(line) > 1);
        }
        let line = Arc::new(Semaphore::new(self.share));
        lines.insert(Box::from(namespace), line.clone());
        QueueShare(line)
    }
}

impl QueueShare {
    /// Resolves with a place in the share, once one is free (in the order
    /// the calls asked).
    pub fn place(&self) -> impl Future<Output = QueuePlace> + use<> {
        let line = self.0.clone();
        // The semaphore is never closed: `None` would only let the call go.
        async move {
            let held = line.acquire_owned().await.ok();
            QueuePlace {
                _held: held.map(Arc::new),
            }
        }
    }

    /// Places free now.
    pub fn free(&self) -> usize {
        self.0.available_permits()
    }
}

impl TreeQueues {
    /// The places of the trees of `namespace`'s top-level requests on
    /// thread `thread`.
    pub fn new(queues: &Arc<CallQueues>, thread: usize, namespace: &str) -> Self {
        let own = queues.share_of(thread, namespace);
        Self {
            queues: queues.clone(),
            namespace: Box::from(namespace),
            thread,
            own,
        }
    }

    /// Resolves with a place in the share of thread `thread`'s queue,
    /// where the call's job goes, once one is free.
    pub fn place_on(&self, thread: usize) -> impl Future<Output = QueuePlace> + use<> {
        if thread == self.thread {
            return self.own.place();
        }
        self.queues.share_of(thread, &self.namespace).place()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_namespace_has_at_most_its_share_of_places_and_the_next_call_waits_for_one() {
        let queues = CallQueues::new(1, 2);
        let hog = queues.share_of(0, "hog");
        let (a, b) = (hog.place().await, hog.place().await);
        let mut third = tokio::spawn(hog.place());
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "past the share, a call waits");
        // Another namespace's share is its own.
        let web = queues.share_of(0, "web");
        assert_eq!(web.free(), 2);
        let _web = web.place().await;
        // The hog's begun call gives its place to the one that waited.
        drop(a);
        let _third = (&mut third).await.unwrap();
        assert_eq!(hog.free(), 0);
        drop(b);
        assert_eq!(queues.share_of(0, "hog").free(), 1, "the same line");
    }

    #[tokio::test]
    async fn a_tree_takes_its_places_in_the_share_of_the_thread_its_call_goes_to() {
        let queues = Arc::new(CallQueues::new(2, 1));
        let tree = TreeQueues::new(&queues, 0, "hog");
        let _here = tree.place_on(0).await;
        assert_eq!(queues.share_of(0, "hog").free(), 0);
        assert_eq!(
            queues.share_of(1, "hog").free(),
            1,
            "the other thread's own"
        );
        let there = tree.place_on(1).await;
        let mut next = tokio::spawn(tree.place_on(1));
        tokio::task::yield_now().await;
        assert!(
            !next.is_finished(),
            "past the other thread's share, a call waits"
        );
        drop(there);
        let _next = (&mut next).await.unwrap();
        // A thread the engine does not have: a share of its own.
        let _none = tree.place_on(7).await;
    }

    #[test]
    fn idle_namespaces_are_forgotten_and_busy_ones_kept() {
        let queues = CallQueues::new(1, 1);
        let busy = queues.share_of(0, "busy");
        for i in 0..KEPT_IDLE - 1 {
            drop(queues.share_of(0, &format!("idle{i}")));
        }
        let lines = || queues.threads[0].lock().unwrap().len();
        assert_eq!(lines(), KEPT_IDLE);
        drop(queues.share_of(0, "new"));
        assert_eq!(lines(), 2, "the busy line and the new one");
        assert!(queues.threads[0].lock().unwrap().contains_key("busy"));
        drop(busy);
    }
}
