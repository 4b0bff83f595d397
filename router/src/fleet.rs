//! The fleet: live runtime nodes, their load, and where a worker goes.
//!
//! [`Fleet`] is an immutable snapshot built by [`FleetBuilder`] whenever
//! membership changes (a Lease event, or a Lease expiring) and read by every
//! request without a lock. It pairs the placement crate's [`NodeSet`] with each
//! node's endpoints and its in-flight counter; the counters outlive snapshots
//! (they are keyed by node name in the builder), so a request that started under
//! one snapshot still releases its load under the next.
//!
//! Node choice is bounded-load consistent hashing: a worker goes to the first
//! node of its rendezvous preference order whose in-flight load is under
//! `load_factor` × its fair share (shares weighted by threads), so a hot worker
//! overflows to its next candidate instead of piling onto one node. A lone
//! request, one whose Worker has nothing else in flight ([`WorkerLoad`]),
//! stays on its first choice up to `LONE_HEADROOM` times that bound: it is not
//! what loads the node, and elsewhere it would start cold
//! (`isolane_placement`'s `choose_for`, docs/placement.md). A node that
//! refused a connection is skipped for a short while ([`EJECT_FOR`]) so that
//! requests do not keep paying for a dead node until its Lease expires.
//!
//! A Worker that binds Durable Objects is spread like any other: its
//! objects' calls go to each object's owner node, whichever node runs the
//! request (`runtime-node/src/peers.rs`, docs/durable-objects.md).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::HeaderValue;
use isolane_membership::NodeMember;
use isolane_placement::{Node, NodeSet, thread_for};

use crate::metrics::NodeSeries;
pub use crate::worker_load::WorkerLoad;

/// How long a node that failed a connection is skipped by new requests.
pub const EJECT_FOR: Duration = Duration::from_secs(2);

/// One live node in a [`Fleet`].
#[derive(Debug)]
pub struct FleetNode {
    /// Name, endpoints and threads from the node's Lease.
    pub member: NodeMember,
    state: Arc<NodeState>,
}

/// Per-node state shared by every snapshot that contains the node.
#[derive(Debug)]
struct NodeState {
    /// Requests sent to the node and not yet finished.
    in_flight: AtomicU64,
    /// Milliseconds since the fleet's epoch until which the node is skipped.
    ejected_until_ms: AtomicU64,
    /// The node's name as `x-isolane-node` carries it.
    header: Option<HeaderValue>,
    /// The node's request metrics, resolved once.
    series: NodeSeries,
}

impl NodeState {
    fn new(name: &str) -> Self {
        Self {
            in_flight: AtomicU64::new(0),
            ejected_until_ms: AtomicU64::new(0),
            header: HeaderValue::from_str(name).ok(),
            series: NodeSeries::new(name),
        }
    }
}

/// An immutable view of the live, non-draining nodes.
#[derive(Debug)]
pub struct Fleet {
    generation: u64,
    set: NodeSet,
    /// Aligned with `set.nodes()`.
    nodes: Vec<FleetNode>,
    epoch: Instant,
}

/// Where one attempt of a request goes.
#[derive(Debug, Clone)]
pub struct Pick {
    /// Index into the fleet's nodes.
    pub index: usize,
    /// The thread on that node.
    pub thread: u32,
}

impl Fleet {
    /// A fleet with no nodes.
    pub fn empty() -> Self {
        Self {
            generation: 0,
            set: NodeSet::default(),
            nodes: Vec::new(),
            epoch: Instant::now(),
        }
    }

    /// Increases with every membership change; channel caches use it to prune.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The nodes, sorted by name.
    pub fn nodes(&self) -> &[FleetNode] {
        &self.nodes
    }

    /// The node at `index`.
    pub fn node(&self, index: usize) -> Option<&FleetNode> {
        self.nodes.get(index)
    }

    /// Whether a node called `name` is in this fleet.
    pub fn contains(&self, name: &str) -> bool {
        self.set.index_of(name).is_some()
    }

