//! Node choice: weighted rendezvous (highest random weight) hashing.
//!
//! Every (worker, node) pair gets an independent uniform `u` in (0, 1); the
//! node's score is `-ln(u) / threads`, an exponential variable with rate
//! `threads`, and a worker's preference order is its nodes by ascending score.
//! The minimum of independent exponentials is node `i` with probability
//! `threads_i / Σ threads`, so load follows thread count exactly in
//! expectation. A node joining takes a worker only by out-scoring its old
//! first choice, and a node leaving hands its workers to their second choice:
//! nothing else moves (~1/N of workers per change). The cost is one hash mix
//! and one logarithm per node per lookup, O(N); see `docs/placement.md`.

use crate::NodeSet;
use crate::hash::{ln, mix, unit, worker_key};

impl NodeSet {
    /// Every node index, in `worker_id`'s order of preference: the first is
    /// where it runs, the next where its second replica runs, or where it
    /// fails over to.
    pub fn candidates(&self, worker_id: &str) -> Vec<usize> {
        let worker = worker_key(worker_id);
        // Scores are positive and finite, so their bit patterns sort like the
        // numbers; ties (equal 52-bit hashes) fall back to name order.
        let mut scored: Vec<(u64, usize)> = (0..self.len())
            .map(|i| (self.score(worker, i).to_bits(), i))
            .collect();
        scored.sort_unstable();
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// The first node of [`NodeSet::candidates`], without sorting or
    /// allocating; `None` if the set is empty.
    pub fn primary(&self, worker_id: &str) -> Option<usize> {
        let worker = worker_key(worker_id);
        let (mut best, mut best_score) = (None, f64::INFINITY);
        for i in 0..self.len() {
            let score = self.score(worker, i);
            if score < best_score {
                (best, best_score) = (Some(i), score);
            }
        }
        best
    }

    /// The score of node `i` for the worker with key `worker`: lower wins.
    fn score(&self, worker: u64, i: usize) -> f64 {
        -ln(unit(mix(worker ^ self.keys[i]))) * self.inverse_weights[i]
    }
}

/// Plain (unweighted) rendezvous hashing: the node with the highest
/// `mix(worker ^ node)` wins, ignoring thread counts.
///
/// The baseline the weighted scheme is measured against; production code uses
/// [`NodeSet::candidates`] and [`NodeSet::primary`].
pub fn unweighted_primary(set: &NodeSet, worker_id: &str) -> Option<usize> {
    let worker = worker_key(worker_id);
    (0..set.len()).max_by_key(|&i| (mix(worker ^ set.keys[i]), std::cmp::Reverse(i)))
}
