//! A classic consistent-hash ring with virtual nodes, kept for comparison.
//!
//! Each node owns `threads × vnodes_per_thread` points on a 64-bit ring; a
//! worker belongs to the owner of the first point at or after its key. Lookup
//! is a binary search (O(log points)), but balance depends on how many points
//! each node has, and memory grows with them. `docs/placement.md` and the
//! `placement_bench` example measure it against [`NodeSet`]'s rendezvous
//! hashing, which is what the rest of Isolane uses.

use crate::NodeSet;
use crate::hash::{ring_point, worker_key};

/// Virtual nodes per thread that [`Ring::new`] callers use by default.
pub const DEFAULT_VNODES_PER_THREAD: u32 = 16;

/// A consistent-hash ring over the nodes of a [`NodeSet`].
#[derive(Clone, Debug)]
pub struct Ring {
    /// (point, node index), sorted by point.
    points: Vec<(u64, usize)>,
    nodes: usize,
}

impl Ring {
    /// The ring of `set`, with `vnodes_per_thread` points per thread of each
    /// node (so weighted by threads).
    pub fn new(set: &NodeSet, vnodes_per_thread: u32) -> Self {
        let mut points = Vec::new();
        for (i, node) in set.nodes().iter().enumerate() {
            let key = set.keys[i];
            let count = node.threads.saturating_mul(vnodes_per_thread.max(1));
            points.extend((0..count).map(|r| (ring_point(key, r), i)));
        }
        points.sort_unstable();
        Self {
            points,
            nodes: set.len(),
        }
    }

    /// The node index that owns `worker_id`.
    pub fn primary(&self, worker_id: &str) -> Option<usize> {
        let start = self.start(worker_id);
        self.points.get(start).map(|&(_, i)| i)
    }

    /// Every node index in ring order from `worker_id`'s position, each once.
    pub fn candidates(&self, worker_id: &str) -> Vec<usize> {
        let mut seen = vec![false; self.nodes];
        let mut order = Vec::with_capacity(self.nodes);
        let start = self.start(worker_id);
        let (after, before) = self.points.split_at(start);
        for &(_, i) in before.iter().chain(after) {
            if !seen[i] {
                seen[i] = true;
                order.push(i);
                if order.len() == self.nodes {
                    break;
                }
            }
        }
        order
    }

    /// The index of the first point at or after the worker's key, wrapping.
    fn start(&self, worker_id: &str) -> usize {
        let key = worker_key(worker_id);
        let at = self.points.partition_point(|&(p, _)| p < key);
        if at == self.points.len() { 0 } else { at }
    }
}
