//! A namespace's share of its engine thread's job queue, for the service
//! calls of its trees: [`CallQueues`], one per engine thread.
//!
//! A service call reaches its callee as a job on the thread's bounded job
//! queue (`queue_depth`), the queue every request of the thread comes
//! through, where a request that finds it full is refused at once (503,
//! `overloaded`). The thread takes jobs off it between turns, and while
//! requests wait for their start it does so only once the tasks ahead of it
//! ran: the calls that a few trees made in one turn of the thread each (up
//! to their top-level request's `subrequests`, 1,000) were all on it then,
//! and a neighbour's request of another namespace found no room.
//!
//! So a call first takes a place in the share of its tree's namespace (the
//! top-level request's, whoever the callee is): at most `share` calls of
//! one namespace's trees are on one thread's queue, or taken off it and
//! not yet begun; a call past it waits for a place in its namespace's own
//! line, first come first served, never on the shared queue. A place is
//! given back when the callee's request begins (the engine's
//! `Work::into_call`), not when it ends: a call never waits on a call in
//! flight (a caller waiting on its callee holds no place), so no chain of
//! calls can wait on itself, however deep.
//!
//! Per engine thread, as the queue is. The engine makes it with the
//! namespace's share of the thread's slots (`worker_slots`, by default a
//! quarter of `queue_depth`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Namespaces remembered before those with no call waiting or queued are
/// forgotten (a tree of a namespace seen lately allocates nothing here).
const KEPT_IDLE: usize = 64;

/// The lines of one engine thread's namespaces (`Rc`'d with the thread).
#[derive(Debug)]
pub struct CallQueues {
    share: usize,
    lines: RefCell<HashMap<Box<str>, Arc<Semaphore>>>,
}

/// One namespace's share of one thread's queue, which its trees' calls
/// take places in ([`CallTree::new`](crate::CallTree::new) keeps it).
#[derive(Debug, Clone)]
pub struct QueueShare(Arc<Semaphore>);

/// A call's place in its namespace's share, held from before its job is
/// queued until its request begins (carried in the call's request
/// extensions, which want `Clone`: a clone shares the place; the engine
/// drops the one it carries as the callee begins).
#[derive(Debug, Clone)]
pub struct QueuePlace {
    _held: Option<Arc<OwnedSemaphorePermit>>,
}

impl CallQueues {
    /// The lines of a thread whose namespaces may each have `share` calls
    /// on its queue (at least one).
    pub fn new(share: usize) -> Self {
        Self {
            share: share.max(1),
            lines: RefCell::default(),
        }
    }

    /// `namespace`'s share of the thread's queue.
    pub fn share_of(&self, namespace: &str) -> QueueShare {
        let mut lines = self.lines.borrow_mut();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_namespace_has_at_most_its_share_of_places_and_the_next_call_waits_for_one() {
        let queues = CallQueues::new(2);
        let hog = queues.share_of("hog");
        let (a, b) = (hog.place().await, hog.place().await);
        let mut third = tokio::spawn(hog.place());
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "past the share, a call waits");
        // Another namespace's share is its own.
        let web = queues.share_of("web");
        assert_eq!(web.free(), 2);
        let _web = web.place().await;
        // The hog's begun call gives its place to the one that waited.
        drop(a);
        let _third = (&mut third).await.unwrap();
        assert_eq!(hog.free(), 0);
        drop(b);
        assert_eq!(queues.share_of("hog").free(), 1, "the same line");
    }

    #[test]
    fn idle_namespaces_are_forgotten_and_busy_ones_kept() {
        let queues = CallQueues::new(1);
        let busy = queues.share_of("busy");
        for i in 0..KEPT_IDLE - 1 {
            drop(queues.share_of(&format!("idle{i}")));
        }
        assert_eq!(queues.lines.borrow().len(), KEPT_IDLE);
        drop(queues.share_of("new"));
        let lines = queues.lines.borrow();
        assert_eq!(lines.len(), 2, "the busy line and the new one");
        assert!(lines.contains_key("busy"));
        drop(busy);
    }
}
