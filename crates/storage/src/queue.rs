//! [`Store`]'s Cloudflare Queues backlog: each Kubernetes namespace's
//! queues, their messages durable in the store (`queue_message`) until a
//! consumer acknowledges them.
//!
//! A message is sent ([`Store::queue_send`]: a batch, in one transaction,
//! answered only once committed), leased for a delivery
//! ([`Store::queue_lease`]: it is invisible to other leases until the lease
//! ends, and its `attempts` counts the delivery), then settled
//! ([`Store::queue_settle`]: acknowledged ones deleted, retried ones visible
//! again after their delay, dead ones moved to the dead-letter queue or
//! dropped). A process that dies holding a lease only delays its messages
//! by the lease: they are leased again after it (at least once). On a
//! cluster one node delivers a queue: it takes the queue's owner epoch
//! ([`Store::queue_take`]) and fences its leases with it.
//!
//! Limits are Cloudflare's ([`limits`], with its messages); a namespace's
//! backlog is bounded by [`QueueQuota`] when the store has one.

use crate::{Backend, Store, StoreError, blocking};

pub(crate) use crate::queue_limits::over_quota;
pub use crate::queue_limits::{QueueError, QueueQuota, check_sizes, limits};

/// A queue: the Kubernetes namespace it belongs to and its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueScope {
    pub namespace: String,
    pub queue: String,
}

impl QueueScope {
    pub fn new(namespace: impl Into<String>, queue: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            queue: queue.into(),
        }
    }
}

/// One message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSend {
    /// Its body, serialized as `content_type` says.
    pub body: Vec<u8>,
    /// `text`, `json`, `bytes` or `v8`.
    pub content_type: String,
    /// Seconds before it is first delivered.
    pub delay_seconds: u32,
}

/// A message leased for delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueMessage {
    pub id: String,
    /// When it was sent, in ms since the Unix epoch.
    pub timestamp_ms: i64,
    pub body: Vec<u8>,
    pub content_type: String,
    /// Deliveries so far, this one counted (1 at the first).
    pub attempts: u32,
}

/// How a delivered batch ends ([`Store::queue_settle`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueSettle {
    /// Processed: deleted.
    pub acked: Vec<String>,
    /// To deliver again from the time given (ms since the epoch).
    pub retried: Vec<(String, i64)>,
    /// Out of retries: moved to `dead_letter` (of the same namespace), or
    /// deleted without one.
    pub dead: Vec<String>,
    pub dead_letter: Option<String>,
    /// The owner epoch the batch was leased under (`None`: unfenced). A
    /// retry of a message released since to a newer owner
    /// ([`Store::queue_take`]) is not applied: that owner holds it now.
    pub fence: Option<i64>,
}

/// What a queue holds ready for delivery ([`Store::queue_ready`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueReady {
    /// Messages visible now, counted up to the limit asked.
    pub ready: u32,
    /// When the oldest of them became visible (ms).
    pub oldest_ready_ms: Option<i64>,
    /// When the next message becomes visible (ms), ready or not: the
    /// soonest of every message's visibility.
    pub next_visible_ms: Option<i64>,
}

/// What a queue holds in all ([`Store::queue_depth`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueDepth {
    pub messages: u64,
    /// When its oldest message was sent (ms).
    pub oldest_ms: Option<i64>,
}

/// Checks a send of `messages` (one `send` when `batch` is false) against
/// Cloudflare's limits.
pub fn check_send(messages: &[QueueSend], batch: bool) -> Result<(), QueueError> {
    let sizes: Vec<_> = messages
        .iter()
        .map(|m| (m.body.len(), m.delay_seconds))
        .collect();
    check_sizes(&sizes, batch)
}

/// A new message id: 32 random hex digits (as Cloudflare's).
pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // The OS's randomness; without it (never seen), the clock and a counter
    // keep ids unique within this process.
    if getrandom::fill(&mut bytes).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bytes[..8].copy_from_slice(&crate::now_ms().to_le_bytes());
        bytes[8..].copy_from_slice(&n.to_le_bytes());
    }
    hex::encode(bytes)
}

/// The rows a send inserts: id, body, content type, visible-at (ms).
pub(crate) type Row = (String, Vec<u8>, String, i64);

/// `messages` as rows sent at `now` (ms).
pub(crate) fn rows(messages: Vec<QueueSend>, now: i64) -> Vec<Row> {
    messages
        .into_iter()
        .map(|m| {
            let visible = now.saturating_add(i64::from(m.delay_seconds) * 1000);
            (new_id(), m.body, m.content_type, visible)
        })
        .collect()
}

