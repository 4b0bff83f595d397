//! Comparison 10: a fleet simulation (issue 35). A Zipf stream of requests
//! over many Workers, each placed as the router places it (the placement
//! crate's weighted rendezvous with bounded load for the node, jump hash for
//! the thread: `Fleet::pick`'s calls) into per-thread warm pools run by the
//! engine's own eviction policy (`isolane_engine::warm_set`), once per node
//! memory budget. Nothing runs JavaScript: an isolate is its byte cost.
//!
//! Deterministic for a seed. Budgets are split over the machine's cores;
//! each core draws the same stream and places each request once for all of
//! its budgets.

use std::fmt::Write as _;

use isolane_engine::warm_set::WarmSet;
use isolane_placement::{DEFAULT_LOAD_FACTOR, Node, NodeSet, thread_for};

use crate::zipf::{Zipf, unit};

/// The revision every simulated Worker runs.
const REVISION: &str = "1";

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Setup {
    pub workers: usize,
    pub nodes: usize,
    pub threads: u32,
    pub zipf: f64,
    /// Requests counted, after `warmup` uncounted ones.
    pub requests: u64,
    pub warmup: u64,
    /// What one warm isolate costs its node.
    pub isolate_bytes: usize,
    /// Node memory budgets to compare, bytes (each thread gets its share).
    pub budgets: Vec<u64>,
    /// Warm isolates per thread besides the memory bound; `None`: memory only.
    pub isolates_per_thread: Option<usize>,
    /// Requests in flight per node, for the router's load bound: each
    /// request stays in flight for the next `in_flight × nodes` arrivals.
    /// 0: no load, every request goes to its Worker's first choice.
    pub in_flight: usize,
    /// Whether a lone request (its Worker has no other in flight) stays on
    /// its first choice up to `LONE_HEADROOM` × the bound, as the router
    /// places it (`NodeSet::choose_for`); false: every request is bounded at
    /// `c` (the router before that rule).
    pub lone_stays: bool,
    /// The router's standby prewarm: the first time a Worker has a request
    /// placed while another is in flight, the node its spill would reach
    /// (the walk without its first choice) loads it if that thread's pool
    /// has room without evicting (`WarmSet::has_room`, as the engine's
    /// `Prewarm::Standby` asks it).
    pub standby: bool,
    pub seed: u64,
}

/// One budget's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub budget: u64,
    pub requests: u64,
    pub hits: u64,
    /// Misses that were their Worker's first request in the whole stream:
    /// cold in any fleet that has not seen the Worker before.
    pub first_sightings: u64,
    /// Standby prewarms that loaded an isolate, counted ones (each is a
    /// compile on a node with room to spare).
    pub standby_loads: u64,
    /// The lowest warm-hit ratio of any node, and of any thread.
    pub worst_node: f64,
    pub worst_thread: f64,
}

impl Row {
    pub fn warm(&self) -> f64 {
        self.hits as f64 / self.requests.max(1) as f64
    }

    /// The warm ratio without first sightings: what a fleet that had seen
    /// every Worker before would see if those requests had been warm.
    pub fn warm_seen(&self) -> f64 {
        (self.hits + self.first_sightings) as f64 / self.requests.max(1) as f64
    }
}

/// The simulation's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub rows: Vec<Row>,
    /// Busiest node's (thread's) counted requests over the mean.
    pub node_imbalance: f64,
    pub thread_imbalance: f64,
    /// Requests not sent to their Worker's first-choice node.
    pub spilled: f64,
}

/// Where each Worker goes: its id, its thread (the same on every node: the
/// nodes have equal threads) and its first-choice node, computed once.
pub struct Placement {
    set: NodeSet,
    pub ids: Vec<String>,
    thread: Vec<u32>,
    primary: Vec<u32>,
}

impl Placement {
    pub fn new(workers: usize, nodes: usize, threads: u32) -> Self {
        let set = NodeSet::new(
            (0..nodes)
                .map(|n| Node::new(format!("node-{n:03}"), threads))
                .collect(),
        );
        // Named as the density comparison names its Workers.
        let ids: Vec<String> = (0..workers)
            .map(|i| format!("tenant-{}/worker-{i}", i % 97))
            .collect();
        let thread = ids.iter().map(|id| thread_for(id, threads)).collect();
        let primary = ids
            .iter()
            .map(|id| set.primary(id).unwrap_or(0) as u32)
            .collect();
        Self {
            set,
            ids,
            thread,
            primary,
        }
    }

