//! Send → consumer start, one message at a time on an idle system: the
//! client sends `/ping?n=K` (one `send`, answered once durable) while a
//! request `/wait?q=ping&n=K` to the consumer's tally is open; the clock
//! stops when the wait answers (the consumer reported K to its tally). The
//! answer is the consumer's own figure: its handler's start less the
//! message's `timestamp` (both the node's clock, whole milliseconds).

use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::servers::Server;
use crate::state::Client;

/// The queue the pings go through (`maxBatchTimeoutMs: 0`).
pub const QUEUE: &str = "ping";

#[derive(Debug, Default)]
pub struct Pings {
    /// Client-measured: the send's request to the consumer's report seen.
    pub client: Vec<Duration>,
    /// The consumer's start less the message's timestamp, ms.
    pub in_worker_ms: Vec<f64>,
}

/// Sends `count` pings numbered from `from`, one at a time, into `into`.
pub async fn run(
    producer: &Server,
    consumer: &Server,
    from: u64,
    count: usize,
    into: &mut Pings,
) -> anyhow::Result<()> {
    let mut sender = Client::connect(producer).await?;
    for n in from..from + count as u64 {
        let mut waiter = Client::connect(consumer).await?;
        let wait = tokio::spawn(async move {
            let answer = waiter.get_body(&format!("/wait?q={QUEUE}&n={n}")).await;
            (Instant::now(), answer)
        });
        let started = Instant::now();
        sender.checked(&format!("/ping?n={n}"), "sent").await?;
        let (seen, answer) = tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .with_context(|| format!("ping {n} was not consumed within 60 s"))??;
        let (_, body) = answer?;
        let text = String::from_utf8_lossy(&body);
        let lag: f64 = text
            .parse()
            .with_context(|| format!("/wait answered {text:?}, not a lag"))?;
        into.client.push(seen.saturating_duration_since(started));
        into.in_worker_ms.push(lag);
    }
    Ok(())
}
