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
mod render;
mod script;
mod throughput;
mod workflow;
mod wrangler;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_storage::POSTGRES_URL_ENV;
use isolane_testenv::Postgres;
use isolane_testenv::workers::{apply, inline_worker, wait_ready};
use isolane_worker::{Binding, QueueConsumer};

use crate::cluster::{self, Cluster, ClusterBinaries, NAMESPACE};
use crate::report::Section;
use crate::servers::Server;

const PRODUCER_HOST: &str = "queues.bench.test";
const CONSUMER_HOST: &str = "tally.queues.bench.test";
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
    /// Node.js 22 or later, for `wrangler dev` (Miniflare's local queues
    /// and workflows), the reference column; with `--wrangler`.
    #[arg(long, requires = "wrangler")]
    node: Option<PathBuf>,
    /// wrangler's `bin/wrangler.js`.
    #[arg(long, requires = "node")]
    wrangler: Option<PathBuf>,
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
    let peer = match (&args.node, &args.wrangler) {
        (Some(node), Some(js)) => {
            // `wrangler dev` runs in its project folder: no relative paths.
            let js = std::fs::canonicalize(js).with_context(|| format!("{}", js.display()))?;
            Some(wrangler::start(node, &js, work, &args.concurrency).await?)
        }
        _ => None,
    };
    let (mut ours, mut theirs) = (Measured::new(args), Measured::new(args));
    warm(&cluster.router, &consumer).await?;
    if let Some(server) = &peer {
        warm(server, server).await?;
    }
    for round in 0..args.rounds {
        measure(&cluster.router, &consumer, args, round, &mut ours).await?;
        if let Some(server) = &peer {
            measure(server, server, args, round, &mut theirs).await?;
        }
    }
    let theirs = peer.is_some().then_some(&theirs);
    let markdown = render::render(args, &ours, theirs);
    let targets = render::targets(&ours, args.messages);
    // The router, node and operator stop before their store.
    drop(peer);
    drop(cluster);
    drop(database);
    Ok(Section { markdown, targets })
}

/// Pings not counted: the queue's loop starts at its first message.
async fn warm(producer: &Server, consumer: &Server) -> anyhow::Result<()> {
    latency::run(
        producer,
        consumer,
        0,
        WARM_PINGS,
        &mut latency::Pings::default(),
    )
    .await
}

impl Measured {
    fn new(args: &Args) -> Self {
        Self {
            runs: args.concurrency.iter().map(|c| (*c, Vec::new())).collect(),
            ..Self::default()
        }
    }
}

/// Round `round` of one side: pings, workflow instances, then a send →
/// ack run per concurrency (each round's numbers new).
async fn measure(
    producer: &Server,
    consumer: &Server,
    args: &Args,
    round: usize,
    into: &mut Measured,
) -> anyhow::Result<()> {
    let load = throughput::Load {
        messages: args.messages,
        batch: 100,
        senders: args.senders,
    };
    let from = (WARM_PINGS + round * args.pings) as u64;
    latency::run(producer, consumer, from, args.pings, &mut into.pings).await?;
    workflow::run(producer, args.instances, args.steps, &mut into.steps).await?;
    for (concurrency, runs) in &mut into.runs {
        let (binding, name) = queue_of(*concurrency);
        let queue = throughput::Queue {
            binding: &binding,
            name: &name,
        };
        let from = (round * args.messages) as u64;
        let deadline = Duration::from_secs(600);
        runs.push(throughput::run(producer, consumer, &queue, from, &load, deadline).await?);
    }
    Ok(())
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
    let cluster = cluster::start_worker(bins, work, &producer, PRODUCER_HOST, &flags, &env).await?;
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
