//! Cloudflare Queues on a cluster (issue 57): the operator, two runtime
//! nodes and the router as processes, one real PostgreSQL (Debian's, started
//! by `isolane_testenv::Postgres`), Workers applied with kubectl, sends
//! through the router.
//!
//! [`every_acknowledged_send_is_consumed_across_a_sigkill_of_the_queues_owner`]:
//! a producer and a consumer (`maxBatchSize: 5`) in each of two namespaces,
//! both queues named `jobs`. 2,000 messages are sent to the first
//! namespace's queue through the router (a `sendBatch` of 10 per request)
//! while its consumer runs on the queue's owner node (the node that took
//! the queue's owner epoch, from its log); once some hundreds are consumed,
//! the owner is SIGKILLed, and the last 500 are sent right after the kill.
//! Every message whose send was acknowledged (its request answered 200) is
//! consumed in the end, by the other node, which took the queue (a higher
//! epoch); duplicates (the batches under way at the kill, released by the
//! new owner as it took the queue) are counted and printed, and when those
//! were delivered again. Then the killed node
//! starts again: the ring names it the owner again, it takes the queue back
//! (a higher epoch still, the other node fenced) and 200 more messages are
//! all consumed. The second namespace's messages reach its own consumer
//! only, never the first's. The node that took the queue over shows its
//! backlog in `isolane_node_queue_backlog_messages` while it drains (read
//! every 100 ms by the test), and the gauge falls to 0 once all is
//! consumed.
//!
//! The consumers report each batch to a server of the test on loopback (the
//! nodes allow loopback egress for it): what they did, not what the nodes
//! say they did.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use isolane_crds::Worker;
use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::loopback;
use isolane_e2e::workers::{self, env_var as env, inline_worker};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::{Binding, QueueConsumer};

const TEAM_A: &str = "queues-a";
const TEAM_B: &str = "queues-b";
const HOST_A: &str = "a.queues.test";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(90);
/// Messages sent to the first namespace's queue, 10 a request.
const MESSAGES: u64 = 2000;
const PER_REQUEST: u64 = 10;
/// Messages sent to the second namespace's queue.
const MESSAGES_B: u64 = 100;

/// `GET /send?from=F&count=C` sends messages `{ns, n}` for n in F..F+C in
/// one `sendBatch`; it answers once they are durable.
const PRODUCER: &str = r"
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const from = Number(url.searchParams.get('from'));
    const count = Number(url.searchParams.get('count'));
    const messages = [];
    for (let i = 0; i < count; i++) messages.push({ body: { ns: env.NS, n: from + i }, contentType: 'json' });
    await env.JOBS.sendBatch(messages);
    return new Response('sent');
  },
};
";

/// Reports each batch (`[ns, n, attempts]` of each message) to the test's
/// server, after a short pause (batches take a while, so the kill finds
/// some under way); a report that fails fails the batch (retried).
const CONSUMER: &str = r"
export default {
  fetch() { return new Response('consumer'); },
  async queue(batch, env) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const seen = batch.messages.map((m) => [m.body.ns, m.body.n, m.attempts]);
    const answer = await fetch(`${env.TARGET}/${env.NS}`, { method: 'POST', body: JSON.stringify(seen) });
    if (!answer.ok) throw new Error(`report answered ${answer.status}`);
  },
};
";

/// One message a consumer reported: (the consumer's namespace tag, the
/// message's namespace tag, n, attempts, when).
type Seen = (String, String, u64, u64, Instant);
type Reports = Arc<Mutex<Vec<Seen>>>;

/// A loopback HTTP server recording `POST /<ns>` reports.
async fn start_reports() -> (SocketAddr, Reports) {
    let reports: Reports = Arc::default();
    let shared = reports.clone();
    let addr = loopback::serve(move |request: http::Request<hyper::body::Incoming>| {
        let reports = shared.clone();
        async move {
            let to = request.uri().path().trim_start_matches('/').to_owned();
            let body = request.into_body().collect().await.map(|b| b.to_bytes());
            let Some(seen) = body
                .ok()
                .and_then(|b| serde_json::from_slice::<Vec<(String, u64, u64)>>(&b).ok())
            else {
                let mut answer = loopback::ok("not a report");
                *answer.status_mut() = http::StatusCode::BAD_REQUEST;
                return answer;
            };
            let at = Instant::now();
            let mut reports = reports.lock().unwrap();
            for (ns, n, attempts) in seen {
                reports.push((to.clone(), ns, n, attempts, at));
            }
            loopback::ok("ok")
        }
    })
    .await;
    (addr, reports)
}

