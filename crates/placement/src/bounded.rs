//! Bounded load: skip nodes that are already too busy.

use crate::NodeSet;

/// The default load bound `c`: a node takes a request if its load, counting
/// that request, stays within 1.25 × its fair share.
pub const DEFAULT_LOAD_FACTOR: f64 = 1.25;

/// How far past `c` × its share a Worker's first choice still takes a lone
/// request of that Worker (one whose Worker has no other request in flight):
/// up to `LONE_HEADROOM · c` × its share.
pub const LONE_HEADROOM: f64 = 2.0;

impl NodeSet {
    /// The first node in `worker_id`'s preference order that can take the
    /// request and stay within `c` × its fair share ("consistent hashing with
    /// bounded loads", Mirrokni, Thorup & Zadimoghaddam, 2018, without the
    /// paper's rounding up).
    ///
    /// `loads[i]` is the caller's current load (say, in-flight requests) on
    /// node `i` of [`NodeSet::nodes`], not counting the request being placed;
    /// a missing entry counts as 0. A node's fair share is the total load
    /// after placing the request, `Σ loads + 1`, split in proportion to
    /// threads (with equal threads, the mean). Node `i` takes the request if
    /// `loads[i] + 1 ≤ max(1, c · (Σ loads + 1) · threads_i / Σ threads)`:
    /// taking it keeps the node within `c` × its share, or the node is idle
    /// (a share below one request must not turn a worker away from its idle
    /// first choice). `c` below 1 (or NaN) is taken as 1.
    ///
    /// The paper's bound is `loads[i] < ⌈c · (Σ loads + 1) · threads_i / Σ threads⌉`;
    /// rounding up lets a node reach up to one whole request more than `c` ×
    /// its share. On in-flight counts, which are small, that is not noise: at
    /// 16 in flight per node, c = 1.25 allows 20 and the rounded bound 21,
    /// and the busiest node ran at 21/16 = 1.31 × the mean. Without rounding,
    /// it can happen that no node admits the request (say three equal nodes
    /// with one request each: the bound is 1.67); then it goes to the least
    /// loaded candidate per thread, the earliest in the preference order
    /// among equals. Either way the chosen node is within the paper's bound,
    /// and never above `c` × its share once that share is a few requests
    /// (`Σ loads ≥ (N − 1) / (c − 1)` with `N` equal nodes). `None` only if
    /// the set is empty.
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

    /// [`NodeSet::choose_bounded`] for a request whose Worker already has
    /// `others` requests in flight (anywhere). A lone request (`others == 0`)
    /// stays on its Worker's first choice while that node is within
    /// [`LONE_HEADROOM`] · `c` × its share; past that, and for every request
    /// of a Worker with others in flight, the bounded walk decides.
    ///
    /// Why: the bound exists to spread the Workers that load a node, and a
    /// Worker with one request in flight is not one of them, whereas moving
    /// it costs a cold start on a node that has never run it (or evicted it
    /// since). A node's load of in-flight requests swings by its square
    /// root: at 16 in flight per node, c = 1.25 turned about a quarter of all
    /// requests away from their first choice, most of them lone requests of
    /// rarely seen Workers, each cold where it landed (docs/placement.md).
    /// The Workers with requests in flight, the hot ones, still spill at `c`,
    /// so a node's load stays within `c` × its share plus its lone requests,
    /// and within `LONE_HEADROOM · c` × its share whatever they are.
    pub fn choose_for(&self, worker_id: &str, others: u64, loads: &[u64], c: f64) -> Option<usize> {
        let bound = Bound::new(self, loads, c);
        let first = self.primary(worker_id)?;
        let headroom = if others == 0 { LONE_HEADROOM } else { 1.0 };
        if bound.admits_within(first, headroom) {
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
    /// `c · (Σ loads + 1) / Σ threads`: the bound per thread, counting the
    /// request being placed on both sides.
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

    /// Whether node `i`, after taking the request, is within the bound (or
    /// is idle now).
    fn admits(&self, i: usize) -> bool {
        self.admits_within(i, 1.0)
    }

    /// [`Bound::admits`] with the bound scaled by `headroom`.
    fn admits_within(&self, i: usize, headroom: f64) -> bool {
        let after = self.load(i).saturating_add(1) as f64;
        after <= (self.per_weight * headroom * self.set.weights[i]).max(1.0)
    }

    /// The first admitted candidate or, when none is (the total load is too
    /// small for every busy node's bound to reach its next whole request),
    /// the least loaded candidate per thread, the earliest among equals.
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