/// A batch of a queue's messages for a Worker's `queue(batch, env, ctx)`
/// handler, run by the engine's `Engine::run` as its `Work::QueueBatch`
/// (delivered by `isolane-node`'s `queues.rs`): the engine calls the
/// handler under the same limits, slots and accounting as a request.
///
/// The answer is a 200 whose body is the batch's outcome as JSON
/// (what `ack()`, `retry()`, `ackAll()` and `retryAll()` said) once the
/// handler resolved, or a 500 with the same body when it threw (after the
/// exception is reported, as an invocation's). Anything else (a limit, a
/// thrown error before the batch was made) answers no outcome: every
/// message is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBatch {
    /// The queue's name (`batch.queue`).
    pub queue: String,
    pub messages: Vec<QueueMessage>,
}

impl QueueBatch {
    /// The path its delivery's tail event shows (the Worker never sees
    /// it): `/__queue/<queue>?batchSize=<messages>` (Cloudflare's tail
    /// event for a queue names `queue` and `batchSize`).
    pub fn tail_path(&self) -> String {
        queue_tail_path(&self.queue, &format!("batchSize={}", self.messages.len()))
    }
}

/// A tail event's path about queue `queue`: `/__queue/<queue>?<query>`.
pub fn queue_tail_path(queue: &str, query: &str) -> String {
    let queue = url::form_urlencoded::byte_serialize(queue.as_bytes()).collect::<String>();
    format!("/__queue/{queue}?{query}")
}

impl Store {
    /// The store with a bound on what each Kubernetes namespace's queues
    /// hold: a send past it is refused with [`QueueError::QuotaExceeded`].
    #[must_use]
    pub fn with_queue_quota(mut self, quota: QueueQuota) -> Self {
        self.queue_quota = Some(quota);
        self
    }

    /// The store with `quota` when there is one ([`QueueQuota::from_flags`]).
    #[must_use]
    pub fn with_queue_quota_if(self, quota: Option<QueueQuota>) -> Self {
        match quota {
            Some(quota) => self.with_queue_quota(quota),
            None => self,
        }
    }

    /// The store keeping a queue message `retention` at most after it was
    /// sent (Cloudflare's `message_retention_period`; 0: for ever):
    /// [`Store::queue_expire`] deletes older ones.
    #[must_use]
    pub fn with_queue_retention(mut self, retention: std::time::Duration) -> Self {
        let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        self.queue_retention_ms = (ms > 0).then_some(ms);
        self
    }

