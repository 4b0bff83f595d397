//! Delivers Cloudflare Queues' messages: for each queue a Worker consumes
//! (`spec.queueConsumers`), a loop that leases batches from the store
//! (`isolane_storage::Store::queue_lease`) and runs each as an
//! `isolane_engine::Work::QueueBatch` on the engine, on the thread its
//! Worker runs on, then settles it ([`QueueOutcome`]).
//!
//! Cloudflare's semantics: a batch is delivered once it holds
//! `maxBatchSize` messages or its oldest has waited `maxBatchTimeoutMs`;
//! at most `maxConcurrency` batches of a queue are under way; a message
//! that is not acknowledged is retried after `retryDelaySeconds` (or the
//! delay `retry()` gave) until it has been retried `maxRetries` times, then
//! moved to the dead-letter queue, or dropped (logged) without one.
//! Delivery is at least once: a lease outlives the Worker's wall limit, and
//! messages whose process died holding them are leased again after it (on
//! a cluster at once: the next owner releases them as it takes the queue,
//! `isolane_storage::Store::queue_take`).
//!
//! Which process delivers a queue is the [`QueueHost`]'s to say: in
//! `isolane dev` the only one; on a cluster, the queue's owner on the ring,
//! which takes the queue's owner epoch before its loop starts and fences
//! every lease with it (a loop whose lease is fenced ends; it starts again,
//! taking the queue anew, if the ring still names this node).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use isolane_storage::{QueueError, QueueMessage, QueueScope, QueueSettle, Store, StoreError};
use isolane_worker::QueueConsumer;

use isolane_engine::{Engine, QueueBatch, Work, WorkerBundle};

use super::outcome::{QueueOutcome, Verdict};
use crate::metrics::{QueueMetrics, WakeSource};

/// How often the runner deletes the expired messages of the queues it
/// delivers and counts their backlog (the metrics), in looks at its
/// consumers (`idle`, a second).
const COUNT_EVERY: u32 = 5;

/// One queue a Worker consumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConsumerOf {
    /// The consuming Worker (`<namespace>/<name>`).
    pub worker_id: String,
    pub consumer: QueueConsumer,
}

impl QueueConsumerOf {
    /// The queue it consumes, in its Worker's namespace.
    pub fn scope(&self) -> QueueScope {
        let namespace = isolane_engine::namespace_of(&self.worker_id);
        QueueScope::new(namespace, &self.consumer.queue)
    }
}

/// Which queues this process delivers, and where their Workers run.
pub trait QueueHost: Send + Sync + 'static {
    /// The consumers whose queues this process delivers now.
    fn consumers(&self) -> Vec<QueueConsumerOf>;

    /// Worker `worker_id`'s bundle and the engine thread it runs on, when
    /// this process runs it.
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)>;

    /// The name this process takes a queue's owner epoch under before
    /// delivering it (`Store::queue_take`), its leases fenced with it;
    /// `None`: unfenced (`isolane dev`, the only process).
    fn taker(&self) -> Option<String>;
}

/// What a lease got.
enum Leased {
    Batch(Vec<QueueMessage>),
    /// Nothing (none ready, the Worker not held, or the store failed).
    Nothing,
    /// Another process took the queue since this loop did.
    Lost,
}

/// The queue delivery loop of one process.
pub struct QueueRunner {
    engine: Engine,
    store: Store,
    host: Arc<dyn QueueHost>,
    /// The shortest wait between two looks at a queue.
    poll: Duration,
    /// The longest wait: how often consumers are looked up again, and a
    /// message another process sent is seen at worst (when PostgreSQL's
    /// notifications do not reach this process: at once otherwise).
    idle: Duration,
    /// How much longer than the Worker's wall limit a lease holds.
    lease_margin: Duration,
    /// The backlog gauges of the queues it delivers, when it has them.
    metrics: Option<Arc<QueueMetrics>>,
}

impl QueueRunner {
    pub fn new(engine: Engine, store: Store, host: Arc<dyn QueueHost>) -> Self {
        Self {
            engine,
            store,
            host,
            poll: Duration::from_millis(5),
            idle: Duration::from_secs(1),
            lease_margin: Duration::from_secs(5),
            metrics: None,
        }
    }

