//! Measures the placement schemes against each other: lookup cost, balance
//! under skewed traffic, and movement when membership changes.
//!
//! ```text
//! cargo run --release -p isolane-placement --example placement_bench
//! ```
//!
//! Prints Markdown tables (name sections to run only those: `-- lookup traffic`); `docs/placement.md` records a run and the choice
//! made from it. Everything but the lookup timings is deterministic.

use std::hint::black_box;
use std::time::Instant;

use isolane_placement::ring::{DEFAULT_VNODES_PER_THREAD, Ring};
use isolane_placement::{DEFAULT_LOAD_FACTOR, Node, NodeSet, rendezvous};

const NODE_COUNTS: [usize; 4] = [3, 16, 64, 256];
const WORKERS: usize = 10_000;
const REQUESTS: usize = 1_000_000;
const ZIPF_S: f64 = 1.1;
/// Concurrency per node in the in-flight model: each request stays in
/// flight for the next `INFLIGHT_PER_NODE × nodes` arrivals.
const INFLIGHT_PER_NODE: usize = 16;

fn main() {
    let workers: Vec<String> = (0..WORKERS)
        .map(|i| format!("tenant-{}/worker-{i}", i % 97))
        .collect();
    println!("workers: {WORKERS}, requests: {REQUESTS}, Zipf s = {ZIPF_S}");
    println!("ring: {DEFAULT_VNODES_PER_THREAD} virtual nodes per thread\n");
    // Optional arguments pick sections: lookup, balance, weights, traffic, movement.
    let only: Vec<String> = std::env::args().skip(1).collect();
    let run = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if run("lookup") {
        lookup_table(&workers);
    }
    if run("balance") {
        balance_table(&workers);
    }
    if run("weights") {
        weighted_table(&workers);
    }
    if run("traffic") {
        imbalance_table(&workers);
    }
    if run("movement") {
        movement_table(&workers);
    }
}

/// `n` nodes with 8 threads each.
fn uniform(n: usize) -> NodeSet {
    NodeSet::new(
        (0..n)
            .map(|i| Node::new(format!("node-{i:03}"), 8))
            .collect(),
    )
}

/// `n` nodes with 4, 8, 12 or 16 threads.
fn mixed(n: usize) -> NodeSet {
    let threads = |i: usize| 4 * (1 + (i % 4) as u32);
    NodeSet::new(
        (0..n)
            .map(|i| Node::new(format!("node-{i:03}"), threads(i)))
            .collect(),
    )
}

// === lookup cost ===

/// Mean nanoseconds per call of `f` over the workers, repeated for ~`budget` calls.
fn time_ns(workers: &[String], budget: usize, f: impl Fn(&str) -> usize) -> f64 {
    let rounds = (budget / workers.len()).max(1);
    let start = Instant::now();
    let mut sink = 0usize;
    for _ in 0..rounds {
        for w in workers {
            sink = sink.wrapping_add(f(black_box(w)));
        }
    }
    black_box(sink);
    start.elapsed().as_nanos() as f64 / (rounds * workers.len()) as f64
}

fn lookup_table(workers: &[String]) {
    println!("## Lookup cost (ns per lookup, mixed 4–16 threads per node)\n");
    println!(
        "| nodes | HRW weighted primary | HRW weighted full order | HRW unweighted primary | ring primary | ring full order |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for n in NODE_COUNTS {
        let set = mixed(n);
        let ring = Ring::new(&set, DEFAULT_VNODES_PER_THREAD);
        let budget = 40_000_000 / n.max(16);
        let first = |v: Vec<usize>| v.first().copied().unwrap_or(0);
        let row = [
            time_ns(workers, budget, |w| set.primary(w).unwrap_or(0)),
            time_ns(workers, budget, |w| first(set.candidates(w))),
            time_ns(workers, budget, |w| {
                rendezvous::unweighted_primary(&set, w).unwrap_or(0)
            }),
            time_ns(workers, budget, |w| ring.primary(w).unwrap_or(0)),
            time_ns(workers, budget, |w| first(ring.candidates(w))),
        ];
        println!("| {n} | {} |", cells(&row, 0));
    }
    println!();
}

fn cells(values: &[f64], decimals: usize) -> String {
    let v: Vec<String> = values.iter().map(|x| format!("{x:.decimals$}")).collect();
    v.join(" | ")
}

// === static balance ===

