//! What an operator sees of Cloudflare Queues in `isolane dev`, and the
//! per-namespace quota, as a user runs it: the real binary, Worker YAMLs,
//! the admin server's `/metrics`.
//!
//! - The backlog gauges (`isolane_node_queue_backlog_messages`,
//!   `isolane_node_queue_oldest_message_age_seconds`) show a queue whose
//!   consumer holds its messages back, and fall to 0 once it drains.
//! - `--queue-retention-secs`: messages the consumer never acknowledges
//!   are deleted once older than the retention.
//! - `--queue-namespace-max-messages`: a namespace at its quota has its
//!   sends refused with Cloudflare's shape of error, while another
//!   namespace (on the same, only, engine thread) sends before, during
//!   and after; once the backlog drains the namespace sends again.
#![allow(clippy::unwrap_used)]

use isolane_testenv::wait_until;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, request, when_ready, worker_yaml};

/// The producer: `/send` sends one message and answers `sent`, or the
/// error's name and message.
const PRODUCER: &str = r"
export default {
  async fetch(request, env) {
    try {
      await env.HELD.send({ at: Date.now() }, { contentType: 'json' });
      return new Response('sent');
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`);
    }
  },
};";

/// The consumer of `held`: retries every batch until `/open` was asked
/// (a KV key), then acknowledges; any other path answers `closed`.
const CONSUMER: &str = r"
export default {
  async queue(batch, env) {
    if ((await env.GATE.get('open')) === null) batch.retryAll({ delaySeconds: 1 });
  },
  async fetch(request, env) {
    if (new URL(request.url).pathname !== '/open') return new Response('closed');
    await env.GATE.put('open', '1');
    return new Response('open');
  },
};";

/// `metric{namespace="qa",queue="held"}`'s value in `metrics`, if any.
fn held_series(metrics: &str, name: &str) -> Option<i64> {
    let series = format!("{name}{{namespace=\"qa\",queue=\"held\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
        .and_then(|value| value.trim().parse().ok())
}

async fn metrics(client: &support::HttpClient, admin: u16) -> String {
    let (status, body) = request(client, admin, "localhost", "/metrics")
        .await
        .unwrap();
    assert_eq!(status, 200);
    body
}

/// Waits until `held`'s backlog and oldest age satisfy `want`.
async fn held(
    client: &support::HttpClient,
    admin: u16,
    what: &str,
    want: impl Fn(i64, i64) -> bool,
) -> (i64, i64) {
    wait_until(what, DEADLINE, || async {
        let text = metrics(client, admin).await;
        let backlog = held_series(&text, "isolane_node_queue_backlog_messages");
        let age = held_series(&text, "isolane_node_queue_oldest_message_age_seconds");
        match (backlog, age) {
            (Some(backlog), Some(age)) if want(backlog, age) => Ok((backlog, age)),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

async fn send(client: &support::HttpClient, port: u16, host: &str) -> String {
    let (status, body) = request(client, port, host, "/send").await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

/// `isolane dev` serving namespace `qa`'s producer (`qa.test`) and gated
/// consumer (`gate.test`) of queue `held`, and namespace `other`'s producer
/// (`other.test`) of its own `held`, with `flags` and the admin server on
/// its own port; returned once the consumer answers, with its port and
/// the admin port.
async fn start(client: &support::HttpClient, flags: &[&str]) -> (tempfile::TempDir, Dev, u16, u16) {
    let dir = tempfile::tempdir().unwrap();
    let producer = |host: &str| {
        format!(
            "  routes: [{{host: {host}}}]\n  bindings:\n    - name: HELD\n      queue: {{name: held}}\n"
        )
    };
    let documents = [
        worker_yaml("qa", "producer", &producer("qa.test"), PRODUCER),
        worker_yaml(
            "qa",
            "consumer",
            "  routes: [{host: gate.test}]\n  bindings:\n    - name: GATE\n      kvNamespace: gate\n  queueConsumers:\n    - queue: held\n      maxBatchTimeoutMs: 0\n      maxRetries: 100\n",
            CONSUMER,
        ),
        worker_yaml("other", "producer", &producer("other.test"), PRODUCER),
    ];
    std::fs::write(dir.path().join("workers.yaml"), documents.join("---\n")).unwrap();
    let (port, admin) = (free_port().unwrap(), free_port().unwrap());
    let admin_arg = admin.to_string();
    let mut extra = vec!["--no-reload", "--no-tail", "--admin-port", &admin_arg];
    extra.extend(flags);
    let mut dev = Dev::workers(dir.path(), port, &extra);
    let ready = when_ready(client, &mut dev, port, "gate.test", "/").await;
    assert_eq!(ready, (200, "closed".to_owned()));
    (dir, dev, port, admin)
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_queue_backlog_metrics_and_the_namespace_quota() {
    let client = client();
    let flags = ["--queue-namespace-max-messages", "3"];
    let (_dir, dev, port, admin) = start(&client, &flags).await;
    assert_eq!(send(&client, port, "other.test").await, "sent");

    for _ in 0..3 {
        assert_eq!(send(&client, port, "qa.test").await, "sent");
    }
    // At the quota: qa's next send is refused, other's goes through.
    let refused = send(&client, port, "qa.test").await;
    assert!(
        refused.starts_with(
            "Error: Queue send failed: Storage Limit Exceeded: this namespace's queues hold 3 messages and "
        ) && refused.contains("the quota is 3 messages and 1073741824 bytes"),
        "{refused}"
    );
    assert_eq!(send(&client, port, "other.test").await, "sent");

    // The consumer holds the three back: the backlog shows them, aging.
    let (backlog, age) = held(&client, admin, "qa/held's backlog of 3, aged", |b, a| {
        b == 3 && a >= 1
    })
    .await;
    println!("held back: {backlog} messages, the oldest {age} s old");

    let (status, body) = request(&client, port, "gate.test", "/open").await.unwrap();
    assert_eq!((status, body.as_str()), (200, "open"));
    held(&client, admin, "qa/held's backlog to drain", |b, a| {
        b == 0 && a == 0
    })
    .await;
    // Drained: qa sends again; other still does.
    assert_eq!(send(&client, port, "qa.test").await, "sent");
    assert_eq!(send(&client, port, "other.test").await, "sent");
    assert!(dev.interrupt().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_queue_messages_past_the_retention_are_deleted() {
    let client = client();
    let (_dir, dev, port, admin) = start(&client, &["--queue-retention-secs", "2"]).await;
    for _ in 0..2 {
        assert_eq!(send(&client, port, "qa.test").await, "sent");
    }
    // The consumer never acknowledges them (the gate stays closed): they
    // go once two seconds old, at the runner's next pass (every 5 s).
    let deleted = "queues: deleted messages kept past the retention period";
    wait_until("the expired messages deleted", DEADLINE, || async {
        let log = plain(&dev.log());
        let lines: u64 = log
            .lines()
            .filter(|line| line.contains(deleted) && line.contains("queue=held"))
            .filter_map(|line| {
                line.split("messages=")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        if lines == 2 {
            Ok(())
        } else {
            let tail: Vec<&str> = log.lines().rev().take(8).collect();
            Err(format!("{lines} deleted; the log ends {tail:#?}"))
        }
    })
    .await;
    held(&client, admin, "qa/held's backlog to be empty", |b, a| {
        b == 0 && a == 0
    })
    .await;
    assert!(dev.interrupt().success());
}

/// `text` without its terminal colours (`ESC [ … m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}
