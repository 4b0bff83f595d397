//! The fleet simulation's section of `docs/benchmarks.md`: the budget sweep,
//! and the density comparison's set-up simulated beside its measured figure.

use std::fmt::Write as _;
use std::time::Instant;

use super::{Setup, percent, simulate, table};
use crate::report::{Section, Target};

/// Cloudflare's published warm-start rate.
const TARGET: f64 = 0.9999;

/// What the section runs: the sweep, the measured density set-up it is
/// checked against, and an isolate size to compare budgets at.
pub struct Plan {
    pub fleet: Setup,
    /// The density comparison's request count (its measured run starts cold).
    pub density_requests: u64,
    /// The goal for an idle isolate, MiB.
    pub goal_mib: f64,
    /// The command line that reproduces the sweep.
    pub command: String,
}

/// The density comparison's set-up: 10,000 Workers, one node of 2 threads,
/// 100 warm isolates per thread (the engine's default; its 1 GiB heap
/// budget per thread binds later), Zipf(1.1).
fn density(plan: &Plan, requests: u64, warmup: u64) -> Setup {
    Setup {
        workers: 10_000,
        nodes: 1,
        threads: 2,
        requests,
        warmup,
        budgets: vec![2 << 30],
        isolates_per_thread: Some(100),
        in_flight: 0,
        ..plan.fleet.clone()
    }
}

pub fn run(plan: &Plan) -> Section {
    let started = Instant::now();
    let outcome = simulate(&plan.fleet);
    let took = started.elapsed().as_secs_f64();
    // The same stream without the router's standby prewarms.
    let before = (plan.fleet.standby && plan.fleet.in_flight > 0).then(|| {
        simulate(&Setup {
            standby: false,
            ..plan.fleet.clone()
        })
    });
    eprintln!("fleet: simulated in {took:.1} s");
    let as_measured = simulate(&density(plan, plan.density_requests, 0));
    let steady = simulate(&density(plan, 10_000_000, 1_000_000));
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 10. Fleet simulation\n\n\
         `{}` ({took:.0} s here). {}. Each request goes where the router sends it \
         (`Fleet::pick`'s calls: weighted rendezvous with bounded load c = 1.25 over the \
         in-flight counts, a lone request, one whose Worker has no other in flight, kept on \
         its first choice up to {headroom} × that bound, jump hash for the thread) into per-thread warm pools run by the \
         engine's own eviction policy (`isolane_engine::warm_set`), each thread holding its \
         share of the node's budget; an isolate costs its measured idle RSS. \"Warm\" counts \
         every counted request; \"first sightings aside\" also counts as warm the requests \
         that were their Worker's first in the whole stream (cold anywhere, but a fleet \
         that has run for long has seen every Worker before). The first time a Worker has \
         a request placed while another is in flight, the router's standby prewarm loads it \
         on the node its spill would reach if that thread's pool has room without evicting \
         (\"standby loads\": how many did, in the counted requests; each is one compile). \
         Deterministic for the seed.\n",
        plan.command,
        super::describe(&plan.fleet),
        headroom = isolane_placement::LONE_HEADROOM,
    );
    let compared = before.as_ref().map(|b| ("without standby prewarms", b));
    md.push_str(&table(&plan.fleet, &outcome, compared));
    md.push('\n');
    let reached = outcome.rows.iter().find(|r| r.warm_seen() >= TARGET);
    let scale = plan.goal_mib * f64::from(1 << 20) / plan.fleet.isolate_bytes as f64;
    let verdict = match reached {
        Some(row) => format!(
            "{} warm (first sightings aside) first at {} GiB per node; with {:.1} MiB \
             isolates the same isolates fit in {:.0} GiB",
            percent(row.warm_seen()),
            row.budget >> 30,
            plan.goal_mib,
            row.budget as f64 * scale / f64::from(1 << 30)
        ),
        None => format!(
            "not reached by {} GiB per node ({} warm there)",
            outcome.rows.last().map_or(0, |r| r.budget >> 30),
            outcome
                .rows
                .last()
                .map_or("-".into(), |r| percent(r.warm_seen()))
        ),
    };
    let _ = writeln!(
        md,
        "A budget's warm ratio depends only on how many isolates it holds, so with \
         {:.1} MiB isolates (the density goal) each row's ratio is reached at {:.0}% of its \
         budget. {}: {verdict}.\n",
        plan.goal_mib,
        scale * 100.0,
        percent(TARGET)
    );
    let _ = writeln!(
        md,
        "**Checked against the density comparison.** Its set-up (10,000 Workers, 2 threads, \
         100 warm isolates per thread, Zipf 1.1) simulated: {} warm over its {} requests \
         from cold (first sightings {} of them), {} in the steady state (10 M requests after \
         1 M uncounted). Section 5's Zipf row is the same set-up run through the engine, \
         its hit ratio counted over its own requests from cold; the simulation does not \
         model that run's closed loop of 16 clients.\n",
        percent(as_measured.rows[0].warm()),
        plan.density_requests,
        percent(
            as_measured.rows[0].first_sightings as f64 / as_measured.rows[0].requests.max(1) as f64
        ),
        percent(steady.rows[0].warm()),
    );
    Section {
        markdown: md,
        targets: vec![Target::new(
            "fleet simulation: 99.99% warm (Cloudflare's published rate), 1 M Workers on 16 nodes",
            verdict,
            reached.is_some(),
        )],
    }
}