/// A namespace's producer (on `host`) and consumer of queue `jobs`, tagged
/// `tag`.
fn workers_of(tag: &str, host: &str, target: SocketAddr) -> Vec<Worker> {
    let mut producer = inline_worker("producer", PRODUCER, &[host]);
    producer.spec.bindings = vec![Binding::queue("JOBS", "jobs")];
    producer.spec.env = vec![env("NS", tag)];
    let consumer_host = format!("consumer.{host}");
    let mut consumer = inline_worker("consumer", CONSUMER, &[&consumer_host]);
    consumer.spec.env = vec![env("NS", tag), env("TARGET", &format!("http://{target}"))];
    consumer.spec.queue_consumers = vec![QueueConsumer {
        max_batch_size: Some(5),
        max_batch_timeout_ms: Some(50),
        ..QueueConsumer::new("jobs")
    }];
    // A batch's lease is its wall limit and 5 s: what a killed owner's
    // batches wait before they are delivered again.
    consumer.spec.limits.wall_ms = 5000;
    vec![producer, consumer]
}

/// The node that took `namespace`'s queue `jobs` last (the highest owner
/// epoch in the nodes' logs), with that epoch.
fn owner(cluster: &Cluster, namespace: &str) -> Option<(String, u64)> {
    let wanted = format!("namespace={namespace} queue=jobs");
    cluster.last_taker("queues: took the queue", &wanted)
}

/// `TEAM_A`'s queue's backlog on the node whose admin server is `admin`:
/// `None` while it has no series.
async fn backlog(admin: SocketAddr) -> Option<u64> {
    let series =
        format!("isolane_node_queue_backlog_messages{{namespace=\"{TEAM_A}\",queue=\"jobs\"}} ");
    let metrics = isolane_testenv::http_probe::get(admin, "/metrics").await?;
    metrics
        .body
        .lines()
        .find_map(|line| line.strip_prefix(series.as_str())?.trim().parse().ok())
}

