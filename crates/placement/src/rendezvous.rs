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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::NodeSet;
use crate::hash::{ln, mix, unit, worker_key};

impl NodeSet {
    /// Every node index, in `worker_id`'s order of preference: the first is
    /// where it runs, the next where its second replica runs, or where it
    /// fails over to.
    pub fn candidates(&self, worker_id: &str) -> Vec<usize> {
        let mut scored = self.scored(worker_id);
        scored.sort_unstable();
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// The same order as [`NodeSet::candidates`], produced lazily: O(N) to
    /// start, O(log N) per node taken, for callers that usually stop after
    /// the first few (failover, bounded load).
    pub fn preference(&self, worker_id: &str) -> Preference {
        Preference {
            heap: BinaryHeap::from(
                self.scored(worker_id)
                    .into_iter()
                    .map(Reverse)
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// (score bits, index) of every node. Scores are positive and finite, so
    /// their bit patterns order like the numbers; ties (equal 52-bit hashes)
    /// fall back to the index, i.e. name order.
    fn scored(&self, worker_id: &str) -> Vec<(u64, usize)> {
        let worker = worker_key(worker_id);
        (0..self.len())
            .map(|i| (self.score(worker, i).to_bits(), i))
            .collect()
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

/// A worker's nodes in order of preference; see [`NodeSet::preference`].
#[derive(Clone, Debug)]
pub struct Preference {
    heap: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Iterator for Preference {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        self.heap.pop().map(|Reverse((_, i))| i)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.heap.len(), Some(self.heap.len()))
    }
}

impl ExactSizeIterator for Preference {}

/// Plain (unweighted) rendezvous hashing: the node with the highest
/// `mix(worker ^ node)` wins, ignoring thread counts.
///
/// The baseline the weighted scheme is measured against; production code uses
/// [`NodeSet::candidates`] and [`NodeSet::primary`].
pub fn unweighted_primary(set: &NodeSet, worker_id: &str) -> Option<usize> {
    let worker = worker_key(worker_id);
    (0..set.len()).max_by_key(|&i| (mix(worker ^ set.keys[i]), Reverse(i)))
}
