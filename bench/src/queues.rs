//! Section 19, Queues and Workflows (issue 57), through the router and a
//! node whose store is a PostgreSQL on the same host: a producer Worker
//! and a consumer Worker of namespace `bench` ([`script::SCRIPT`], both):
//! - *send → ack*: numbered messages pushed through the router into a
//!   queue by many connections (`sendBatch`es of 100), timed until the
//!   consumer's tally object has seen every number ([`throughput`]); one
//!   queue per `maxConcurrency` measured (`jobs-c<N>`, `maxBatchSize: 100`,
//!   `maxBatchTimeoutMs: 0`);
//! - *send → consumer start*: one message at a time on the idle system,
//!   `maxBatchTimeoutMs: 0` ([`latency`]);
//! - *workflow step overhead*: instances of N empty `step.do`s, timed by
//!   the instance itself ([`workflow`]).

mod latency;
mod script;
mod throughput;
mod workflow;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_storage::POSTGRES_URL_ENV;
use isolane_testenv::Postgres;
use isolane_testenv::workers::{apply, inline_worker, wait_ready};
use isolane_worker::{Binding, QueueConsumer};

use crate::cluster::{self, Cluster, ClusterBinaries, NAMESPACE};
use crate::report::{Section, Table, Target, build_kind, verdict};
use crate::servers::Server;
use crate::stats::{fmt_rate, fmt_us, median, percentile, us};

const PRODUCER_HOST: &str = "queues.bench.test";
const CONSUMER_HOST: &str = "tally.queues.bench.test";
/// Cloudflare's per-queue limit, the goal of the send → ack row.
const GOAL_RATE: f64 = 5_000.0;
/// Pings sent before the measured ones (the queue's loop starting).
const WARM_PINGS: usize = 5;

/// `isolane-bench queues`' own flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Messages per send → ack run.
    #[arg(long, default_value_t = 20_000)]
    messages: usize,
    /// Connections sending at once.
    #[arg(long, default_value_t = 16)]
    senders: usize,
    /// The consumers' `maxConcurrency`s measured, one queue each.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    concurrency: Vec<u32>,
    /// Pings (send → consumer start) per round.
    #[arg(long, default_value_t = 100)]
    pings: usize,
    /// Workflow instances per round.
    #[arg(long, default_value_t = 5)]
    instances: usize,
    /// Empty steps per instance.
    #[arg(long, default_value_t = 100)]
    steps: usize,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// What the section measured, pooled over rounds.
#[derive(Default)]
struct Measured {
    /// Per concurrency, each round's run.
    runs: Vec<(u32, Vec<throughput::Run>)>,
    pings: latency::Pings,
    steps: workflow::Steps,
}

/// The section as `args` ask, processes' logs in `work`.
pub async fn run(args: &Args, work: &Path) -> anyhow::Result<Section> {
    anyhow::ensure!(
        args.messages > 0
            && args.senders > 0
            && args.pings > 0
            && args.instances > 0
            && args.rounds > 0
            && (1..=1000).contains(&args.steps)
            && !args.concurrency.is_empty()
            && args.concurrency.iter().all(|c| (1..=250).contains(c)),
        "--messages, --senders, --pings, --instances and --rounds must be positive, \
         --steps 1 to 1000, --concurrency 1 to 250 each"
    );
    std::fs::create_dir_all(work)?;
    let bins = ClusterBinaries::in_dir(&args.bin_dir)?;
    let database = Postgres::start().context("starting PostgreSQL (hack/install-deps.sh)")?;
    let (cluster, consumer) = start(&bins, work, &database.connection_string(), args).await?;
    let measured = measure(&cluster.router, &consumer, args).await?;
    let markdown = render(args, &measured);
    let targets = targets(&measured, args.messages);
    drop(cluster);
    drop(database);
    Ok(Section { markdown, targets })
}

async fn measure(producer: &Server, consumer: &Server, args: &Args) -> anyhow::Result<Measured> {
    let mut measured = Measured::default();
    latency::run(producer, consumer, 0, WARM_PINGS, &mut latency::Pings::default()).await?;
    let load = throughput::Load {
        messages: args.messages,
        batch: 100,
        senders: args.senders,
    };
    measured.runs = args.concurrency.iter().map(|c| (*c, Vec::new())).collect();
    for round in 0..args.rounds {
        let from = (WARM_PINGS + round * args.pings) as u64;
        latency::run(producer, consumer, from, args.pings, &mut measured.pings).await?;
        workflow::run(producer, args.instances, args.steps, &mut measured.steps).await?;
        for (concurrency, runs) in &mut measured.runs {
            let (binding, name) = queue_of(*concurrency);
            let queue = throughput::Queue {
                binding: &binding,
                name: &name,
            };
            let from = (round * args.messages) as u64;
            let deadline = Duration::from_secs(600);
            runs.push(throughput::run(producer, consumer, &queue, from, &load, deadline).await?);
        }
    }
    Ok(measured)
}

