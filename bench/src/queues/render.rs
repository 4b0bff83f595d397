//! Section 19's text, tables and targets.

use std::time::Duration;

use super::{Args, Measured, throughput};
use crate::report::{Table, Target, build_kind, verdict};
use crate::stats::{fmt_rate, fmt_us, median, percentile, us};

/// Cloudflare's per-queue limit, the goal of the send → ack rows.
const GOAL_RATE: f64 = 5_000.0;

/// A percentile of whole-millisecond samples, in µs.
fn ms(samples: &[f64], q: f64) -> f64 {
    let durations: Vec<Duration> = samples
        .iter()
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        .collect();
    us(percentile(&durations, q))
}

fn load_of(messages: usize) -> throughput::Load {
    throughput::Load {
        messages,
        batch: 100,
        senders: 0,
    }
}

fn median_rate(runs: &[throughput::Run], messages: usize) -> f64 {
    let load = load_of(messages);
    median(&runs.iter().map(|r| r.rate(&load)).collect::<Vec<_>>())
}

/// The best median send → ack rate over the concurrencies, with its
/// concurrency.
fn best_rate(measured: &Measured, messages: usize) -> (u32, f64) {
    measured
        .runs
        .iter()
        .map(|(c, runs)| (*c, median_rate(runs, messages)))
        .fold(
            (0, 0.0),
            |best, row| if row.1 > best.1 { row } else { best },
        )
}

pub fn render(args: &Args, ours: &Measured, theirs: Option<&Measured>) -> String {
    let build = build_kind(&args.bin_dir);
    let mut markdown = format!(
        "## 19. Queues and Workflows (issue 57)\n\n\
         A producer Worker and a consumer Worker (one script, `bench/src/queues/script.rs`) \
         applied to a local kube-apiserver and served by one `isolane-node` behind the \
         `isolane-router` ({build} binaries from `{}`), the node's store a PostgreSQL on the \
         same host (isolane-testenv){}. {} rounds{}. *Send → ack*: {} numbered messages pushed \
         through the router by {} connections at once, each request one `sendBatch` of 100 \
         JSON bodies (answered once durable), into a queue consumed with `maxBatchSize: \
         100`, `maxBatchTimeoutMs: 0` and the `maxConcurrency` of its row; the consumer's \
         `queue()` reports each batch's numbers to a Durable Object (one `fetch`, kept in \
         memory) and acknowledges by returning; the clock runs from the first send to the \
         tally holding every number (polled every 10 ms): every message accounted for, \
         duplicates counted. *Send → consumer start*: {} messages a round, one at a time on \
         the otherwise idle system, queue `ping` with `maxBatchTimeoutMs: 0`; measured by the \
         client (the `send` request's start to the consumer's report of that message to its \
         tally, answered to a request waiting on the tally: an upper bound, two hops more \
         than the start itself) and by the consumer (its handler's `Date.now()` less the \
         message's `timestamp`: whole milliseconds). *Workflow step*: {} instances a round \
         of {} empty `step.do`s (`async () => null`), each step timed by the instance \
         (`Date.now()` after each step, whole milliseconds: the clock moves at each step's \
         I/O), and the mean per step from the client (create to `complete` seen, status \
         polled every 20 ms, over {}).\n\n",
        args.bin_dir.display(),
        if theirs.is_some() {
            "; beside it the same script under `wrangler dev` (Node.js 22, the npm wrangler \
             of `compat/`: workerd with Miniflare's local queue broker and workflows engine, \
             one Worker holding every binding, no hop)"
        } else {
            ""
        },
        args.rounds,
        if theirs.is_some() {
            ", the sides in turn"
        } else {
            ""
        },
        args.messages,
        args.senders,
        args.pings,
        args.instances,
        args.steps,
        args.steps,
    );
    markdown.push_str(&rate_table(args, ours, theirs));
    markdown.push('\n');
    markdown.push_str(&latency_table(ours, theirs));
    markdown
}