    /// The node and thread of `worker` with `loads` in flight per node and
    /// `others` of the Worker's own requests in flight (`None`: every
    /// request bounded alike), as the router's `Fleet::pick` chooses them
    /// when no node is ejected.
    pub fn pick(&self, worker: usize, loads: Option<&[u64]>, others: Option<u64>) -> (usize, u32) {
        let id = &self.ids[worker];
        let node = match (loads, others) {
            (None, _) => Some(self.primary[worker] as usize),
            (Some(loads), None) => self.set.choose_bounded(id, loads, DEFAULT_LOAD_FACTOR),
            (Some(loads), Some(others)) => {
                self.set.choose_for(id, others, loads, DEFAULT_LOAD_FACTOR)
            }
        };
        let node = node.unwrap_or(0);
        (node, self.thread[worker])
    }

    /// The node a spill of `worker` would reach with `loads` in flight:
    /// the bounded walk without its first choice, where the router sends
    /// its standby prewarm.
    pub fn spill_node(&self, worker: usize, loads: &[u64]) -> Option<usize> {
        let order = self.set.candidates(&self.ids[worker]);
        self.set
            .choose_bounded_among(order.get(1..)?, loads, DEFAULT_LOAD_FACTOR)
    }

    pub fn is_first_choice(&self, worker: usize, node: usize) -> bool {
        self.primary[worker] as usize == node
    }
}