/// The producer's binding and the queue measured with `maxConcurrency`
/// `concurrency`.
fn queue_of(concurrency: u32) -> (String, String) {
    (
        format!("JOBS_C{concurrency}"),
        format!("jobs-c{concurrency}"),
    )
}

/// The control plane, operator, node (its store the PostgreSQL at
/// `postgres`) and router serving the producer; the consumer applied
/// after it, served on its own host (its tally's paths).
async fn start(
    bins: &ClusterBinaries,
    work: &Path,
    postgres: &str,
    args: &Args,
) -> anyhow::Result<(Cluster, Server)> {
    let env: [(&str, &OsStr); 1] = [(POSTGRES_URL_ENV, OsStr::new(postgres))];
    let mut producer = inline_worker("producer", script::SCRIPT, &[PRODUCER_HOST]);
    producer.spec.bindings = vec![
        Binding::queue("PING", latency::QUEUE),
        Binding::workflow("WF", None, "Steps", None),
    ];
    let mut consumer = inline_worker("consumer", script::SCRIPT, &[CONSUMER_HOST]);
    consumer.spec.bindings = vec![Binding::durable_object("TALLY", "Tally")];
    consumer.spec.queue_consumers = vec![QueueConsumer {
        max_batch_timeout_ms: Some(0),
        ..QueueConsumer::new(latency::QUEUE)
    }];
    for concurrency in &args.concurrency {
        let (binding, name) = queue_of(*concurrency);
        producer.spec.bindings.push(Binding::queue(binding, &name));
        consumer.spec.queue_consumers.push(QueueConsumer {
            max_batch_size: Some(100),
            max_batch_timeout_ms: Some(0),
            max_concurrency: Some(*concurrency),
            ..QueueConsumer::new(name)
        });
    }
    let flags = cluster::Flags::default();
    let cluster =
        cluster::start_worker(bins, work, &producer, PRODUCER_HOST, &flags, &env).await?;
    let client = cluster.control_plane.client();
    apply(&client, NAMESPACE, &consumer).await;
    wait_ready(&client, NAMESPACE, "consumer", Duration::from_secs(60)).await;
    let server = Server {
        name: "router → node (consumer)",
        addr: cluster.router.addr,
        host: Some(CONSUMER_HOST.to_owned()),
        process: None,
        helpers: Vec::new(),
    };
    server.wait_ok(Duration::from_secs(60)).await?;
    Ok((cluster, server))
}

fn ms(samples: &[f64], q: f64) -> f64 {
    let durations: Vec<Duration> = samples
        .iter()
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        .collect();
    us(percentile(&durations, q))
}

/// The best median send → ack rate over the concurrencies, with its
/// concurrency.
fn best_rate(measured: &Measured, messages: usize) -> (u32, f64) {
    measured
        .runs
        .iter()
        .map(|(c, runs)| (*c, median_rate(runs, messages)))
        .fold((0, 0.0), |best, row| if row.1 > best.1 { row } else { best })
}

fn median_rate(runs: &[throughput::Run], messages: usize) -> f64 {
    let load = load_of(messages);
    median(&runs.iter().map(|r| r.rate(&load)).collect::<Vec<_>>())
}

fn load_of(messages: usize) -> throughput::Load {
    throughput::Load {
        messages,
        batch: 100,
        senders: 0,
    }
}