/// Workers per node divided by each node's fair share (by threads); the max.
fn worst_share(set: &NodeSet, workers: &[String], pick: impl Fn(&str) -> usize) -> f64 {
    let mut counts = vec![0usize; set.len()];
    for w in workers {
        counts[pick(w)] += 1;
    }
    let total: f64 = set.nodes().iter().map(|n| f64::from(n.threads)).sum();
    set.nodes()
        .iter()
        .zip(&counts)
        .map(|(n, &c)| c as f64 / (workers.len() as f64 * f64::from(n.threads) / total))
        .fold(0.0, f64::max)
}

fn balance_table(workers: &[String]) {
    println!("## Worker balance, uniform 8 threads (busiest node's workers / mean)\n");
    println!("| nodes | HRW weighted | HRW unweighted | ring |");
    println!("| ---: | ---: | ---: | ---: |");
    for n in NODE_COUNTS {
        let set = uniform(n);
        let ring = Ring::new(&set, DEFAULT_VNODES_PER_THREAD);
        let row = [
            worst_share(&set, workers, |w| set.primary(w).unwrap_or(0)),
            worst_share(&set, workers, |w| {
                rendezvous::unweighted_primary(&set, w).unwrap_or(0)
            }),
            worst_share(&set, workers, |w| ring.primary(w).unwrap_or(0)),
        ];
        println!("| {n} | {} |", cells(&row, 2));
    }
    println!();
}

fn weighted_table(workers: &[String]) {
    println!(
        "## Weighting, mixed 4–16 threads (max over nodes of workers / thread-proportional share)\n"
    );
    println!("| nodes | HRW weighted | HRW unweighted | ring |");
    println!("| ---: | ---: | ---: | ---: |");
    for n in NODE_COUNTS {
        let set = mixed(n);
        let ring = Ring::new(&set, DEFAULT_VNODES_PER_THREAD);
        let row = [
            worst_share(&set, workers, |w| set.primary(w).unwrap_or(0)),
            worst_share(&set, workers, |w| {
                rendezvous::unweighted_primary(&set, w).unwrap_or(0)
            }),
            worst_share(&set, workers, |w| ring.primary(w).unwrap_or(0)),
        ];
        println!("| {n} | {} |", cells(&row, 2));
    }
    println!();
}

// === skewed traffic ===

/// A deterministic stream of worker indices, Zipf-distributed over ranks.
struct Zipf {
    cdf: Vec<f64>,
    state: u64,
}