/// Runs the simulation.
pub fn simulate(setup: &Setup) -> Outcome {
    let placement = Placement::new(setup.workers, setup.nodes, setup.threads);
    let zipf = Zipf::new(setup.workers, setup.zipf);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks: Vec<Vec<u64>> = (0..cores.min(setup.budgets.len()).max(1))
        .map(|c| {
            setup
                .budgets
                .iter()
                .skip(c)
                .step_by(cores)
                .copied()
                .collect()
        })
        .collect();
    let parts: Vec<Part> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|budgets| scope.spawn(|| run(setup, &placement, &zipf, budgets)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut rows: Vec<Row> = parts.iter().flat_map(|p| p.rows.clone()).collect();
    rows.sort_by_key(|r| r.budget);
    let first = parts.first();
    Outcome {
        rows,
        node_imbalance: first.map_or(0.0, |p| busiest(&p.node_requests)),
        thread_imbalance: first.map_or(0.0, |p| busiest(&p.thread_requests)),
        spilled: first.map_or(0.0, |p| p.spilled as f64 / setup.requests.max(1) as f64),
    }
}

/// What one core measured.
struct Part {
    rows: Vec<Row>,
    node_requests: Vec<u64>,
    thread_requests: Vec<u64>,
    spilled: u64,
}

/// One budget's pools (one per node thread) and hit counts.
struct Pools {
    budget: u64,
    pools: Vec<WarmSet<()>>,
    hits: Vec<u64>,
    first_sightings: u64,
    standby_loads: u64,
}

impl Pools {
    /// A request of `id` on thread `slot`: warm, or loaded now. `counted`:
    /// whether it counts, and whether it is its Worker's first sighting.
    fn serve(
        &mut self,
        slot: usize,
        id: &str,
        bytes: usize,
        (counted, first_sighting): (bool, bool),
        evicted: &mut Vec<isolane_engine::warm_set::Evicted>,
    ) {
        let pool = &mut self.pools[slot];
        if pool.get(id, REVISION).is_some() {
            self.hits[slot] += u64::from(counted);
            return;
        }
        self.first_sightings += u64::from(counted && first_sighting);
        // Load, then release: an isolate's size never changes here, so
        // the engine's later heap samples would change nothing.
        pool.insert(id, REVISION, (), bytes, evicted);
        pool.set_heap_bytes(id, REVISION, bytes, evicted);
        evicted.clear();
    }

    /// A standby prewarm of `id` on thread `slot`: loaded only if it fits
    /// without evicting (nothing is evicted, so nothing is collected).
    fn standby(&mut self, slot: usize, id: &str, bytes: usize, counted: bool) {
        let pool = &mut self.pools[slot];
        if pool.peek(id, REVISION).is_none() && pool.has_room(bytes) {
            let mut evicted = Vec::new();
            pool.insert(id, REVISION, (), bytes, &mut evicted);
            self.standby_loads += u64::from(counted);
        }
    }
}

fn run(setup: &Setup, placement: &Placement, zipf: &Zipf, budgets: &[u64]) -> Part {
    let threads = setup.threads as usize;
    let slots = setup.nodes * threads;
    let capacity = setup.isolates_per_thread.unwrap_or(usize::MAX);
    let mut all: Vec<Pools> = budgets
        .iter()
        .map(|&budget| {
            let per_thread = usize::try_from(budget / setup.threads as u64).unwrap_or(usize::MAX);
            Pools {
                budget,
                pools: (0..slots)
                    .map(|_| WarmSet::new(capacity, per_thread))
                    .collect(),
                hits: vec![0; slots],
                first_sightings: 0,
                standby_loads: 0,
            }
        })
        .collect();
    let mut requests = vec![0u64; slots];
    let mut seen = vec![false; setup.workers];
    let mut spilled = 0u64;
    let window = setup.in_flight * setup.nodes;
    let mut loads = vec![0u64; setup.nodes];
    let mut own = vec![0u32; setup.workers];
    let mut recent = std::collections::VecDeque::with_capacity(window + 1);
    let mut evicted = Vec::new();
    let mut standby_sent = vec![false; if setup.standby { setup.workers } else { 0 }];
    let mut rng = setup.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in 0..setup.warmup + setup.requests {
        let counted = i >= setup.warmup;
        let worker = zipf.sample(unit(&mut rng));
        let others = setup.lone_stays.then_some(u64::from(own[worker]));
        let (node, thread) = placement.pick(worker, (window > 0).then_some(&loads[..]), others);
        // A request placed while another of its Worker's is in flight.
        let first_busy = setup.standby
            && window > 0
            && own[worker] >= 1
            && !std::mem::replace(&mut standby_sent[worker], true);
        if window > 0 {
            loads[node] += 1;
            own[worker] += 1;
            recent.push_back((worker, node));
            if recent.len() > window
                && let Some((done_worker, done)) = recent.pop_front()
            {
                loads[done] -= 1;
                own[done_worker] -= 1;
            }
        }
        // Sent once this request is placed (and counted in the loads).
        let standby = first_busy
            .then(|| placement.spill_node(worker, &loads))
            .flatten();
        let slot = node * threads + thread as usize;
        let first_sighting = !std::mem::replace(&mut seen[worker], true);
        if counted {
            requests[slot] += 1;
            spilled += u64::from(!placement.is_first_choice(worker, node));
        }
        let id = &placement.ids[worker];
        let bytes = setup.isolate_bytes;
        for pools in &mut all {
            pools.serve(slot, id, bytes, (counted, first_sighting), &mut evicted);
            if let Some(spill) = standby {
                pools.standby(spill * threads + thread as usize, id, bytes, counted);
            }
        }
    }
    let node_requests: Vec<u64> = requests
        .chunks(threads)
        .map(|node| node.iter().sum())
        .collect();
    let rows = all
        .iter()
        .map(|pools| {
            let node_hits: Vec<u64> = pools.hits.chunks(threads).map(|n| n.iter().sum()).collect();
            Row {
                budget: pools.budget,
                requests: setup.requests,
                hits: pools.hits.iter().sum(),
                first_sightings: pools.first_sightings,
                standby_loads: pools.standby_loads,
                worst_node: worst(&node_hits, &node_requests),
                worst_thread: worst(&pools.hits, &requests),
            }
        })
        .collect();
    Part {
        rows,
        node_requests,
        thread_requests: requests,
        spilled,
    }
}

/// The lowest `hits / requests` among entries that had requests.
fn worst(hits: &[u64], requests: &[u64]) -> f64 {
    hits.iter()
        .zip(requests)
        .filter(|(_, r)| **r > 0)
        .map(|(h, r)| *h as f64 / *r as f64)
        .fold(1.0, f64::min)
}

/// The largest count over the mean.
fn busiest(counts: &[u64]) -> f64 {
    let mean = counts.iter().sum::<u64>() as f64 / counts.len().max(1) as f64;
    counts.iter().copied().max().unwrap_or(0) as f64 / mean.max(f64::MIN_POSITIVE)
}

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;

/// A warm share as a percentage with enough digits to tell 99.9 from 99.99.
pub fn percent(share: f64) -> String {
    if share >= 0.999 {
        format!("{:.3}%", share * 100.0)
    } else {
        format!("{:.1}%", share * 100.0)
    }
}

/// The Markdown table of `outcome`, with the same stream placed with every
/// request bounded (`before`) beside it when there is one.
pub fn table(setup: &Setup, outcome: &Outcome, before: Option<(&str, &Outcome)>) -> String {
    let mut columns = vec![
        ">node budget",
        ">warm isolates per node",
        ">warm",
        ">warm, first sightings aside",
        ">worst node",
        ">worst thread",
    ];
    if setup.standby {
        columns.push(">standby loads");
    }
    let compared = before.map(|(label, _)| format!(">{label}: warm, first sightings aside"));
    columns.extend(compared.as_deref());
    let mut table = crate::report::Table::new(&columns);
    for (i, row) in outcome.rows.iter().enumerate() {
        let per_thread = row.budget / u64::from(setup.threads) / setup.isolate_bytes.max(1) as u64;
        let per_thread = setup
            .isolates_per_thread
            .map_or(per_thread, |cap| per_thread.min(cap as u64));
        let mut cells = vec![
            format!("{} GiB", row.budget as f64 / GIB),
            (per_thread * u64::from(setup.threads)).to_string(),
            percent(row.warm()),
            percent(row.warm_seen()),
            percent(row.worst_node),
            percent(row.worst_thread),
        ];
        if setup.standby {
            cells.push(row.standby_loads.to_string());
        }
        if let Some((_, before)) = before {
            cells.push(
                before
                    .rows
                    .get(i)
                    .map_or("-".into(), |r| percent(r.warm_seen())),
            );
        }
        table.row(cells);
    }
    let mut md = table.render();
    let _ = writeln!(
        md,
        "\nBusiest node {:.2}× the mean requests, busiest thread {:.2}× the mean; {:.2}% of \
         requests left their Worker's first-choice node for the load bound.",
        outcome.node_imbalance,
        outcome.thread_imbalance,
        outcome.spilled * 100.0
    );
    if let Some((label, before)) = before {
        let _ = writeln!(
            md,
            "{}{}: busiest node {:.2}× the mean, {:.2}% of requests left their first choice.",
            label[..1].to_uppercase(),
            &label[1..],
            before.node_imbalance,
            before.spilled * 100.0
        );
    }
    md
}

/// What one warm isolate costs when no measurement is at hand: the idle
/// isolate's RSS in the `make bench` run of 2026-11-25 (section 5).
pub const IDLE_ISOLATE_MIB: f64 = 1.78;

/// The idle isolate's RSS that section 5 wrote into `results`, in MiB, or
/// [`IDLE_ISOLATE_MIB`].
pub fn measured_isolate_mib(results: Option<&std::path::Path>) -> f64 {
    results
        .and_then(|dir| std::fs::read_to_string(dir.join(crate::density::IDLE_ISOLATE_FILE)).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|bytes| *bytes > 0.0)
        .map_or(IDLE_ISOLATE_MIB, |bytes| bytes / MIB)
}

/// A one-line summary of the set-up.
pub fn describe(setup: &Setup) -> String {
    format!(
        "{} Workers, {} nodes × {} threads, Zipf s = {}, {} requests counted after {} \
         uncounted, {:.2} MiB per warm isolate{}, {} in flight per node, seed {}{}",
        setup.workers,
        setup.nodes,
        setup.threads,
        setup.zipf,
        setup.requests,
        setup.warmup,
        setup.isolate_bytes as f64 / MIB,
        setup
            .isolates_per_thread
            .map_or(String::new(), |n| format!(", at most {n} per thread")),
        setup.in_flight,
        setup.seed,
        if setup.standby {
            ", standby prewarms"
        } else {
            ""
        }
    )
}

pub mod section;

#[cfg(test)]
mod tests;
