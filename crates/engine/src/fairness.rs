//! Keeping a CPU hog from owning its thread: the other namespaces' workers
//! pinned to a thread that one namespace keeps busy are served by another
//! thread instead (a bounded-load rule at thread level, like the router's
//! at node level).
//!
//! A JavaScript turn cannot be preempted: while one runs, every other
//! worker on its thread waits. A worker whose requests each take tens of
//! milliseconds of CPU therefore made its neighbours hundreds of times
//! slower, and one whose turns stayed just under a "long turn" mark but
//! came one after another, tens of times. Each thread publishes when it was
//! last busy with one namespace, and which: after a turn of at least
//! [`LONG_TURN`] of CPU, and after each [`WINDOW`] of its CPU time of which
//! one namespace used most (at least five eighths: a majority vote over the
//! turns, weighted by their CPU, that it won by a quarter of the window; a
//! flood of short turns counts like one long one).
//! [`Engine::execute`] sends a request for a thread that was busy with
//! *another* namespace within [`HOG_WINDOW`] to a thread busy with the
//! request's own namespace, else to the one last busy longest ago, if that
//! one is clear of the window; the hog's own
//! requests, and those of every Worker of its namespace, stay where they
//! are (it waits behind itself, and its namespace's slot share bounds its
//! queue). A moved worker gets an isolate on the new thread (a spare, then
//! warm).
//!
//! Cost on the warm path: a few comparisons and relaxed stores at the end
//! of each turn (no clock read: the window is counted in the thread's CPU
//! time, already read), and in `execute` one atomic load, plus a clock read
//! only on threads that were busy at some point.
//!
//! [`Engine::execute`]: crate::Engine::execute

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A turn this long (CPU time) marks its thread as busy with its namespace.
pub(crate) const LONG_TURN: Duration = Duration::from_millis(5);

/// The thread CPU time over which a majority marks the thread as busy.
pub(crate) const WINDOW: Duration = Duration::from_millis(20);

/// How long after a long turn its thread counts as busy with that worker.
pub(crate) const HOG_WINDOW: Duration = Duration::from_millis(250);

/// What one thread publishes about its long turns; read by any thread.
#[derive(Debug, Default)]
pub(crate) struct ThreadLoad {
    /// When the last long turn ended (ns since the engine's epoch; 0 never).
    long_turn_at: AtomicU64,
    /// The namespace that ran it ([`tenant_key`]).
    long_turn_worker: AtomicU64,
    /// The current window: where it started (thread CPU ns), the namespace
    /// leading the vote and its lead (ns). Written by the thread only.
    window_start: AtomicU64,
    leader: AtomicU64,
    lead: AtomicU64,
    /// The last long turn's end and namespace (the vote aside).
    long_only_at: AtomicU64,
    long_only_worker: AtomicU64,
}

/// The threads' loads and the clock they are read against.
#[derive(Debug)]
pub(crate) struct Loads {
    epoch: Instant,
    threads: Vec<ThreadLoad>,
}

