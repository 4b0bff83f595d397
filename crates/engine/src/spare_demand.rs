//! How many blank isolates (spares) an engine thread keeps ready: as many
//! as it had to load new workers in the last [`WINDOW`], at least one and
//! at most the configured `spare_isolates`.
//!
//! A spare is a whole idle isolate (~1.8 MiB of RSS,
//! docs/benchmark-history.md section 5), and it only pays off when a
//! never-seen worker (or one evicted from the warm set) arrives. A fixed
//! count keeps that memory on every thread whether misses come or not, and
//! is too few for a burst of them: spares are refilled only in the thread's
//! quiet moments, so a burst of `k` misses finds at most the spares made
//! before it. Sizing to the last second's misses keeps one spare (the first
//! new worker still finds it) on a thread that sees none, and up to the most
//! on a thread where new workers keep coming; spares above the target are
//! dropped once the thread is idle.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How far back loads count: the miss rate is read over one second.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

/// The recent loads of one thread and the spare count they call for.
///
/// The target is kept, not computed on each look: the job loop reads it on
/// every turn, and a warm request's path reads no clock for it. It rises
/// with [`SpareDemand::loaded`] and falls with [`SpareDemand::refresh`],
/// which the loop calls at [`SpareDemand::falls_at`].
#[derive(Debug)]
pub(crate) struct SpareDemand {
    /// `EngineConfig::spare_isolates`: the most spares kept (0: none).
    most: usize,
    /// When the last `most` loads happened, oldest first (older ones can
    /// never raise the target above `most`, so they are not kept).
    loads: VecDeque<Instant>,
    /// The spares to keep: the loads within [`WINDOW`] as of the last
    /// update, within one and `most`.
    target: usize,
}

impl SpareDemand {
    pub(crate) fn new(most: usize) -> Self {
        Self {
            most,
            loads: VecDeque::with_capacity(most),
            target: most.min(1),
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
        self.refresh(now);
    }

    /// Counts again at `now` the loads within [`WINDOW`].
    pub(crate) fn refresh(&mut self, now: Instant) {
        let recent = self
            .loads
            .iter()
            .filter(|at| now.saturating_duration_since(**at) < WINDOW)
            .count();
        self.target = recent.clamp(self.most.min(1), self.most);
    }

    /// The spares to keep.
    pub(crate) fn target(&self) -> usize {
        self.target
    }

    /// When the target falls, if it is above the floor of one: the oldest
    /// of the loads it counts leaving the window.
    pub(crate) fn falls_at(&self) -> Option<Instant> {
        if self.target <= 1 {
            return None;
        }
        let oldest_counted = self.loads.len().checked_sub(self.target)?;
        self.loads.get(oldest_counted).map(|at| *at + WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_keeps_one_spare_and_none_when_none_are_asked_for() {
        let now = Instant::now();
        assert_eq!(SpareDemand::new(4).target(), 1);
        assert_eq!(SpareDemand::new(4).falls_at(), None);
        assert_eq!(SpareDemand::new(1).target(), 1);
        let mut none = SpareDemand::new(0);
        none.loaded(now);
        assert_eq!(none.target(), 0);
        assert_eq!(none.falls_at(), None);
    }

    #[test]
    fn the_target_follows_the_last_seconds_misses_up_to_the_most() {
        let start = Instant::now();
        let mut demand = SpareDemand::new(4);
        for i in 0..3 {
            demand.loaded(start + Duration::from_millis(100 * i));
        }
        assert_eq!(demand.target(), 3);
        // The first load leaves the window at 1 s, then the second.
        assert_eq!(demand.falls_at(), Some(start + WINDOW));
        // Kept until refreshed.
        let later = start + WINDOW + Duration::from_millis(50);
        assert_eq!(demand.target(), 3);
        demand.refresh(later);
        assert_eq!(demand.target(), 2);
        assert_eq!(
            demand.falls_at(),
            Some(start + Duration::from_millis(100) + WINDOW)
        );
        // Past the window of the last one: back to the floor, nothing falls.
        let quiet = start + Duration::from_millis(200) + WINDOW;
        demand.refresh(quiet);
        assert_eq!(demand.target(), 1);
        assert_eq!(demand.falls_at(), None);
        // A burst beyond the most is held to it, and falls from its oldest
        // kept load.
        for i in 0..10 {
            demand.loaded(quiet + Duration::from_millis(i));
        }
        assert_eq!(demand.target(), 4);
        assert_eq!(
            demand.falls_at(),
            Some(quiet + Duration::from_millis(6) + WINDOW)
        );
    }
}