fn rate_table(args: &Args, ours: &Measured, theirs: Option<&Measured>) -> String {
    let mut table = Table::new(&[
        "queue",
        ">send → ack (median)",
        ">slowest round",
        ">sends stored alone",
        ">deliveries ÷ messages",
        ">`wrangler dev`",
        "goal",
        "result",
    ]);
    let load = load_of(args.messages);
    for (i, (concurrency, runs)) in ours.runs.iter().enumerate() {
        let rates: Vec<f64> = runs.iter().map(|r| r.rate(&load)).collect();
        let sends: Vec<f64> = runs.iter().map(|r| r.send_rate(&load)).collect();
        let deliveries: u64 = runs.iter().map(|r| r.deliveries).sum();
        let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let rate = median(&rates);
        let peer = theirs.and_then(|m| m.runs.get(i)).map_or_else(
            || "—".to_owned(),
            |(_, runs)| format!("{}/s", fmt_rate(median_rate(runs, args.messages))),
        );
        table.row(vec![
            format!("`maxConcurrency: {concurrency}`"),
            format!("{}/s", fmt_rate(rate)),
            format!("{}/s", fmt_rate(slowest)),
            format!("{}/s", fmt_rate(median(&sends))),
            format!(
                "{:.3}",
                deliveries as f64 / (args.messages * runs.len().max(1)) as f64
            ),
            peer,
            "≥ 5,000/s".to_owned(),
            verdict(rate >= GOAL_RATE),
        ]);
    }
    table.render()
}

/// A latency row's samples of one side: (p50, p99) in µs.
type Quantiles = fn(&Measured) -> (f64, f64);

fn latency_table(ours: &Measured, theirs: Option<&Measured>) -> String {
    let mut table = Table::new(&[
        "what",
        ">p50",
        ">p99",
        ">`wrangler dev` p50",
        ">p99",
        "goal",
        "result",
    ]);
    let rows: [(&str, Quantiles, &str, Option<f64>); 5] = [
        (
            "send → consumer start, client-measured (to the consumer's report)",
            |m| {
                let p = |q| us(percentile(&m.pings.client, q));
                (p(0.5), p(0.99))
            },
            "< 20 ms p99",
            Some(20_000.0),
        ),
        (
            "send → consumer start, the consumer's own (whole ms)",
            |m| {
                (
                    ms(&m.pings.in_worker_ms, 0.5),
                    ms(&m.pings.in_worker_ms, 0.99),
                )
            },
            "",
            None,
        ),
        (
            "workflow: an empty `step.do`, timed by the instance (whole ms)",
            |m| (ms(&m.steps.step_ms, 0.5), ms(&m.steps.step_ms, 0.99)),
            "< 5 ms p99",
            Some(5_000.0),
        ),
        (
            "workflow: mean per step, the instance's first to last (median, slowest instance)",
            |m| {
                let slowest = m.steps.mean_ms.iter().copied().fold(0.0, f64::max);
                (median(&m.steps.mean_ms) * 1000.0, slowest * 1000.0)
            },
            "",
            None,
        ),
        (
            "workflow: mean per step, the client's create → complete seen (median, slowest)",
            |m| {
                let p = |q| us(percentile(&m.steps.client_mean, q));
                (p(0.5), p(1.0))
            },
            "",
            None,
        ),
    ];
    for (what, quantiles, goal, bound) in rows {
        let (p50, p99) = quantiles(ours);
        let peer = theirs.map(quantiles);
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), fmt_us);
        table.row(vec![
            what.to_owned(),
            fmt_us(p50),
            fmt_us(p99),
            cell(peer.map(|p| p.0)),
            cell(peer.map(|p| p.1)),
            goal.to_owned(),
            bound.map_or_else(String::new, |b| verdict(p99 < b)),
        ]);
    }
    table.render()
}

pub fn targets(ours: &Measured, messages: usize) -> Vec<Target> {
    let (concurrency, rate) = best_rate(ours, messages);
    let ping = us(percentile(&ours.pings.client, 0.99));
    let step = ms(&ours.steps.step_ms, 0.99);
    vec![
        Target::new(
            "messages per second through one queue, send to ack, PostgreSQL on the same host: ≥ 5,000/s (issue 57)",
            format!("{}/s (`maxConcurrency: {concurrency}`)", fmt_rate(rate)),
            rate >= GOAL_RATE,
        ),
        Target::new(
            "send → consumer start, `maxBatchTimeoutMs: 0`, idle system: < 20 ms p99 (issue 57)",
            fmt_us(ping),
            ping < 20_000.0,
        ),
        Target::new(
            "workflow step overhead (an empty `step.do`): < 5 ms p99 (issue 57)",
            fmt_us(step),
            step < 5_000.0,
        ),
    ]
}