fn render(args: &Args, measured: &Measured) -> String {
    let build = build_kind(&args.bin_dir);
    let mut markdown = format!(
        "## 19. Queues and Workflows (issue 57)\n\n\
         A producer Worker and a consumer Worker (one script, [bench/src/queues/script.rs]) \
         applied to a local kube-apiserver and served by one `isolane-node` behind the \
         `isolane-router` ({build} binaries from `{}`), the node's store a PostgreSQL on the \
         same host (isolane-testenv). {} rounds. *Send → ack*: {} numbered messages pushed \
         through the router by {} connections at once, each request one `sendBatch` of 100 \
         JSON bodies (answered once durable), into a queue consumed with `maxBatchSize: \
         100`, `maxBatchTimeoutMs: 0` and the `maxConcurrency` of its row; the consumer's \
         `queue()` reports each batch's numbers to a Durable Object (one `fetch`, in \
         memory) and acknowledges by returning; the clock runs from the first send to the \
         tally holding every number (polled every 10 ms): every message accounted for, \
         duplicates counted. *Send → consumer start*: {} messages a round, one at a time on \
         the otherwise idle node, queue `ping` with `maxBatchTimeoutMs: 0`; measured by the \
         client (the `send` request's start to the consumer's report of that message to its \
         tally, answered to a request waiting on the tally: an upper bound, with two hops \
         more than the start itself) and by the consumer (its handler's `Date.now()` less \
         the message's `timestamp`, whole milliseconds of the node's clock). *Workflow \
         step*: {} instances a round of {} empty `step.do`s (`async () => null`), each step \
         timed by the instance (`Date.now()` after each step, whole milliseconds: the \
         engine's clock moves at each step's I/O), and the mean per step from the client \
         (create to `complete` seen, status polled every 20 ms, over {}).\n\n",
        args.bin_dir.display(),
        args.rounds,
        args.messages,
        args.senders,
        args.pings,
        args.instances,
        args.steps,
        args.steps,
    );
    markdown.push_str(&rate_table(args, measured));
    markdown.push('\n');
    markdown.push_str(&latency_table(measured));
    markdown
}

fn rate_table(args: &Args, measured: &Measured) -> String {
    let mut table = Table::new(&[
        "queue",
        ">send → ack (median)",
        ">slowest round",
        ">sends stored alone",
        ">deliveries ÷ messages",
        "goal",
        "result",
    ]);
    let load = load_of(args.messages);
    for (concurrency, runs) in &measured.runs {
        let rates: Vec<f64> = runs.iter().map(|r| r.rate(&load)).collect();
        let sends: Vec<f64> = runs.iter().map(|r| r.send_rate(&load)).collect();
        let deliveries: u64 = runs.iter().map(|r| r.deliveries).sum();
        let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let rate = median(&rates);
        table.row(vec![
            format!("`maxConcurrency: {concurrency}`"),
            format!("{}/s", fmt_rate(rate)),
            format!("{}/s", fmt_rate(slowest)),
            format!("{}/s", fmt_rate(median(&sends))),
            format!(
                "{:.3}",
                deliveries as f64 / (args.messages * runs.len()) as f64
            ),
            "≥ 5,000/s".to_owned(),
            verdict(rate >= GOAL_RATE),
        ]);
    }
    table.render()
}

fn latency_table(measured: &Measured) -> String {
    let mut table = Table::new(&["what", ">p50", ">p99", "goal", "result"]);
    let pings = &measured.pings;
    let client_p99 = us(percentile(&pings.client, 0.99));
    table.row(vec![
        "send → consumer start, client-measured (to the consumer's report)".to_owned(),
        fmt_us(us(percentile(&pings.client, 0.5))),
        fmt_us(client_p99),
        "< 20 ms p99".to_owned(),
        verdict(client_p99 < 20_000.0),
    ]);
    table.row(vec![
        "send → consumer start, the consumer's own (whole ms)".to_owned(),
        fmt_us(ms(&pings.in_worker_ms, 0.5)),
        fmt_us(ms(&pings.in_worker_ms, 0.99)),
        String::new(),
        String::new(),
    ]);
    let steps = &measured.steps;
    let step_p99 = ms(&steps.step_ms, 0.99);
    table.row(vec![
        "workflow: an empty `step.do`, timed by the instance (whole ms)".to_owned(),
        fmt_us(ms(&steps.step_ms, 0.5)),
        fmt_us(step_p99),
        "< 5 ms p99".to_owned(),
        verdict(step_p99 < 5_000.0),
    ]);
    table.row(vec![
        "workflow: mean per step, the instance's first to last timestamp".to_owned(),
        fmt_us(median(&steps.mean_ms) * 1000.0),
        fmt_us(steps.mean_ms.iter().copied().fold(0.0, f64::max) * 1000.0),
        String::new(),
        String::new(),
    ]);
    table.row(vec![
        "workflow: mean per step, client's create → complete seen".to_owned(),
        fmt_us(us(percentile(&steps.client_mean, 0.5))),
        fmt_us(us(percentile(&steps.client_mean, 1.0))),
        String::new(),
        String::new(),
    ]);
    table.render()
}

fn targets(measured: &Measured, messages: usize) -> Vec<Target> {
    let (concurrency, rate) = best_rate(measured, messages);
    let ping = us(percentile(&measured.pings.client, 0.99));
    let step = ms(&measured.steps.step_ms, 0.99);
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