/// Reads `admin`'s [`backlog`] every 100 ms until aborted; the most it
/// showed.
fn watch_backlog(admin: SocketAddr) -> (tokio::task::JoinHandle<()>, Arc<Mutex<u64>>) {
    let most = Arc::new(Mutex::new(0));
    let seen = most.clone();
    let watcher = tokio::spawn(async move {
        loop {
            if let Some(now) = backlog(admin).await {
                let mut most = seen.lock().unwrap();
                *most = (*most).max(now);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    (watcher, most)
}

/// The distinct messages of namespace tag `tag` consumer `to` reported.
fn consumed(reports: &Reports, to: &str) -> BTreeSet<u64> {
    reports
        .lock()
        .unwrap()
        .iter()
        .filter(|(at, ns, ..)| at == to && ns == to)
        .map(|(_, _, n, ..)| *n)
        .collect()
}

/// Sends messages `from..from + count` to `host`'s producer; `true` when
/// the send was acknowledged (200).
async fn send(ingress: &Ingress, host: &str, from: u64, count: u64) -> bool {
    let path = format!("/send?from={from}&count={count}");
    matches!(ingress.get(host, &path).await, Ok(reply) if reply.status == 200)
}

/// The messages whose send was acknowledged, and the requests that failed.
#[derive(Clone, Default)]
struct Sent {
    acked: Arc<Mutex<BTreeSet<u64>>>,
    failed: Arc<Mutex<u64>>,
}

impl Sent {
    /// Four senders of `range` to `host`'s producer, `PER_REQUEST` a request.
    fn senders(
        &self,
        ingress: &Ingress,
        host: &'static str,
        range: std::ops::Range<u64>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        (0..4u64)
            .map(|i| {
                let (ingress, sent, range) = (ingress.clone(), self.clone(), range.clone());
                tokio::spawn(async move {
                    let mut from = range.start + i * PER_REQUEST;
                    while from < range.end {
                        if send(&ingress, host, from, PER_REQUEST).await {
                            sent.acked.lock().unwrap().extend(from..from + PER_REQUEST);
                        } else {
                            *sent.failed.lock().unwrap() += 1;
                        }
                        from += 4 * PER_REQUEST;
                    }
                })
            })
            .collect()
    }
}

/// The killed owner starts again: the ring names it the owner again (a
/// membership change without a death, the other node fenced), it takes the
/// queue, and 200 more messages sent then are all consumed. Its new epoch.
async fn the_owner_comes_back(
    cp: &ControlPlane,
    cluster: &mut Cluster,
    ingress: &Ingress,
    reports: &Reports,
    owner_before: &str,
) -> u64 {
    let started = Instant::now();
    cluster.restart_node(cp, owner_before).await;
    cluster.wait_live_nodes(2).await;
    let sent = Sent::default();
    for sender in sent.senders(ingress, HOST_A, MESSAGES..MESSAGES + 200) {
        sender.await.unwrap();
    }
    let acked = sent.acked.lock().unwrap().clone();
    assert!(!acked.is_empty(), "no send acknowledged after the restart");
    wait_until(
        "the messages sent after the restart consumed",
        SETTLE,
        || async { consumed(reports, "a").is_superset(&acked).then_some(()) },
    )
    .await;
    let (now, epoch) = wait_until(
        "the restarted node to take the queue back",
        SETTLE,
        || async { owner(cluster, TEAM_A).filter(|(name, _)| name == owner_before) },
    )
    .await;
    // The other node stopped delivering it (its loop ended when its ring
    // changed, or its lease was fenced).
    let stopped = format!("namespace={TEAM_A} queue=jobs");
    wait_until(
        "the other node to stop delivering the queue",
        SETTLE,
        || async {
            cluster
                .nodes
                .iter()
                .filter(|node| node.name != owner_before)
                .any(|node| {
                    node.process.log().lines().any(|line| {
                        (line.contains("queues: stopped delivering the queue here")
                            || line.contains("queues: another node took the queue"))
                            && line.contains(&stopped)
                    })
                })
                .then_some(())
        },
    )
    .await;
    eprintln!(
        "{now} restarted: took {TEAM_A}'s queue back (epoch {epoch}); {} more sends acknowledged and consumed {:?} after the restart",
        acked.len(),
        started.elapsed()
    );
    epoch
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_send_is_consumed_across_a_sigkill_of_the_queues_owner() {
    let (target, reports) = start_reports().await;
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM_A, TEAM_B]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = ClusterOptions::with_postgres(&database.connection_string());
    options
        .node
        .extra_args
        .extend(["--egress-allow".to_owned(), "127.0.0.1/32".to_owned()]);
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;
    let (host_a, host_b) = (HOST_A, "b.queues.test");
    for (namespace, tag, host) in [(TEAM_A, "a", host_a), (TEAM_B, "b", host_b)] {
        let path = dir.path().join(format!("{namespace}.yaml"));
        kubectl::apply_workers(&cp, &path, namespace, &workers_of(tag, host, target)).await;
    }
    let ingress = Ingress::new(cluster.ingress());
    for host in [host_a, host_b] {
        wait_until("the producer answers", SETTLE, || async {
            send(&ingress, host, 1_000_000, 1).await.then_some(())
        })
        .await;
    }
    wait_until("a node to take the queue", SETTLE, || async {
        owner(&cluster, TEAM_A)
    })
    .await;

    // The second namespace's messages, first.
    for from in (0..MESSAGES_B).step_by(10) {
        assert!(send(&ingress, host_b, from, 10).await, "{TEAM_B}'s send");
    }

    // 1,500 messages, then the owner killed once 400 are consumed, then 500
    // more sent at once (some through the router to the dead node, before
    // the router drops it: refused, not acknowledged).
    let sent = Sent::default();
    let senders = sent.senders(&ingress, host_a, 0..MESSAGES - 500);
    wait_until("400 messages consumed", SETTLE, || async {
        (consumed(&reports, "a").len() >= 400).then_some(())
    })
    .await;
    let at_kill = (
        sent.acked.lock().unwrap().len(),
        consumed(&reports, "a").len(),
    );
    let (first_owner, epoch) = owner(&cluster, TEAM_A).unwrap();
    let killed = Instant::now();
    cluster.node_mut(&first_owner).process.kill();
    let survivor = cluster
        .nodes
        .iter()
        .find(|node| node.name != first_owner)
        .unwrap();
    let (watcher, most) = watch_backlog(survivor.admin);
    let after = sent.senders(&ingress, host_a, MESSAGES - 500..MESSAGES);
    for sender in senders.into_iter().chain(after) {
        sender.await.unwrap();
    }
    let acked = sent.acked.lock().unwrap().clone();
    assert!(
        acked.len() as u64 >= MESSAGES / 2,
        "only {} of {MESSAGES} sends acknowledged",
        acked.len()
    );
    wait_until("every acknowledged message consumed", SETTLE, || async {
        consumed(&reports, "a").is_superset(&acked).then_some(())
    })
    .await;
    let took_over = Instant::now() - killed;
    let (second_owner, second_epoch) = owner(&cluster, TEAM_A).unwrap();
    assert_ne!(second_owner, first_owner, "another node took the queue");
    assert!(second_epoch > epoch);
    // The node that took the queue showed its backlog, which falls to 0.
    let admin = cluster.node_mut(&second_owner).admin;
    wait_until("the backlog gauge to fall to 0", SETTLE, || async {
        (backlog(admin).await == Some(0)).then_some(())
    })
    .await;
    watcher.abort();
    let most_backlog = *most.lock().unwrap();
    assert!(most_backlog > 0, "{second_owner} never showed a backlog");
    let handed_back =
        the_owner_comes_back(&cp, &mut cluster, &ingress, &reports, &first_owner).await;
    assert!(handed_back > second_epoch);

    wait_until(
        "the second namespace's messages consumed",
        SETTLE,
        || async {
            (consumed(&reports, "b").range(..MESSAGES_B).count() as u64 == MESSAGES_B).then_some(())
        },
    )
    .await;
    let reports = reports.lock().unwrap().clone();
    let of_a: Vec<&Seen> = reports.iter().filter(|(to, ..)| to == "a").collect();
    let mut times: BTreeMap<u64, u64> = BTreeMap::new();
    for (.., n, _, _) in &of_a {
        *times.entry(*n).or_default() += 1;
    }
    let duplicates: BTreeMap<u64, u64> = times
        .iter()
        .filter(|(_, t)| **t > 1)
        .map(|(n, t)| (*n, *t))
        .collect();
    let after_kill = of_a
        .iter()
        .filter(|(.., at)| *at > killed)
        .map(|(.., at)| *at - killed)
        .min();
    // The killed owner's batches under way (delivered again: attempts 2 or
    // more), how long after the kill: the new owner releases them as it
    // takes the queue, without waiting out their lease (wallMs + 5 s).
    let again: Vec<Duration> = of_a
        .iter()
        .filter(|(.., attempts, at)| *attempts > 1 && *at > killed)
        .map(|(.., at)| *at - killed)
        .collect();
    let released = cluster
        .nodes
        .iter()
        .flat_map(|node| {
            node.process
                .log()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|line| line.contains("queues: released the messages an earlier owner had leased"))
        .filter(|line| line.contains(&format!("namespace={TEAM_A} ")))
        .filter_map(|line| {
            line.split("released=")
                .nth(1)?
                .split_whitespace()
                .next()
                .map(str::to_owned)
        })
        .collect::<Vec<_>>();
    eprintln!(
        "{TEAM_A}: the killed owner's in-flight messages ({} deliveries with attempts > 1) delivered again from {:?} to {:?} after the kill; released by the takes: {released:?}",
        again.len(),
        again.iter().min(),
        again.iter().max(),
    );
    eprintln!(
        "{TEAM_A}: {} acknowledged sends ({} refused requests), {} at the kill with {} consumed; \
         {first_owner} (epoch {epoch}) killed, {second_owner} (epoch {second_epoch}) delivered from {after_kill:?} after it; \
         all consumed {took_over:?} after the kill (its backlog gauge at most {most_backlog}); {} deliveries, {} duplicated messages: {duplicates:?}",
        acked.len(),
        sent.failed.lock().unwrap(),
        at_kill.0,
        at_kill.1,
        of_a.len(),
        duplicates.len(),
    );
    // A message delivered twice was leased twice: the store counted it.
    for n in duplicates.keys() {
        let most = of_a
            .iter()
            .filter(|(.., m, _, _)| m == n)
            .map(|(.., a, _)| *a)
            .max();
        assert!(
            most > Some(1),
            "message {n} delivered again with attempts 1"
        );
    }

    // Namespaces apart: the first consumer saw none of the second's
    // messages, and the second consumer all of its own and none of the first's.
    assert!(
        reports.iter().all(|(to, ns, ..)| to == ns),
        "a consumer got another namespace's message: {:?}",
        reports.iter().find(|(to, ns, ..)| to != ns)
    );
    let theirs: BTreeSet<u64> = reports
        .iter()
        .filter(|(to, ..)| to == "b")
        .map(|(_, _, n, ..)| *n)
        .filter(|n| *n < MESSAGES_B)
        .collect();
    assert_eq!(theirs, (0..MESSAGES_B).collect::<BTreeSet<u64>>());
    cluster.shutdown();
}