    /// The runner, setting `metrics` from the backlog of the queues it
    /// delivers every [`COUNT_EVERY`] seconds.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<QueueMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Delivers until the task running it is dropped (each queue's loop
    /// with it: they live in a `JoinSet`).
    pub async fn run(self) {
        let this = Arc::new(self);
        let mut tasks = tokio::task::JoinSet::new();
        let mut loops: HashMap<QueueScope, (QueueConsumerOf, tokio::task::AbortHandle)> =
            HashMap::new();
        for tick in 0u32.. {
            while tasks.try_join_next().is_some() {}
            let mut wanted: HashMap<QueueScope, QueueConsumerOf> = HashMap::new();
            for consumer in this.host.consumers() {
                wanted.entry(consumer.scope()).or_insert(consumer);
            }
            // A consumer gone or changed: its loop ends (a batch under way
            // finishes and settles), a new one starts with its settings. A
            // loop that ended (its queue taken by another node) starts again
            // while this node is still named the owner.
            loops.retain(|scope, (consumer, task)| {
                let keep = wanted.get(scope) == Some(consumer) && !task.is_finished();
                if !keep && !task.is_finished() {
                    tracing::info!(namespace = %scope.namespace, queue = %scope.queue, "queues: stopped delivering the queue here (not its owner any more, or its consumer changed)");
                    task.abort();
                }
                keep
            });
            for (scope, consumer) in wanted {
                if let std::collections::hash_map::Entry::Vacant(slot) = loops.entry(scope) {
                    let run = Arc::clone(&this).consume(slot.key().clone(), consumer.clone());
                    slot.insert((consumer, tasks.spawn(run)));
                }
            }
            if tick % COUNT_EVERY == 0 {
                this.tend(loops.keys().cloned().collect()).await;
            }
            tokio::time::sleep(this.idle).await;
        }
    }

    /// Deletes the messages of the queues in `delivered` kept past the
    /// store's retention, then sets their backlog gauges (those with
    /// series), and drops those of the queues this process no longer
    /// delivers.
    async fn tend(&self, delivered: Vec<QueueScope>) {
        let now = now_ms();
        for scope in &delivered {
            match self.store.queue_expire(scope.clone(), now).await {
                Ok(0) => {}
                Ok(messages) => {
                    tracing::info!(namespace = %scope.namespace, queue = %scope.queue, messages, "queues: deleted messages kept past the retention period");
                }
                Err(error) => {
                    tracing::debug!(%error, queue = %scope.queue, "queues: could not delete expired messages");
                }
            }
        }
        let Some(metrics) = &self.metrics else {
            return;
        };
        for scope in metrics.named() {
            if !delivered.contains(&scope) {
                metrics.forget(&scope);
            }
        }
        for scope in delivered.into_iter().filter(|scope| metrics.admit(scope)) {
            match self.store.queue_depth(scope.clone()).await {
                Ok(depth) => metrics.set(&scope, depth, now_ms()),
                Err(error) => {
                    tracing::debug!(%error, queue = %scope.queue, "queues: could not count the backlog");
                }
            }
        }
    }

