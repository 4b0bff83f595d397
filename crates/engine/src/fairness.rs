//! Keeping a CPU hog from owning its thread: the other workers pinned to a
//! thread that one worker keeps busy with long turns are served by another
//! thread instead (a bounded-load rule at thread level, like the router's
//! at node level).
//!
//! A JavaScript turn cannot be preempted: while one runs, every other
//! worker on its thread waits. A worker whose requests each take tens of
//! milliseconds of CPU therefore made its neighbours hundreds of times
//! slower. Each thread publishes the last *long* turn it ran (one of at
//! least [`LONG_TURN`] of CPU): when and for which worker. [`Engine::execute`]
//! sends a request for a thread that ran another worker's long turn within
//! [`HOG_WINDOW`] to the thread whose last long turn is oldest, if that one
//! is clear of the window; the hog's own requests stay where they are (it
//! waits behind itself, and its per-worker slot share bounds its queue). A
//! moved worker gets an isolate on the new thread (a spare, then warm).
//!
//! Cost on the warm path: a comparison at the end of each turn, and in
//! `execute` one atomic load, plus a clock read only on threads that ran a
//! long turn at some point.
//!
//! [`Engine::execute`]: crate::Engine::execute

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A turn this long (CPU time) marks its thread as busy with its worker.
pub(crate) const LONG_TURN: Duration = Duration::from_millis(5);

/// How long after a long turn its thread counts as busy with that worker.
pub(crate) const HOG_WINDOW: Duration = Duration::from_millis(250);

/// What one thread publishes about its long turns; read by any thread.
#[derive(Debug, Default)]
pub(crate) struct ThreadLoad {
    /// When the last long turn ended (ns since the engine's epoch; 0 never).
    long_turn_at: AtomicU64,
    /// The worker that ran it ([`worker_key`]).
    long_turn_worker: AtomicU64,
}

/// The threads' loads and the clock they are read against.
#[derive(Debug)]
pub(crate) struct Loads {
    epoch: Instant,
    threads: Vec<ThreadLoad>,
}

/// A stable-within-the-process key for a worker id.
pub(crate) fn worker_key(worker: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    worker.hash(&mut hasher);
    hasher.finish() | 1
}

impl Loads {
    pub(crate) fn new(threads: usize) -> Self {
        Self {
            epoch: Instant::now(),
            threads: (0..threads).map(|_| ThreadLoad::default()).collect(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Thread `thread` just ran a turn of `cpu` for `worker`.
    /// (A blank isolate's warm-up has no worker and marks nothing.)
    pub(crate) fn turn_ended(&self, thread: usize, worker: &str, cpu: Duration) {
        if cpu < LONG_TURN || worker.is_empty() {
            return;
        }
        if let Some(load) = self.threads.get(thread) {
            load.long_turn_worker
                .store(worker_key(worker), Ordering::Relaxed);
            load.long_turn_at.store(self.now(), Ordering::Relaxed);
        }
    }

    /// The thread a request of `worker` for `thread` should run on.
    pub(crate) fn choose(&self, thread: usize, worker: &str) -> usize {
        let Some(load) = self.threads.get(thread) else {
            return thread;
        };
        let at = load.long_turn_at.load(Ordering::Relaxed);
        if at == 0 {
            return thread;
        }
        let now = self.now();
        let window = u64::try_from(HOG_WINDOW.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(at) >= window
            || load.long_turn_worker.load(Ordering::Relaxed) == worker_key(worker)
        {
            return thread;
        }
        // The thread whose last long turn is oldest, if it is out of the window.
        self.threads
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != thread)
            .map(|(i, l)| (i, l.long_turn_at.load(Ordering::Relaxed)))
            .filter(|(_, at)| now.saturating_sub(*at) >= window || *at == 0)
            .min_by_key(|(_, at)| *at)
            .map_or(thread, |(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_of_a_hog_move_and_the_hog_stays() {
        let loads = Loads::new(3);
        assert_eq!(loads.choose(0, "victim"), 0);
        loads.turn_ended(0, "victim", LONG_TURN / 2);
        assert_eq!(loads.choose(0, "victim"), 0, "short turns mark nothing");
        loads.turn_ended(0, "hog", LONG_TURN);
        assert_eq!(loads.choose(0, "hog"), 0);
        let moved = loads.choose(0, "victim");
        assert_ne!(moved, 0);
        // Thread 1 gets a hog too: the victim goes to the clear one.
        loads.turn_ended(1, "other-hog", LONG_TURN);
        assert_eq!(loads.choose(0, "victim"), 2);
        // Every thread busy: stay.
        loads.turn_ended(2, "third-hog", LONG_TURN);
        assert_eq!(loads.choose(0, "victim"), 0);
        // Another thread's victim is unaffected by thread 0's hog.
        assert_eq!(Loads::new(2).choose(1, "victim"), 1);
    }
}
