//! A queue's owner is woken by a send made on another node (issue 57): the
//! operator, two runtime nodes and the router as processes, one real
//! PostgreSQL. Eight producers of the same queue (the router places each
//! Worker on a node of its own by rendezvous hashing), and a consumer
//! (`maxBatchSize: 1`, `maxBatchTimeoutMs: 0`) that reports each message
//! to a server of the test on loopback.
//!
//! The test finds the queue's owner (the node that took its owner epoch,
//! from its log) and a producer the router serves on the other node (its
//! `x-isolane-node`), then sends 50 messages through it, one at a time,
//! each once the last was consumed. Every message is delivered; the time
//! from the send to the consumer's report is printed (p50, p99); and the
//! owner's `isolane_node_queue_wakeups_total{source="notify"}` counted the
//! wake-ups PostgreSQL told it of (without them the owner sees another
//! node's send only at its next look, up to a second later).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use isolane_crds::Worker;
use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::loopback;
use isolane_e2e::workers::{self, env_var as env, inline_worker};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::{Binding, QueueConsumer};

const TEAM: &str = "queue-wakes";
const SETTLE: Duration = Duration::from_secs(90);
const PRODUCERS: usize = 8;
const MESSAGES: u64 = 50;

/// `GET /send?n=N` sends message `N`; it answers once it is durable.
const PRODUCER: &str = r"
export default {
  async fetch(request, env) {
    const n = Number(new URL(request.url).searchParams.get('n'));
    await env.JOBS.send({ n });
    return new Response('sent');
  },
};
";

/// Reports each message's `n` (`POST /<n>`).
const CONSUMER: &str = r"
export default {
  fetch() { return new Response('consumer'); },
  async queue(batch, env) {
    for (const m of batch.messages) {
      const answer = await fetch(`${env.TARGET}/${m.body.n}`, { method: 'POST' });
      if (!answer.ok) throw new Error(`report answered ${answer.status}`);
    }
  },
};
";

type Reports = Arc<Mutex<BTreeMap<u64, Instant>>>;

/// A loopback server recording when each `POST /<n>` first came.
async fn start_reports() -> (SocketAddr, Reports) {
    let reports: Reports = Arc::default();
    let shared = reports.clone();
    let addr = loopback::serve(move |request: http::Request<hyper::body::Incoming>| {
        let reports = shared.clone();
        async move {
            if let Ok(n) = request.uri().path().trim_start_matches('/').parse::<u64>() {
                reports
                    .lock()
                    .unwrap()
                    .entry(n)
                    .or_insert_with(Instant::now);
            }
            loopback::ok("ok")
        }
    })
    .await;
    (addr, reports)
}

fn producer_host(i: usize) -> String {
    format!("p{i}.wakes.test")
}

fn workers_of(target: SocketAddr) -> Vec<Worker> {
    let mut all: Vec<Worker> = (0..PRODUCERS)
        .map(|i| {
            let host = producer_host(i);
            let mut producer = inline_worker(&format!("producer-{i}"), PRODUCER, &[&host]);
            producer.spec.bindings = vec![Binding::queue("JOBS", "jobs")];
            producer
        })
        .collect();
    let mut consumer = inline_worker("consumer", CONSUMER, &["consumer.wakes.test"]);
    consumer.spec.env = vec![env("TARGET", &format!("http://{target}"))];
    consumer.spec.queue_consumers = vec![QueueConsumer {
        max_batch_size: Some(1),
        max_batch_timeout_ms: Some(0),
        ..QueueConsumer::new("jobs")
    }];
    all.push(consumer);
    all
}

/// The owner's count of wake-ups from `source`.
async fn wakeups(admin: SocketAddr, source: &str) -> u64 {
    let series = format!("isolane_node_queue_wakeups_total{{source=\"{source}\"}} ");
    let Some(metrics) = isolane_testenv::http_probe::get(admin, "/metrics").await else {
        return 0;
    };
    metrics
        .body
        .lines()
        .find_map(|line| line.strip_prefix(series.as_str())?.trim().parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let index = (sorted.len() * p).div_ceil(100).saturating_sub(1);
    sorted.get(index).copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_on_another_node_wakes_the_queues_owner() {
    let (target, reports) = start_reports().await;
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = ClusterOptions::with_postgres(&database.connection_string());
    options
        .node
        .extra_args
        .extend(["--egress-allow".to_owned(), "127.0.0.1/32".to_owned()]);
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let path = dir.path().join("workers.yaml");
    kubectl::apply_workers(&cp, &path, TEAM, &workers_of(target)).await;
    let ingress = Ingress::new(cluster.ingress());
    let (owner, _) = wait_until("a node to take the queue", SETTLE, || async {
        cluster.last_taker(
            "queues: took the queue",
            &format!("namespace={TEAM} queue=jobs"),
        )
    })
    .await;
    // A producer the router serves on the other node (probe messages are
    // numbered from 1,000,000).
    let probe = std::sync::atomic::AtomicU64::new(1_000_000);
    let mut elsewhere = None;
    for i in 0..PRODUCERS {
        let host = producer_host(i);
        let reply = wait_until("the producer answers", SETTLE, || async {
            let n = probe.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let reply = ingress.get(&host, &format!("/send?n={n}")).await.ok()?;
            (reply.status == 200).then_some(reply)
        })
        .await;
        if reply.node.as_deref().is_some_and(|node| node != owner) {
            elsewhere = Some(host);
            break;
        }
    }
    let host = elsewhere.expect("a producer served by the node that does not own the queue");
    let admin = cluster
        .nodes
        .iter()
        .find(|n| n.name == owner)
        .unwrap()
        .admin;
    let before = wakeups(admin, "notify").await;

    let mut latencies = Vec::new();
    for n in 0..MESSAGES {
        let sent = Instant::now();
        let reply = ingress.get(&host, &format!("/send?n={n}")).await.unwrap();
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_ne!(
            reply.node.as_deref(),
            Some(owner.as_str()),
            "sent on the owner"
        );
        let at = wait_until("the message consumed", SETTLE, || async {
            reports.lock().unwrap().get(&n).copied()
        })
        .await;
        latencies.push(at.saturating_duration_since(sent));
    }
    let woken = wakeups(admin, "notify").await - before;
    latencies.sort();
    eprintln!(
        "{MESSAGES} sends on the node that does not own the queue ({owner} owns it): send -> consumer's report p50 {:?}, p99 {:?}, max {:?}; the owner woken {woken} times by PostgreSQL's notifications",
        percentile(&latencies, 50),
        percentile(&latencies, 99),
        latencies.last().copied().unwrap_or_default(),
    );
    assert!(
        woken > 0,
        "the owner was never woken by another node's send (it found them at its next look)"
    );
}