    /// How many live nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is live.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node (and thread) for `worker_id`, whose requests in flight are
    /// `load`, under bounded load with factor `c`, skipping `exclude` and
    /// ejected nodes (unless every other node is ejected).
    pub fn pick(
        &self,
        worker_id: &str,
        load: &WorkerLoad,
        c: f64,
        exclude: &[usize],
    ) -> Option<Pick> {
        if self.nodes.is_empty() {
            return None;
        }
        let loads: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| n.state.in_flight.load(Ordering::Relaxed))
            .collect();
        let usable = |i: &usize| !exclude.contains(i) && !self.is_ejected(*i);
        let others = load.in_flight();
        let index = match self.set.choose_for(worker_id, others, &loads, c) {
            Some(first) if usable(&first) => first,
            _ => {
                let order = self.set.candidates(worker_id);
                let preferred: Vec<usize> = order.iter().copied().filter(usable).collect();
                match self.set.choose_bounded_among(&preferred, &loads, c) {
                    Some(i) => i,
                    // Every remaining node is ejected: try them rather than nobody.
                    None => order.into_iter().find(|i| !exclude.contains(i))?,
                }
            }
        };
        Some(self.pick_at(worker_id, index))
    }

    fn pick_at(&self, worker_id: &str, index: usize) -> Pick {
        let threads = self.nodes[index].member.threads;
        Pick {
            index,
            thread: thread_for(worker_id, threads),
        }
    }

    /// The thread on `worker_id`'s first-choice node it runs on, ignoring
    /// load.
    pub fn home_thread(&self, worker_id: &str) -> Option<u32> {
        let index = self.first_choice(worker_id)?;
        Some(self.pick_at(worker_id, index).thread)
    }

    /// The index of `worker_id`'s first-choice node, ignoring load.
    pub fn first_choice(&self, worker_id: &str) -> Option<usize> {
        self.set.primary(worker_id)
    }

    /// The first-choice node of `worker_id`, ignoring load (for placement moves).
    pub fn primary(&self, worker_id: &str) -> Option<&str> {
        self.first_choice(worker_id)
            .map(|i| self.set.nodes()[i].name.as_str())
    }

    /// Marks a request of the Worker whose load is `worker` as in flight on
    /// node `index` until the guard drops.
    pub fn start(&self, index: usize, worker: &Arc<WorkerLoad>) -> InFlight {
        let state = Arc::clone(&self.nodes[index].state);
        state.in_flight.fetch_add(1, Ordering::Relaxed);
        worker.started();
        InFlight {
            state,
            worker: Arc::clone(worker),
        }
    }

    /// Skips node `index` for new requests for [`EJECT_FOR`].
    pub fn eject(&self, index: usize) {
        if let Some(node) = self.nodes.get(index) {
            let until = self.now_ms() + EJECT_FOR.as_millis() as u64;
            node.state
                .ejected_until_ms
                .fetch_max(until, Ordering::Relaxed);
        }
    }

    /// Requests in flight on node `index`.
    pub fn in_flight(&self, index: usize) -> u64 {
        self.nodes
            .get(index)
            .map_or(0, |n| n.state.in_flight.load(Ordering::Relaxed))
    }

    fn is_ejected(&self, index: usize) -> bool {
        let until = self.nodes[index]
            .state
            .ejected_until_ms
            .load(Ordering::Relaxed);
        // A node never ejected needs no clock read.
        until > 0 && until > self.now_ms()
    }

    fn now_ms(&self) -> u64 {
        // +1 so that "never ejected" (0) is always in the past.
        self.epoch.elapsed().as_millis() as u64 + 1
    }
}

/// Releases one unit of a node's load, and of its Worker's, when dropped.
#[derive(Debug)]
pub struct InFlight {
    state: Arc<NodeState>,
    worker: Arc<WorkerLoad>,
}

impl InFlight {
    /// The node's request metrics.
    pub fn series(&self) -> &NodeSeries {
        &self.state.series
    }

    /// The node's name as `x-isolane-node` carries it.
    pub fn node_header(&self) -> Option<&HeaderValue> {
        self.state.header.as_ref()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.worker.ended();
    }
}

// === impl FleetBuilder ===

/// Builds [`Fleet`] snapshots, keeping per-node state across them.
#[derive(Debug)]
pub struct FleetBuilder {
    generation: u64,
    states: HashMap<String, Arc<NodeState>>,
    current: Vec<NodeMember>,
    epoch: Instant,
}

impl Default for FleetBuilder {
    fn default() -> Self {
        Self {
            generation: 0,
            states: HashMap::new(),
            current: Vec::new(),
            epoch: Instant::now(),
        }
    }
}