    /// One queue's loop: waits for a batch, leases it, delivers it.
    async fn consume(self: Arc<Self>, scope: QueueScope, of: QueueConsumerOf) {
        let consumer = &of.consumer;
        let slots = Arc::new(tokio::sync::Semaphore::new(consumer.concurrency() as usize));
        let (size, timeout) = (
            consumer.batch_size(),
            i64::from(consumer.batch_timeout_ms()),
        );
        let mut changes = self.store.queue_changes();
        let mut told = self.store.queue_wakes(&scope);
        let Some(fence) = self.take(&scope).await else {
            return;
        };
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let now = now_ms();
            let wake = match self.store.queue_ready(scope.clone(), now, size).await {
                Ok(ready) if ready.ready > 0 => {
                    let oldest = ready.oldest_ready_ms.unwrap_or(now);
                    let due = ready.ready >= size || now - oldest >= timeout;
                    if due {
                        match self.lease(&scope, &of, fence, now, size).await {
                            Leased::Batch(batch) => {
                                let delivery = Arc::clone(&self).deliver(
                                    scope.clone(),
                                    of.clone(),
                                    (batch, fence),
                                    slot,
                                );
                                tokio::spawn(delivery);
                                continue;
                            }
                            Leased::Lost => return,
                            Leased::Nothing => {}
                        }
                    }
                    oldest + timeout
                }
                Ok(ready) => ready.next_visible_ms.unwrap_or(i64::MAX),
                Err(error) => {
                    tracing::warn!(%error, queue = %scope.queue, "queues: the store did not answer");
                    now.saturating_add(millis(self.idle))
                }
            };
            drop(slot);
            let wait = Duration::from_millis(u64::try_from(wake.saturating_sub(now)).unwrap_or(0))
                .clamp(self.poll, self.idle);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = changes.changed() => self.woken(WakeSource::Local),
                () = sent_elsewhere(&mut told) => self.woken(WakeSource::Notify),
            }
        }
    }

    fn woken(&self, source: WakeSource) {
        if let Some(metrics) = &self.metrics {
            metrics.woken(source);
        }
    }

    /// Takes `scope`'s owner epoch when this process delivers under a
    /// name: `Some(fence)` to lease with, `None` when the store failed
    /// (the loop ends, and starts again at the next look).
    async fn take(&self, scope: &QueueScope) -> Option<Option<i64>> {
        let Some(name) = self.host.taker() else {
            return Some(None);
        };
        match self.store.queue_take(scope.clone(), name.clone()).await {
            Ok(epoch) => {
                tracing::info!(node = %name, namespace = %scope.namespace, queue = %scope.queue, epoch, "queues: took the queue");
                Some(Some(epoch))
            }
            Err(error) => {
                tracing::warn!(%error, queue = %scope.queue, "queues: could not take the queue");
                None
            }
        }
    }

    /// Leases a batch for `of`'s Worker, when it runs here (its lease holds
    /// for its wall limit and the margin), fenced with `fence`.
    async fn lease(
        &self,
        scope: &QueueScope,
        of: &QueueConsumerOf,
        fence: Option<i64>,
        now: i64,
        size: u32,
    ) -> Leased {
        let Some((bundle, _)) = self.host.worker(&of.worker_id) else {
            return Leased::Nothing;
        };
        let hold = Duration::from_millis(u64::from(bundle.limits.wall_ms)) + self.lease_margin;
        let until = now.saturating_add(millis(hold));
        match self
            .store
            .queue_lease(scope.clone(), fence, now, until, size)
            .await
        {
            Ok(batch) if !batch.is_empty() => Leased::Batch(batch),
            Ok(_) => Leased::Nothing,
            Err(StoreError::Queue(QueueError::Fenced { mine, current })) => {
                tracing::info!(namespace = %scope.namespace, queue = %scope.queue, mine, current, "queues: another node took the queue; this one stops delivering it");
                Leased::Lost
            }
            Err(error) => {
                tracing::warn!(%error, queue = %scope.queue, "queues: could not lease a batch");
                Leased::Nothing
            }
        }
    }

    /// Runs `messages` (leased under `fence`) through the consumer and
    /// settles them.
    async fn deliver(
        self: Arc<Self>,
        scope: QueueScope,
        of: QueueConsumerOf,
        (messages, fence): (Vec<QueueMessage>, Option<i64>),
        _slot: tokio::sync::OwnedSemaphorePermit,
    ) {
        let held = self.host.worker(&of.worker_id);
        let outcome = match &held {
            Some((bundle, thread)) => {
                let batch = QueueBatch {
                    queue: scope.queue.clone(),
                    messages: messages.clone(),
                };
                let work = Work::QueueBatch(batch);
                outcome_of(self.engine.run(*thread, bundle.clone(), work).await).await
            }
            None => QueueOutcome::failed(),
        };
        let settle = QueueSettle {
            fence,
            ..settle(&outcome, &messages, &of.consumer, now_ms())
        };
        let dead: Vec<QueueMessage> = messages
            .into_iter()
            .filter(|m| settle.dead.contains(&m.id))
            .collect();
        let dead_letter = settle.dead_letter.clone();
        if let Err(error) = self.store.queue_settle(scope.clone(), settle).await {
            // Its messages are delivered again once their lease runs out.
            tracing::warn!(%error, queue = %scope.queue, "queues: could not settle a batch");
            return;
        }
        for message in &dead {
            let id = &message.id;
            match &dead_letter {
                Some(dlq) => {
                    tracing::info!(worker.id = %of.worker_id, queue = %scope.queue, message = %id, dead_letter_queue = %dlq, "queues: a message ran out of retries; moved to the dead-letter queue");
                }
                None => {
                    tracing::warn!(worker.id = %of.worker_id, queue = %scope.queue, message = %id, "queues: a message ran out of retries and has no dead-letter queue; dropped");
                    if let Some((bundle, thread)) = &held {
                        self.engine
                            .publish_tail(dropped_event(&scope, bundle, *thread, message));
                    }
                }
            }
        }
    }
}

