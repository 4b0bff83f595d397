//! How many blank isolates (spares) an engine thread keeps ready: as many
//! as it had to load new workers in the last [`WINDOW`], at least one and
//! at most the configured `spare_isolates`.
//!
//! A spare is a whole idle isolate (~1.8 MiB of RSS, docs/benchmarks.md
//! section 5), and it only pays off when a never-seen worker (or one evicted
//! from the warm set) arrives. A fixed count keeps that memory on every
//! thread whether misses come or not, and is too few for a burst of them:
//! spares are refilled only in the thread's quiet moments, so a burst of
//! `k` misses finds at most the spares made before it. Sizing to the last
//! second's misses keeps one spare (the first new worker still finds it)
//! on a thread that sees none, and up to the most on a thread where new
//! workers keep coming; spares above the target are dropped once the
//! thread is idle.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How far back loads count: the miss rate is read over one second.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

/// The recent loads of one thread and the spare count they call for.
#[derive(Debug)]
pub(crate) struct SpareDemand {
    /// `EngineConfig::spare_isolates`: the most spares kept (0: none).
    most: usize,
    /// When the last `most` loads happened, oldest first (older ones can
    /// never raise the target above `most`, so they are not kept).
    loads: VecDeque<Instant>,
}

impl SpareDemand {
    pub(crate) fn new(most: usize) -> Self {
        Self {
            most,
            loads: VecDeque::with_capacity(most),
        }
    }

    /// A worker was loaded into a new isolate (a spare or not) at `now`.
    pub(crate) fn loaded(&mut self, now: Instant) {
        if self.most == 0 {
            return;
        }
        if self.loads.len() == self.most {
            self.loads.pop_front();
        }
        self.loads.push_back(now);
    }

    /// Loads within [`WINDOW`] before `now`.
    fn recent(&self, now: Instant) -> usize {
        self.loads
            .iter()
            .filter(|at| now.saturating_duration_since(**at) < WINDOW)
            .count()
    }

    /// The spares to keep at `now`: the recent loads, within one and the
    /// most.
    pub(crate) fn target(&self, now: Instant) -> usize {
        self.recent(now).clamp(self.most.min(1), self.most)
    }

    /// When the target next falls, if it can: the oldest recent load
    /// leaving the window, while it counts above the floor of one.
    pub(crate) fn falls_at(&self, now: Instant) -> Option<Instant> {
        if self.recent(now) <= 1 {
            return None;
        }
        self.loads
            .iter()
            .find(|at| now.saturating_duration_since(**at) < WINDOW)
            .map(|at| *at + WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_keeps_one_spare_and_none_when_none_are_asked_for() {
        let now = Instant::now();
        assert_eq!(SpareDemand::new(4).target(now), 1);
        assert_eq!(SpareDemand::new(1).target(now), 1);
        let mut none = SpareDemand::new(0);
        none.loaded(now);
        assert_eq!(none.target(now), 0);
        assert_eq!(none.falls_at(now), None);
    }

    #[test]
    fn the_target_follows_the_last_seconds_misses_up_to_the_most() {
        let start = Instant::now();
        let mut demand = SpareDemand::new(4);
        for i in 0..3 {
            demand.loaded(start + Duration::from_millis(100 * i));
        }
        let at = start + Duration::from_millis(250);
        assert_eq!(demand.target(at), 3);
        // The first load leaves the window at 1 s, then the second.
        assert_eq!(demand.falls_at(at), Some(start + WINDOW));
        let later = start + WINDOW + Duration::from_millis(50);
        assert_eq!(demand.target(later), 2);
        assert_eq!(
            demand.falls_at(later),
            Some(start + Duration::from_millis(100) + WINDOW)
        );
        // Past the window of the last one: back to the floor, nothing falls.
        let quiet = start + Duration::from_millis(200) + WINDOW;
        assert_eq!(demand.target(quiet), 1);
        assert_eq!(demand.falls_at(quiet), None);
        // A burst beyond the most is held to it.
        for i in 0..10 {
            demand.loaded(quiet + Duration::from_millis(i));
        }
        assert_eq!(demand.target(quiet + Duration::from_millis(10)), 4);
    }
}