impl FleetBuilder {
    /// A new fleet for `members` (live and non-draining, as
    /// [`isolane_membership::live_members`] returns them), or `None` when they
    /// are the same nodes (names, endpoints, threads) as the last one.
    pub fn update(&mut self, mut members: Vec<NodeMember>) -> Option<Fleet> {
        members.sort_by(|a, b| a.name.cmp(&b.name));
        members.dedup_by(|later, kept| later.name == kept.name);
        members.retain(|m| m.threads > 0);
        if self.generation > 0 && same_nodes(&self.current, &members) {
            return None;
        }
        self.generation += 1;
        self.states
            .retain(|name, _| members.iter().any(|m| &m.name == name));
        let set = NodeSet::new(
            members
                .iter()
                .map(|m| Node::new(m.name.clone(), m.threads))
                .collect(),
        );
        let nodes = set
            .nodes()
            .iter()
            .filter_map(|n| members.iter().find(|m| m.name == n.name))
            .map(|member| FleetNode {
                state: Arc::clone(
                    self.states
                        .entry(member.name.clone())
                        .or_insert_with(|| Arc::new(NodeState::new(&member.name))),
                ),
                member: member.clone(),
            })
            .collect();
        self.current = members;
        Some(Fleet {
            generation: self.generation,
            set,
            nodes,
            epoch: self.epoch,
        })
    }
}

/// Whether two sorted member lists describe the same nodes, ignoring Lease expiry.
fn same_nodes(a: &[NodeMember], b: &[NodeMember]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name
                && x.endpoints == y.endpoints
                && x.threads == y.threads
                && x.draining == y.draining
        })
}