/// A stable-within-the-process key for a namespace.
pub(crate) fn tenant_key(namespace: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    namespace.hash(&mut hasher);
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

    /// Thread `thread` just ran a turn of `cpu` for the namespace `key`
    /// ([`tenant_key`]), ending at `cpu_now` of the thread's CPU clock. (A
    /// blank isolate's warm-up has no worker, `None`, and marks nothing.)
    pub(crate) fn turn_ended(
        &self,
        thread: usize,
        key: Option<u64>,
        cpu: Duration,
        cpu_now: Duration,
    ) {
        let (Some(key), Some(load)) = (key, self.threads.get(thread)) else {
            return;
        };
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if cpu >= LONG_TURN {
            self.mark(load, key);
            load.long_only_worker.store(key, Ordering::Relaxed);
            load.long_only_at.store(self.now(), Ordering::Relaxed);
        }
        // Weighted majority vote (Boyer–Moore) over the window's turns.
        let (leader, lead, used) = (
            load.leader.load(Ordering::Relaxed),
            load.lead.load(Ordering::Relaxed),
            nanos(cpu),
        );
        if leader == key {
            load.lead
                .store(lead.saturating_add(used), Ordering::Relaxed);
        } else if lead > used {
            load.lead.store(lead - used, Ordering::Relaxed);
        } else {
            load.leader.store(key, Ordering::Relaxed);
            load.lead.store(used - lead, Ordering::Relaxed);
        }
        let now = nanos(cpu_now);
        let start = load.window_start.load(Ordering::Relaxed);
        if now.saturating_sub(start) < nanos(WINDOW) {
            return;
        }
        // The window is over: a leader with a real majority marks the thread.
        let (leader, lead) = (
            load.leader.load(Ordering::Relaxed),
            load.lead.load(Ordering::Relaxed),
        );
        if lead >= now.saturating_sub(start) / 4 {
            self.mark(load, leader);
        }
        load.window_start.store(now, Ordering::Relaxed);
        load.lead.store(0, Ordering::Relaxed);
    }

    fn mark(&self, load: &ThreadLoad, key: u64) {
        load.long_turn_worker.store(key, Ordering::Relaxed);
        load.long_turn_at.store(self.now(), Ordering::Relaxed);
    }

    /// Whether `namespace` ran a long turn within [`HOG_WINDOW`] (not spread).
    pub(crate) fn runs_long_turns(&self, namespace: &str) -> bool {
        let (key, now) = (tenant_key(namespace), self.now());
        self.threads.iter().any(|load| {
            let ago = now.saturating_sub(load.long_only_at.load(Ordering::Relaxed));
            load.long_only_worker.load(Ordering::Relaxed) == key
                && Duration::from_nanos(ago) < HOG_WINDOW
        })
    }

    /// The thread a request of a worker of `namespace` for `thread` should
    /// run on.
    pub(crate) fn choose(&self, thread: usize, namespace: &str) -> usize {
        let Some(load) = self.threads.get(thread) else {
            return thread;
        };
        let at = load.long_turn_at.load(Ordering::Relaxed);
        if at == 0 {
            return thread;
        }
        let (now, key) = (self.now(), tenant_key(namespace));
        let window = u64::try_from(HOG_WINDOW.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(at) >= window || load.long_turn_worker.load(Ordering::Relaxed) == key
        {
            return thread;
        }
        // A thread busy with this namespace itself, else the one whose last
        // busy mark is oldest, if it is out of the window.
        self.threads
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != thread)
            .map(|(i, l)| {
                let at = l.long_turn_at.load(Ordering::Relaxed);
                let own = l.long_turn_worker.load(Ordering::Relaxed) == key;
                (i, at, own && now.saturating_sub(at) < window)
            })
            .filter(|(_, at, own)| *own || *at == 0 || now.saturating_sub(*at) >= window)
            .min_by_key(|(_, at, own)| (!*own, *at))
            .map_or(thread, |(i, _, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Duration = Duration::ZERO;

    #[test]
    fn neighbours_of_a_hog_move_and_the_hog_stays() {
        let loads = Loads::new(3);
        assert_eq!(loads.choose(0, "victim"), 0);
        loads.turn_ended(0, Some(tenant_key("victim")), LONG_TURN / 2, C);
        assert_eq!(loads.choose(0, "victim"), 0, "short turns mark nothing");
        loads.turn_ended(0, Some(tenant_key("hog")), LONG_TURN, C);
        assert_eq!(loads.choose(0, "hog"), 0);
        let moved = loads.choose(0, "victim");
        assert_ne!(moved, 0);
        // Thread 1 gets a hog too: the victim goes to the clear one.
        loads.turn_ended(1, Some(tenant_key("other-hog")), LONG_TURN, C);
        assert_eq!(loads.choose(0, "victim"), 2);
        // Every thread busy: stay.
        loads.turn_ended(2, Some(tenant_key("third-hog")), LONG_TURN, C);
        assert_eq!(loads.choose(0, "victim"), 0);
        // Unless one is busy with the victim's own namespace.
        loads.turn_ended(1, Some(tenant_key("victim")), LONG_TURN, C);
        assert_eq!(loads.choose(0, "victim"), 1);
        // Another thread's victim is unaffected by thread 0's hog.
        assert_eq!(Loads::new(2).choose(1, "victim"), 1);
    }

    #[test]
    fn a_flood_of_short_turns_marks_its_thread_like_a_long_one() {
        let loads = Loads::new(2);
        let turn = LONG_TURN - Duration::from_micros(100);
        let mut cpu = Duration::ZERO;
        // The hog's short turns, with a neighbour's tiny ones between.
        while cpu < WINDOW * 2 {
            cpu += turn;
            loads.turn_ended(0, Some(tenant_key("hog")), turn, cpu);
            cpu += Duration::from_micros(50);
            loads.turn_ended(
                0,
                Some(tenant_key("victim")),
                Duration::from_micros(50),
                cpu,
            );
        }
        assert_eq!(loads.choose(0, "hog"), 0);
        assert_eq!(loads.choose(0, "victim"), 1);
        // Evenly shared CPU marks nothing.
        let loads = Loads::new(2);
        let mut cpu = Duration::ZERO;
        while cpu < WINDOW * 2 {
            for ns in ["a", "b"] {
                cpu += Duration::from_millis(1);
                loads.turn_ended(0, Some(tenant_key(ns)), Duration::from_millis(1), cpu);
            }
        }
        assert_eq!(loads.choose(0, "a"), 0);
        assert_eq!(loads.choose(0, "b"), 0);
    }
}
