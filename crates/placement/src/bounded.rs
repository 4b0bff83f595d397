//! Bounded load: skip nodes that are already too busy.

use crate::NodeSet;

/// The default load bound `c`: a node takes a request while its load is
/// below 1.25 × its fair share.
pub const DEFAULT_LOAD_FACTOR: f64 = 1.25;

impl NodeSet {
    /// The first node in `worker_id`'s preference order whose load is under
    /// `c` × its fair share ("consistent hashing with bounded loads",
    /// Mirrokni, Thorup & Zadimoghaddam, 2018).
    ///
    /// `loads[i]` is the caller's current load (say, in-flight requests) on
    /// node `i` of [`NodeSet::nodes`]; a missing entry counts as 0. A node's
    /// fair share is the total load, counting the request being placed, split
    /// in proportion to threads (with equal threads, the mean). Node `i` takes
    /// the request while `loads[i] < ⌈c · (Σ loads + 1) · threads_i / Σ threads⌉`,
    /// so no node ever exceeds about `c` × its share. `c` below 1 (or NaN) is
    /// taken as 1, for which some node is always under its bound. `None` only
    /// if the set is empty.
    ///
    /// Costs one [`NodeSet::primary`] while the first choice has room, and a
    /// lazy walk of [`NodeSet::preference`] otherwise; callers that cache
    /// preference orders use [`NodeSet::choose_bounded_among`].
    pub fn choose_bounded(&self, worker_id: &str, loads: &[u64], c: f64) -> Option<usize> {
        let bound = Bound::new(self, loads, c);
        let first = self.primary(worker_id)?;
        if bound.admits(first) {
            return Some(first);
        }
        bound.first_admitted(self.preference(worker_id))
    }

    /// [`NodeSet::choose_bounded`] over a preference order the caller already
    /// has (from [`NodeSet::candidates`] on this same set).
    pub fn choose_bounded_among(
        &self,
        candidates: &[usize],
        loads: &[u64],
        c: f64,
    ) -> Option<usize> {
        Bound::new(self, loads, c).first_admitted(candidates.iter().copied())
    }
}

/// The per-node load bound for one placement decision.
struct Bound<'a> {
    set: &'a NodeSet,
    loads: &'a [u64],
    /// `c · (Σ loads + 1) / Σ threads`: the bound per thread.
    per_weight: f64,
}

impl<'a> Bound<'a> {
    fn new(set: &'a NodeSet, loads: &'a [u64], c: f64) -> Self {
        let c = if c >= 1.0 { c } else { 1.0 };
        let total: f64 = loads.iter().take(set.len()).map(|&l| l as f64).sum();
        Self {
            set,
            loads,
            per_weight: c * (total + 1.0) / set.total_weight,
        }
    }

    fn load(&self, i: usize) -> u64 {
        self.loads.get(i).copied().unwrap_or(0)
    }

    fn admits(&self, i: usize) -> bool {
        (self.load(i) as f64) < (self.per_weight * self.set.weights[i]).ceil()
    }

    /// The first admitted candidate. With `c ≥ 1` one always exists in exact
    /// arithmetic; should rounding ever deny all, the least loaded node per
    /// thread takes it rather than nobody.
    fn first_admitted(&self, candidates: impl Iterator<Item = usize>) -> Option<usize> {
        let mut least: Option<(f64, usize)> = None;
        for i in candidates.filter(|&i| i < self.set.len()) {
            if self.admits(i) {
                return Some(i);
            }
            let per_thread = self.load(i) as f64 / self.set.weights[i];
            if least.is_none_or(|(l, _)| per_thread < l) {
                least = Some((per_thread, i));
            }
        }
        least.map(|(_, i)| i)
    }
}