/// Resolves when another process sent to the queue `told` watches
/// (`isolane_storage::Store::queue_wakes`); never without one.
async fn sent_elsewhere(told: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    if let Some(told) = told
        && told.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// The tail event of `message`, dropped from `scope`'s queue after its
/// retries with no dead-letter queue: `QUEUE /__queue/<queue>?dropped=<id>`,
/// outcome `message_dropped`, its warning as a console line.
fn dropped_event(
    scope: &QueueScope,
    bundle: &WorkerBundle,
    thread: usize,
    message: &QueueMessage,
) -> isolane_engine::TailEvent {
    let text = format!(
        "queue {}: message {} ran out of retries after {} deliveries and has no dead-letter queue; dropped",
        scope.queue, message.id, message.attempts
    );
    let now = u64::try_from(now_ms()).unwrap_or(0);
    isolane_engine::TailEvent {
        worker: bundle.id.clone(),
        namespace: scope.namespace.clone(),
        revision: bundle.revision.clone(),
        node: String::new(),
        thread,
        request_id: message.id.clone(),
        outcome: "message_dropped".to_owned(),
        status: 0,
        method: "QUEUE".to_owned(),
        url: isolane_storage::queue_tail_path(&scope.queue, &format!("dropped={}", message.id)),
        timestamp_ms: now,
        wall_ms: 0.0,
        cpu_ms: 0.0,
        logs: vec![isolane_engine::LogLine {
            level: "warn".to_owned(),
            message: text,
            timestamp_ms: now,
        }],
        exceptions: Vec::new(),
        dropped_lines: 0,
    }
}

/// The outcome a delivery answered: its body's, or every message retried.
async fn outcome_of(
    answer: Result<http::Response<isolane_engine::Body>, isolane_engine::ExecuteError>,
) -> QueueOutcome {
    let response = match answer {
        Ok(response) => response,
        Err(error) => {
            tracing::info!(%error, "queues: the queue handler failed; its batch is retried");
            return QueueOutcome::failed();
        }
    };
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.next_chunk().await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_OUTCOME_BYTES {
            return QueueOutcome::failed();
        }
    }
    QueueOutcome::parse(&bytes).unwrap_or_else(QueueOutcome::failed)
}

/// An outcome's JSON, at most (100 ids of any length a Worker could give).
const MAX_OUTCOME_BYTES: usize = 1 << 20;

/// What becomes of each message of a delivered batch.
fn settle(
    outcome: &QueueOutcome,
    messages: &[QueueMessage],
    consumer: &QueueConsumer,
    now: i64,
) -> QueueSettle {
    let mut settle = QueueSettle {
        dead_letter: consumer.dead_letter_queue.clone(),
        ..QueueSettle::default()
    };
    for (message, verdict) in outcome.verdicts(messages) {
        match verdict {
            Verdict::Ack => settle.acked.push(message.id.clone()),
            // Deliveries so far: the first and `retries()` retries.
            Verdict::Retry(_) if message.attempts > consumer.retries() => {
                settle.dead.push(message.id.clone());
            }
            Verdict::Retry(delay) => {
                let seconds = delay
                    .filter(|d| d.is_finite() && *d >= 0.0)
                    .map_or(f64::from(consumer.retry_delay_seconds()), |d| {
                        d.min(86_400.0)
                    });
                // Whole milliseconds of at most a day.
                #[allow(clippy::cast_possible_truncation)]
                let at = now.saturating_add((seconds * 1000.0) as i64);
                settle.retried.push((message.id.clone(), at));
            }
        }
    }
    settle
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, attempts: u32) -> QueueMessage {
        QueueMessage {
            id: id.into(),
            timestamp_ms: 0,
            body: Vec::new(),
            content_type: "text".into(),
            attempts,
        }
    }

    #[test]
    fn a_message_out_of_retries_is_dead() {
        let consumer = QueueConsumer {
            max_retries: Some(2),
            retry_delay_seconds: Some(3),
            dead_letter_queue: Some("dlq".into()),
            ..QueueConsumer::new("jobs")
        };
        let batch = [message("a", 1), message("b", 3), message("c", 2)];
        let outcome = QueueOutcome::failed();
        let settled = settle(&outcome, &batch, &consumer, 1000);
        assert_eq!(settled.dead, ["b"]);
        assert_eq!(
            settled.retried,
            [("a".to_owned(), 4000), ("c".to_owned(), 4000)]
        );
        assert_eq!(settled.dead_letter.as_deref(), Some("dlq"));
    }
}
