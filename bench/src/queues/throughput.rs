//! Messages per second through one queue, send to acknowledgement: a
//! fixed number of numbered messages pushed through the router by many
//! connections at once (`sendBatch`es of up to 100, so the producer is not
//! the limit), timed until the consumer's tally has seen every number.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::servers::Server;
use crate::state::Client;

/// How much load one run pushes.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub messages: usize,
    /// Messages per `sendBatch` (1 to 100).
    pub batch: usize,
    /// Connections sending at once.
    pub senders: usize,
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// First send to the last message seen by the consumer.
    pub took: Duration,
    /// First send to the last send answered (every message durable).
    pub sent_in: Duration,
    /// Deliveries the consumer counted in this run (≥ messages: the
    /// duplicates of at-least-once delivery).
    pub deliveries: u64,
}

impl Run {
    /// Messages per second, send to acknowledgement.
    pub fn rate(&self, load: &Load) -> f64 {
        load.messages as f64 / self.took.as_secs_f64()
    }

    /// Messages per second the senders stored.
    pub fn send_rate(&self, load: &Load) -> f64 {
        load.messages as f64 / self.sent_in.as_secs_f64()
    }
}

/// Where one run's messages go and are counted.
pub struct Queue<'a> {
    /// The producer's binding of the queue.
    pub binding: &'a str,
    /// The queue's name (its tally).
    pub name: &'a str,
}

/// The consumer's tally of `queue`: distinct numbers seen and deliveries.
pub async fn count(client: &mut Client, queue: &str) -> anyhow::Result<(u64, u64)> {
    let (_, body) = client.get_body(&format!("/count?q={queue}")).await?;
    let text = String::from_utf8_lossy(&body);
    let mut parts = text.split(' ').map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(distinct)), Some(Ok(deliveries))) => Ok((distinct, deliveries)),
        _ => anyhow::bail!("/count?q={queue} answered {text:?}"),
    }
}

/// Sends `load.messages` numbers from `from` into `queue` through
/// `producer`, and waits (up to `deadline`) until `consumer`'s tally of it
/// has seen all of them.
pub async fn run(
    producer: &Server,
    consumer: &Server,
    queue: &Queue<'_>,
    from: u64,
    load: &Load,
    deadline: Duration,
) -> anyhow::Result<Run> {
    let mut counter = Client::connect(consumer).await?;
    let (seen_before, deliveries_before) = count(&mut counter, queue.name).await?;
    let mut senders = Vec::with_capacity(load.senders);
    for _ in 0..load.senders {
        senders.push(Client::connect(producer).await?);
    }
    let chunks = load.messages.div_ceil(load.batch);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for mut client in senders {
        let (next, load, binding) = (next.clone(), *load, queue.binding.to_owned());
        tasks.spawn(async move {
            loop {
                let chunk = next.fetch_add(1, Ordering::Relaxed);
                if chunk >= chunks {
                    return anyhow::Ok(());
                }
                let first = chunk * load.batch;
                let n = load.batch.min(load.messages - first);
                let path = format!("/batch?q={binding}&from={}&n={n}", from + first as u64);
                client.checked(&path, "sent").await?;
            }
        });
    }
    while let Some(sent) = tasks.join_next().await {
        sent.context("a sender")??;
    }
    let sent_in = started.elapsed();
    let wanted = seen_before + load.messages as u64;
    let deliveries = loop {
        let (seen, deliveries) = count(&mut counter, queue.name).await?;
        if seen >= wanted {
            break deliveries - deliveries_before;
        }
        anyhow::ensure!(
            started.elapsed() < deadline,
            "queue {}: the consumer saw {} of {} messages in {deadline:?}",
            queue.name,
            seen - seen_before,
            load.messages
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    Ok(Run {
        took: started.elapsed(),
        sent_in,
        deliveries,
    })
}
