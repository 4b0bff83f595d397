//! The set of nodes placement chooses from.

use crate::hash::node_key;

/// A live, non-draining runtime node, as membership reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    /// The node's unique name (its Lease name).
    pub name: String,
    /// How many pinned worker threads it runs: its placement weight.
    pub threads: u32,
}

impl Node {
    /// A node called `name` with `threads` worker threads.
    pub fn new(name: impl Into<String>, threads: u32) -> Self {
        Self {
            name: name.into(),
            threads,
        }
    }
}

/// Where one replica of a worker runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Assignment {
    /// The node's name.
    pub node: String,
    /// The thread on that node, in `[0, threads)`.
    pub thread: u32,
}

/// An immutable, canonical set of nodes to place workers on.
///
/// Built once per membership change and shared (it is cheap to query and
/// never changes). Nodes are sorted by name and deduplicated, so two processes
/// that see the same members in any order build identical sets and give
/// identical answers; node indices (as returned by [`NodeSet::candidates`] and
/// expected by [`NodeSet::choose_bounded`]) index [`NodeSet::nodes`].
#[derive(Clone, Debug, Default)]
pub struct NodeSet {
    pub(crate) nodes: Vec<Node>,
    /// `node_key(name)` of each node.
    pub(crate) keys: Vec<u64>,
    /// Each node's weight (its thread count) as a float.
    pub(crate) weights: Vec<f64>,
    /// `1 / weights[i]`: scoring multiplies rather than divides.
    pub(crate) inverse_weights: Vec<f64>,
    /// The sum of `weights`.
    pub(crate) total_weight: f64,
}

impl NodeSet {
    /// The canonical set of `nodes`.
    ///
    /// Input order does not matter. A name listed twice keeps the entry with
    /// the most threads; nodes with zero threads cannot run anything and are
    /// left out.
    pub fn new(mut nodes: Vec<Node>) -> Self {
        nodes.retain(|n| n.threads > 0);
        nodes.sort_unstable_by(|a, b| a.name.cmp(&b.name).then(b.threads.cmp(&a.threads)));
        nodes.dedup_by(|later, kept| later.name == kept.name);
        let keys = nodes.iter().map(|n| node_key(&n.name)).collect();
        let weights: Vec<f64> = nodes.iter().map(|n| f64::from(n.threads)).collect();
        let inverse_weights = weights.iter().map(|w| 1.0 / w).collect();
        let total_weight = weights.iter().sum();
        Self {
            nodes,
            keys,
            weights,
            inverse_weights,
            total_weight,
        }
    }

    /// The nodes, sorted by name; a node's position here is its index.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The index of the node called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
    }

    /// Where `worker_id` runs with `replicas` replicas: the first `replicas`
    /// nodes of its preference order (so each on a distinct node; clamped to
    /// the node count), each on the thread [`thread_for`](crate::thread_for)
    /// picks for that node.
    pub fn place(&self, worker_id: &str, replicas: usize) -> Vec<Assignment> {
        let order = match replicas {
            0 => Vec::new(),
            1 => self.primary(worker_id).into_iter().collect(),
            _ => self.candidates(worker_id),
        };
        order
            .into_iter()
            .take(replicas)
            .map(|i| {
                let node = &self.nodes[i];
                Assignment {
                    node: node.name.clone(),
                    thread: crate::thread_for(worker_id, node.threads),
                }
            })
            .collect()
    }
}