/// How many of `workers` had a first-choice node in `before` and have a
/// different one (or none) in `after`. The first nodes to appear move nothing.
pub fn placement_moves<'a>(
    before: &Fleet,
    after: &Fleet,
    workers: impl IntoIterator<Item = &'a str>,
) -> u64 {
    workers
        .into_iter()
        .filter(|w| {
            let was = before.primary(w);
            was.is_some() && was != after.primary(w)
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, threads: u32) -> NodeMember {
        NodeMember {
            name: name.to_owned(),
            endpoints: vec![format!("http://{name}:1")],
            threads,
            draining: false,
            expires_at: None,
            crash: None,
        }
    }

    fn fleet(members: &[(&str, u32)]) -> Fleet {
        FleetBuilder::default()
            .update(members.iter().map(|(n, t)| member(n, *t)).collect())
            .unwrap()
    }

    /// A Worker with nothing in flight.
    fn idle() -> Arc<WorkerLoad> {
        Arc::default()
    }

    fn name(f: &Fleet, pick: &Pick) -> String {
        f.nodes()[pick.index].member.name.clone()
    }

    #[test]
    fn a_hot_worker_overflows_to_its_next_candidate() {
        let f = fleet(&[("a", 4), ("b", 4), ("c", 4), ("d", 4)]);
        let hot = idle();
        let first = f.pick("ns/hot", &hot, 1.25, &[]).unwrap();
        // Nothing in flight: the first choice takes it.
        assert_eq!(first.index, f.set.primary("ns/hot").unwrap());
        // Pile requests on: once the primary is at its bound, new ones go elsewhere.
        let mut guards = Vec::new();
        let mut per_node: HashMap<String, u64> = HashMap::new();
        for _ in 0..200 {
            let p = f.pick("ns/hot", &hot, 1.25, &[]).unwrap();
            *per_node.entry(name(&f, &p)).or_default() += 1;
            guards.push(f.start(p.index, &hot));
        }
        assert!(per_node.len() > 1, "a hot worker spread: {per_node:?}");
        let max = per_node.values().copied().max().unwrap();
        // No node holds more than 1.25 × its fair share.
        assert!(max <= (1.25f64 * 200.0 / 4.0) as u64, "{per_node:?}");
        // The overflow follows the worker's preference order.
        let order = f.set.candidates("ns/hot");
        assert_eq!(per_node[&f.nodes()[order[0]].member.name], max);
        drop(guards);
        assert!((0..4).all(|i| f.in_flight(i) == 0));
        assert_eq!(
            f.pick("ns/hot", &idle(), 1.25, &[]).unwrap().index,
            order[0]
        );
    }

    /// A lone request stays on its Worker's first choice past the load
    /// bound, up to `LONE_HEADROOM` times it; a request of a Worker with
    /// another in flight is bounded at `c`.
    #[test]
    fn a_lone_request_stays_home_past_the_bound() {
        let f = fleet(&[("a", 2), ("b", 2), ("c", 2), ("d", 2)]);
        let order = f.set.candidates("ns/w");
        let home = order[0];
        // 15 requests of other Workers on every node but home, 30 on home:
        // counting the request placed, home's bound at c = 1.25 is
        // 1.25 × 76 / 4 = 23.75, twice that 47.5.
        let others = idle();
        let mut guards: Vec<InFlight> = Vec::new();
        for i in 0..4 {
            let n = if i == home { 30 } else { 15 };
            guards.extend((0..n).map(|_| f.start(i, &others)));
        }
        let w = idle();
        assert_eq!(f.pick("ns/w", &w, 1.25, &[]).unwrap().index, home);
        // With one of its own in flight elsewhere, the next request is bounded.
        let own = f.start(order[1], &w);
        assert_eq!(w.in_flight(), 1);
        assert_eq!(f.pick("ns/w", &w, 1.25, &[]).unwrap().index, order[1]);
        drop(own);
        assert_eq!(w.in_flight(), 0);
        // Past twice the bound, a lone request goes too: 80 on home, whose
        // bound is now 2 × 1.25 × 126 / 4 = 78.75.
        guards.extend((0..50).map(|_| f.start(home, &others)));
        assert_ne!(f.pick("ns/w", &w, 1.25, &[]).unwrap().index, home);
        drop(guards);
        assert_eq!(others.in_flight(), 0);
    }

    /// The thread a front end steers a Worker's connections to is the one
    /// an idle placement of it picks.
    #[test]
    fn the_home_thread_is_the_idle_pick_s() {
        let f = fleet(&[("a", 4), ("b", 8)]);
        for i in 0..50 {
            let worker = format!("ns/w{i}");
            let pick = f.pick(&worker, &idle(), 1.25, &[]).unwrap();
            assert_eq!(f.home_thread(&worker), Some(pick.thread), "{worker}");
        }
        assert_eq!(fleet(&[]).home_thread("ns/w"), None);
    }

    #[test]
    fn exclusion_and_ejection_move_to_the_next_candidate() {
        let f = fleet(&[("a", 2), ("b", 2), ("c", 2)]);
        let order = f.set.candidates("ns/w");
        let first = f.pick("ns/w", &idle(), 1.25, &[]).unwrap();
        assert_eq!(first.index, order[0]);
        let retry = f.pick("ns/w", &idle(), 1.25, &[first.index]).unwrap();
        assert_eq!(retry.index, order[1]);
        f.eject(order[0]);
        assert_eq!(f.pick("ns/w", &idle(), 1.25, &[]).unwrap().index, order[1]);
        // With every node ejected, requests still go somewhere.
        f.eject(order[1]);
        f.eject(order[2]);
        assert!(f.pick("ns/w", &idle(), 1.25, &[]).is_some());
        assert!(f.pick("ns/w", &idle(), 1.25, &[0, 1, 2]).is_none());
    }

    #[test]
    fn thread_is_the_jump_hash_of_the_worker() {
        let f = fleet(&[("a", 8)]);
        let p = f.pick("ns/w", &idle(), 1.25, &[]).unwrap();
        assert_eq!(p.thread, thread_for("ns/w", 8));
        assert!(fleet(&[]).pick("ns/w", &idle(), 1.25, &[]).is_none());
    }

    #[test]
    fn load_survives_a_membership_change_and_moves_are_counted() {
        let mut b = FleetBuilder::default();
        let one = b.update(vec![member("a", 2), member("b", 2)]).unwrap();
        let guard = one.start(0, &idle());
        assert!(b.update(vec![member("b", 2), member("a", 2)]).is_none());
        let two = b
            .update(vec![member("a", 2), member("b", 2), member("c", 2)])
            .unwrap();
        assert!(two.generation() > one.generation());
        assert_eq!(two.in_flight(0), 1);
        drop(guard);
        assert_eq!(two.in_flight(0), 0);
        let workers: Vec<String> = (0..3000).map(|i| format!("ns/w{i}")).collect();
        let moved = placement_moves(&one, &two, workers.iter().map(String::as_str));
        // Adding one node of three moves about a third of the workers, all to it.
        assert!((700..1300).contains(&moved), "moved {moved}");
        let empty = Fleet::empty();
        let none = workers.iter().map(String::as_str);
        assert_eq!(
            placement_moves(&empty, &one, none),
            0,
            "joining an empty fleet moves nothing"
        );
        for w in &workers {
            if one.primary(w) != two.primary(w) {
                assert_eq!(two.primary(w), Some("c"));
            }
        }
    }
}