impl Zipf {
    fn new(n: usize, s: f64, seed: u64) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|k| {
                acc += (k as f64).powf(-s);
                acc
            })
            .collect();
        cdf.iter_mut().for_each(|c| *c /= acc);
        Self { cdf, state: seed }
    }

    fn next(&mut self) -> usize {
        // splitmix64
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

fn busiest_over_mean(served: &[u64]) -> f64 {
    let mean = served.iter().sum::<u64>() as f64 / served.len() as f64;
    served.iter().copied().max().unwrap_or(0) as f64 / mean
}

/// Requests served per node when each request goes to its worker's fixed node.
fn fixed(n: usize, owner: &[usize]) -> f64 {
    let mut zipf = Zipf::new(WORKERS, ZIPF_S, 7);
    let mut served = vec![0u64; n];
    for _ in 0..REQUESTS {
        served[owner[zipf.next()]] += 1;
    }
    busiest_over_mean(&served)
}

/// How a placement run applies the bound.
#[derive(Clone, Copy)]
enum Rule {
    /// To cumulative load, every request alike (the paper's model).
    Cumulative,
    /// To in-flight requests, every request alike.
    InFlight,
    /// To in-flight requests, a lone request (its worker has no other in
    /// flight) kept on its first choice up to `LONE_HEADROOM` × the bound
    /// (`NodeSet::choose_for`, as the router runs it).
    LoneStays,
}

/// Bounded load over the Zipf stream under `rule`, in-flight requests held
/// for the next `window` arrivals: the busiest node's requests / mean, and
/// the spill rate (the fraction of requests not served by their worker's
/// first-choice node, each of which may cost a cold isolate).
fn bounded(
    set: &NodeSet,
    workers: &[String],
    orders: &[Vec<usize>],
    rule: Rule,
    window: usize,
) -> (f64, f64) {
    let mut zipf = Zipf::new(WORKERS, ZIPF_S, 7);
    let mut served = vec![0u64; set.len()];
    let mut inflight = vec![0u64; set.len()];
    let mut own = vec![0u64; workers.len()];
    let mut recent = std::collections::VecDeque::new();
    let mut spilled = 0u64;
    for _ in 0..REQUESTS {
        let w = zipf.next();
        let order = &orders[w];
        let i = match rule {
            Rule::Cumulative => set.choose_bounded_among(order, &served, DEFAULT_LOAD_FACTOR),
            Rule::InFlight => set.choose_bounded_among(order, &inflight, DEFAULT_LOAD_FACTOR),
            Rule::LoneStays => set.choose_for(&workers[w], own[w], &inflight, DEFAULT_LOAD_FACTOR),
        }
        .unwrap_or(0);
        served[i] += 1;
        if order.first() != Some(&i) {
            spilled += 1;
        }
        if !matches!(rule, Rule::Cumulative) {
            // The request stays in flight for the next `window` arrivals,
            // as the router holds a node's count until the response ends.
            inflight[i] += 1;
            own[w] += 1;
            recent.push_back((w, i));
            if recent.len() > window
                && let Some((done_worker, done)) = recent.pop_front()
            {
                inflight[done] -= 1;
                own[done_worker] -= 1;
            }
        }
    }
    (busiest_over_mean(&served), spilled as f64 / REQUESTS as f64)
}

fn imbalance_table(workers: &[String]) {
    println!("## Traffic imbalance, uniform 8 threads (busiest node's requests / mean)\n");
    println!(
        "| nodes | HRW | ring | HRW + bounded load c=1.25 (cumulative) | HRW + bounded load c=1.25 (in flight, {INFLIGHT_PER_NODE}/node) | the same, lone requests kept home to 2c |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut spills = Vec::new();
    for n in NODE_COUNTS {
        let set = uniform(n);
        let ring = Ring::new(&set, DEFAULT_VNODES_PER_THREAD);
        let hrw: Vec<usize> = workers
            .iter()
            .map(|w| set.primary(w).unwrap_or(0))
            .collect();
        let rng: Vec<usize> = workers
            .iter()
            .map(|w| ring.primary(w).unwrap_or(0))
            .collect();
        let orders: Vec<Vec<usize>> = workers.iter().map(|w| set.candidates(w)).collect();
        let window = INFLIGHT_PER_NODE * n;
        let [cumulative, in_flight, lone] = [Rule::Cumulative, Rule::InFlight, Rule::LoneStays]
            .map(|rule| bounded(&set, workers, &orders, rule, window));
        let row = [
            fixed(n, &hrw),
            fixed(n, &rng),
            cumulative.0,
            in_flight.0,
            lone.0,
        ];
        println!("| {n} | {} |", cells(&row, 2));
        spills.push((n, [cumulative.1, in_flight.1, lone.1]));
    }
    println!();
    // A table of its own: bench/src/placement.rs reads the imbalance
    // table's last column, up to the next heading.
    println!(
        "## Spill under bounded load, uniform 8 threads (requests not served by their worker's first-choice node)\n"
    );
    println!(
        "| nodes | HRW + bounded load c=1.25 (cumulative) | HRW + bounded load c=1.25 (in flight, {INFLIGHT_PER_NODE}/node) | the same, lone requests kept home to 2c |"
    );
    println!("| ---: | ---: | ---: | ---: |");
    for (n, row) in spills {
        println!("| {n} | {} |", cells(&row, 4));
    }
    println!();
}

// === movement ===

fn moved(before: &[String], after: &[String]) -> f64 {
    let changed = before.iter().zip(after).filter(|(a, b)| a != b).count();
    changed as f64 / before.len() as f64
}

fn owners(set: &NodeSet, workers: &[String], ring: bool) -> Vec<String> {
    let r = Ring::new(set, DEFAULT_VNODES_PER_THREAD);
    workers
        .iter()
        .map(|w| {
            let i = if ring { r.primary(w) } else { set.primary(w) };
            set.nodes()[i.unwrap_or(0)].name.clone()
        })
        .collect()
}

fn movement_table(workers: &[String]) {
    println!("## Movement, uniform 8 threads (fraction of workers whose node changes)\n");
    println!("| nodes | join: ideal 1/(N+1) | HRW | ring | leave: ideal 1/N | HRW | ring |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for n in NODE_COUNTS {
        let set = uniform(n);
        let mut grown = set.nodes().to_vec();
        grown.push(Node::new("node-new", 8));
        let grown = NodeSet::new(grown);
        let shrunk = NodeSet::new(set.nodes().iter().skip(1).cloned().collect());
        let mut row = vec![1.0 / (n + 1) as f64];
        for ring in [false, true] {
            row.push(moved(
                &owners(&set, workers, ring),
                &owners(&grown, workers, ring),
            ));
        }
        row.push(1.0 / n as f64);
        for ring in [false, true] {
            row.push(moved(
                &owners(&set, workers, ring),
                &owners(&shrunk, workers, ring),
            ));
        }
        println!("| {n} | {} |", cells(&row, 4));
    }
    println!();
}