    /// Deletes `scope`'s messages sent longer than the retention ago at
    /// `now` (ms), whatever their state (ready, delayed, retried or leased:
    /// a batch under way still runs, and its settle finds them gone);
    /// answers how many. Nothing without a retention.
    pub async fn queue_expire(&self, scope: QueueScope, now: i64) -> Result<u64, StoreError> {
        let Some(retention) = self.queue_retention_ms else {
            return Ok(0);
        };
        let sent_before = now.saturating_sub(retention);
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.queue_expire(&scope, sent_before)).await
            }
            Backend::Postgres(db) => db.queue_expire(scope, sent_before).await,
        }
    }

    /// Sends `messages` to `scope`'s queue in one transaction (checked
    /// first: a refused batch writes nothing); answers their ids once they
    /// are durable. `batch`: a `sendBatch` (its limits apply).
    pub async fn queue_send(
        &self,
        scope: QueueScope,
        messages: Vec<QueueSend>,
        batch: bool,
    ) -> Result<Vec<String>, StoreError> {
        check_send(&messages, batch)?;
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, crate::StoreData::Queue)?;
        let bytes = messages.iter().map(|m| m.body.len()).sum();
        let (quota, now) = (self.queue_quota, crate::now_ms());
        let rows = rows(messages, now);
        let ids = rows.iter().map(|(id, ..)| id.clone()).collect();
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| {
                    db.queue_send(&scope, &rows, now, quota)
                })
                .await
            }
            Backend::Postgres(db) => db.queue_send(scope, rows, now, quota).await,
        }
        .inspect_err(|e| {
            self.observer
                .refused_by(&namespace, crate::StoreData::Queue, e)
        })?;
        self.observer.tell(
            &namespace,
            crate::StoreData::Queue,
            crate::StoreOp::Write,
            bytes,
        );
        self.queues_changed.send_modify(|n| *n = n.wrapping_add(1));
        Ok(ids)
    }

    /// A receiver that changes each time this process sends or retries a
    /// message (the delivery loop waits on it: nothing sent between two
    /// looks is missed).
    pub fn queue_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.queues_changed.subscribe()
    }

    /// A receiver that changes each time another process sends to
    /// `scope`'s queue (PostgreSQL's `NOTIFY`, listened for on one
    /// connection from the first call); `None` for SQLite, whose only
    /// process's sends change [`Store::queue_changes`]. A change is a
    /// hint: nothing is missed by a loop that also looks every second.
    pub fn queue_wakes(&self, scope: &QueueScope) -> Option<tokio::sync::watch::Receiver<u64>> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(db) => db
                .queue_wakes(scope)
                .inspect_err(|error| {
                    tracing::warn!(%error, "queues: cannot listen for other processes' sends");
                })
                .ok(),
        }
    }

    /// What `scope`'s queue holds ready at `now` (ms), counted up to `max`.
    pub async fn queue_ready(
        &self,
        scope: QueueScope,
        now: i64,
        max: u32,
    ) -> Result<QueueReady, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.queue_ready(&scope, now, max)).await
            }
            Backend::Postgres(db) => db.queue_ready(scope, now, max).await,
        }
    }

    /// Makes `owner` (a node's name, for logs) the process that delivers
    /// `scope`'s queue: increments its owner epoch and returns it. From then
    /// on a lease fenced with an older epoch is refused
    /// ([`QueueError::Fenced`]), so a node that lost the queue on the ring
    /// starts no batch of it after the new owner took it. The messages
    /// leased under an older epoch (a dead owner's batches) are visible
    /// again in the same transaction, as of when they were sent (first in
    /// line): the new owner delivers them without waiting out their lease.
    pub async fn queue_take(&self, scope: QueueScope, owner: String) -> Result<i64, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.queue_take(&scope, &owner)).await
            }
            Backend::Postgres(db) => db.queue_take(scope, owner).await,
        }
    }

    /// Leases up to `max` of the messages visible at `now` (ms), oldest
    /// first, until `until` (ms), counting the delivery in their attempts.
    /// `fence`: the owner epoch the leasing process took
    /// ([`Store::queue_take`]); the lease is refused unless it is still the
    /// queue's. `None`: unfenced (`isolane dev`, the only process).
    pub async fn queue_lease(
        &self,
        scope: QueueScope,
        fence: Option<i64>,
        now: i64,
        until: i64,
        max: u32,
    ) -> Result<Vec<QueueMessage>, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| {
                    db.queue_lease(&scope, fence, now, until, max)
                })
                .await
            }
            Backend::Postgres(db) => db.queue_lease(scope, fence, now, until, max).await,
        }
    }

    /// Settles a delivered batch in one transaction.
    pub async fn queue_settle(
        &self,
        scope: QueueScope,
        settle: QueueSettle,
    ) -> Result<(), StoreError> {
        let (retried, now) = (!settle.retried.is_empty(), crate::now_ms());
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.queue_settle(&scope, &settle, now)).await
            }
            Backend::Postgres(db) => db.queue_settle(scope, settle, now).await,
        }?;
        if retried {
            self.queues_changed.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(())
    }

    /// How many messages `scope`'s queue holds and its oldest one's age.
    pub async fn queue_depth(&self, scope: QueueScope) -> Result<QueueDepth, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, move |db, _| db.queue_depth(&scope)).await,
            Backend::Postgres(db) => db.queue_depth(scope).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(len: usize) -> QueueSend {
        QueueSend {
            body: vec![b'x'; len],
            content_type: "bytes".into(),
            delay_seconds: 0,
        }
    }

    #[test]
    fn cloudflares_limits_with_its_messages() {
        assert_eq!(check_send(&[send(128_000)], false), Ok(()));
        assert_eq!(
            check_send(&[send(128_001)], false).unwrap_err().to_string(),
            "message length of 128001 bytes exceeds limit of 128000"
        );
        assert_eq!(
            check_send(&[send(128_001)], true).unwrap_err().to_string(),
            "message in batch has length 128001 bytes which exceeds single message size limit of 128000"
        );
        let many: Vec<_> = (0..101).map(|_| send(1)).collect();
        assert_eq!(
            check_send(&many, true).unwrap_err().to_string(),
            "batch message count of 101 exceeds limit of 100"
        );
        let big = [send(128_000), send(128_000), send(1)];
        assert_eq!(
            check_send(&big, true).unwrap_err().to_string(),
            "batch size of 256001 bytes exceeds limit of 256000"
        );
        assert_eq!(check_send(&big[..2], true), Ok(()));
    }

    #[test]
    fn a_batch_tails_as_its_queue_and_size() {
        let batch = QueueBatch {
            queue: "jobs".into(),
            messages: vec![],
        };
        assert_eq!(batch.tail_path(), "/__queue/jobs?batchSize=0");
    }

    #[test]
    fn ids_are_unique_hex() {
        let (a, b) = (new_id(), new_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
