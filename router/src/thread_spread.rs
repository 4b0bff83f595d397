//! Spreading a busy Worker's connections over the engine threads of the
//! node a front end serves on: `isolane dev`, whose HTTP connections are
//! served on the engine threads themselves (`server::serve_over`).
//!
//! A Worker lives on its home thread (placement's `thread_for`), and a
//! connection for it is served there, so its requests need no hop. But
//! then one thread is all a Worker gets however busy it is: with many
//! connections open to one Worker, it queues on its thread while the
//! others sit idle. So each Worker's open connections are counted per
//! thread: its first [`HOME_FIRST`] go home; each one after that goes to
//! the thread holding the fewest of them (home first among equals). A
//! request that arrives on a thread holding one of its Worker's
//! connections runs there, in that thread's own isolate of the Worker
//! (loaded by its first request there, as any cold start); any other
//! request is placed as before, one hop to the home thread at most.
//!
//! Cost: a Worker with [`HOME_FIRST`] connections or fewer is never
//! spread; a busy one holds an isolate on each thread it is spread to. A
//! Worker whose namespace runs long turns is not spread either (the
//! in-process node says so: `LocalNode::may_spread`), so that a CPU hog's
//! turns leave the other threads to its neighbours.
//! Durable Objects are not moved: an object's calls run on its own home
//! thread whichever thread serves the request (the engine's
//! `object_call.rs`).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// How many of a Worker's connections are served on its home thread
/// before the next one is spread.
pub const HOME_FIRST: u32 = 2;

/// One Worker's open connections per thread (see the module docs).
#[derive(Debug, Default)]
pub struct ThreadSpread {
    /// Indexed by thread; sized by the first connection steered.
    open: OnceLock<Arc<[AtomicU32]>>,
}

impl ThreadSpread {
    /// Whether a connection of this Worker is open on `thread` now.
    pub fn holds(&self, thread: u32) -> bool {
        self.open
            .get()
            .and_then(|open| open.get(thread as usize))
            .is_some_and(|count| count.load(Ordering::Relaxed) > 0)
    }

    fn counts(&self, threads: u32) -> &Arc<[AtomicU32]> {
        self.open
            .get_or_init(|| (0..threads.max(1)).map(|_| AtomicU32::new(0)).collect())
    }
}

/// Counts one of a Worker's connections on its thread until dropped.
#[derive(Debug)]
pub struct SpreadHold {
    open: Arc<[AtomicU32]>,
    thread: usize,
}

impl Drop for SpreadHold {
    fn drop(&mut self) {
        if let Some(count) = self.open.get(self.thread) {
            count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl ThreadSpread {
    /// The thread of `threads` a new connection of this Worker, at home
    /// on `home`, is served on, and the hold that counts it there while it
    /// is open.
    pub fn steer(&self, home: u32, threads: u32) -> (u32, SpreadHold) {
        let counts = self.counts(threads);
        let home = if (home as usize) < counts.len() {
            home
        } else {
            0
        };
        let at = |thread: u32| counts[thread as usize].load(Ordering::Relaxed);
        let thread = if at(home) < HOME_FIRST {
            home
        } else {
            let len = counts.len() as u32;
            (0..len)
                .map(|step| (home + step) % len)
                .min_by_key(|&thread| at(thread))
                .unwrap_or(home)
        };
        counts[thread as usize].fetch_add(1, Ordering::Relaxed);
        let hold = SpreadHold {
            open: Arc::clone(counts),
            thread: thread as usize,
        };
        (thread, hold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_stays_home_until_it_is_busy_then_spreads_evenly() {
        let spread = ThreadSpread::default();
        let mut holds = Vec::new();
        let mut on = |thread| {
            let (chosen, hold) = spread.steer(1, 3);
            holds.push(hold);
            assert_eq!(chosen, thread, "{holds:?}");
        };
        // Home first, twice; then the emptiest, home first among equals.
        for thread in [1, 1, 2, 0, 2, 0, 1] {
            on(thread);
        }
        assert!((0..3).all(|t| spread.holds(t)));
        holds.retain(|hold| hold.thread != 2);
        assert!(!spread.holds(2));
        assert!(spread.holds(1));
        // Thread 2 holds none now: the next spread connection goes there.
        assert_eq!(spread.steer(1, 3).0, 2);
    }

    #[test]
    fn one_or_two_connections_are_never_spread() {
        let spread = ThreadSpread::default();
        let first = spread.steer(0, 2);
        let second = spread.steer(0, 2);
        assert_eq!((first.0, second.0), (0, 0));
        assert!(!spread.holds(1));
        drop((first, second));
        assert!(!spread.holds(0));
    }
}
