//! Cloudflare Queues in the Worker API: a producer binding (`{name, queue:
//! {name}}` in `spec.bindings`, wrangler's `[[queues.producers]]`) and the
//! queues a Worker consumes (`spec.queueConsumers`, wrangler's
//! `[[queues.consumers]]`), with their defaults and bounds (Cloudflare's).
//!
//! A queue is named by a name only, never a namespace: its messages belong
//! to the Worker's Kubernetes namespace, so Workers of one namespace naming
//! the same queue share it and no Worker reaches another namespace's.
//!
//! The schema (names, ranges) is checked by the apiserver; [`check_consumers`]
//! is the rule on one Worker's consumers (the webhook, the controller and
//! `isolane dev`), [`check_namespace_consumers`] the rule across a namespace's
//! Workers (a queue has at most one consumer).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pattern of a queue's name: 1 to 63 lowercase letters, digits and
/// `-`, starting and ending with a letter or digit (Cloudflare's).
pub const QUEUE_NAME_PATTERN: &str = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";

/// `queue` of a binding: the queue `env.NAME.send()` writes to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueBinding {
    /// The queue, by name (1 to 63 lowercase letters, digits and `-`). Its
    /// messages belong to the Worker's Kubernetes namespace.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    )]
    pub name: String,
    /// The delay, in seconds, of every message this binding sends when
    /// `send()`/`sendBatch()` give no `delaySeconds` (0 to 43200, 12 hours;
    /// default 0), wrangler's `delivery_delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 43200))]
    pub delivery_delay: Option<u32>,
}

impl QueueBinding {
    /// The longest `deliveryDelay`: 12 hours (Cloudflare's).
    pub const MAX_DELIVERY_DELAY: u32 = 43_200;

    /// A binding to queue `name` without a delay of its own.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            delivery_delay: None,
        }
    }

    /// The delay of a message sent without `delaySeconds`, in seconds.
    pub fn delay_seconds(&self) -> u32 {
        self.delivery_delay
            .unwrap_or(0)
            .min(Self::MAX_DELIVERY_DELAY)
    }
}

/// One queue a Worker consumes: its `queue(batch, env, ctx)` handler gets
/// the queue's messages in batches.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.deadLetterQueue) || self.deadLetterQueue != self.queue",
        "message": "deadLetterQueue must be another queue than the one consumed"
    }
]))]
pub struct QueueConsumer {
    /// The queue consumed, by name, in the Worker's namespace. A queue has
    /// at most one consumer Worker in a namespace.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    )]
    pub queue: String,
    /// Messages in one batch at most (1 to 100, default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_batch_size: Option<u32>,
    /// How long a batch waits to fill before it is delivered anyway, in ms
    /// (0 to 60000, default 5000; 0: at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 60000))]
    pub max_batch_timeout_ms: Option<u32>,
    /// How many times a message is retried before it goes to the dead-letter
    /// queue, or is dropped without one (0 to 100, default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub max_retries: Option<u32>,
    /// How long a retried message waits before its next delivery, in seconds
    /// (0 to 86400, default 0), unless `retry({delaySeconds})` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub retry_delay_seconds: Option<u32>,
    /// The queue (of this namespace) a message goes to after `maxRetries`
    /// failed retries; without one it is dropped, with a tail event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    )]
    pub dead_letter_queue: Option<String>,
    /// Batches of this queue delivered at once, at most (1 to 250,
    /// default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 250))]
    pub max_concurrency: Option<u32>,
}

impl QueueConsumer {
    /// Cloudflare's default batch size.
    pub const DEFAULT_MAX_BATCH_SIZE: u32 = 10;
    /// Cloudflare's default batch timeout.
    pub const DEFAULT_MAX_BATCH_TIMEOUT_MS: u32 = 5000;
    /// Cloudflare's default retries.
    pub const DEFAULT_MAX_RETRIES: u32 = 3;
    /// Batches delivered at once when not given.
    pub const DEFAULT_MAX_CONCURRENCY: u32 = 1;

    /// A consumer of `queue` with every default.
    pub fn new(queue: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            max_batch_size: None,
            max_batch_timeout_ms: None,
            max_retries: None,
            retry_delay_seconds: None,
            dead_letter_queue: None,
            max_concurrency: None,
        }
    }

    pub fn batch_size(&self) -> u32 {
        self.max_batch_size
            .unwrap_or(Self::DEFAULT_MAX_BATCH_SIZE)
            .clamp(1, 100)
    }

    pub fn batch_timeout_ms(&self) -> u32 {
        self.max_batch_timeout_ms
            .unwrap_or(Self::DEFAULT_MAX_BATCH_TIMEOUT_MS)
            .min(60_000)
    }

    pub fn retries(&self) -> u32 {
        self.max_retries
            .unwrap_or(Self::DEFAULT_MAX_RETRIES)
            .min(100)
    }

    pub fn retry_delay_seconds(&self) -> u32 {
        self.retry_delay_seconds.unwrap_or(0).min(86_400)
    }

    pub fn concurrency(&self) -> u32 {
        self.max_concurrency
            .unwrap_or(Self::DEFAULT_MAX_CONCURRENCY)
            .clamp(1, 250)
    }
}

/// Why a Worker's queue consumers (or a namespace's) are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error(
        "queue name {queue:?} is invalid (1 to 63 lowercase letters, digits and -, starting and ending with a letter or digit)"
    )]
    InvalidName { queue: String },
    #[error("queue {queue:?} is consumed twice by this Worker")]
    ConsumedTwice { queue: String },
    #[error("queue {queue:?}: deadLetterQueue must be another queue")]
    DeadLetterIsSelf { queue: String },
    #[error("queue {queue:?}: {field} is {value}, out of {min} to {max}")]
    OutOfRange {
        queue: String,
        field: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
    #[error(
        "queue {queue:?} is already consumed by Worker {other:?} of this namespace (a queue has one consumer)"
    )]
    Taken { queue: String, other: String },
}

/// [`QUEUE_NAME_PATTERN`].
pub fn is_queue_name(name: &str) -> bool {
    crate::dns_name::is_dns_label(name)
}

/// Checks one Worker's consumers: names, ranges, each queue once, no
/// dead-letter queue equal to its own queue.
pub fn check_consumers(consumers: &[QueueConsumer]) -> Result<(), QueueError> {
    let mut seen = std::collections::BTreeSet::new();
    for consumer in consumers {
        let queue = || consumer.queue.clone();
        if !is_queue_name(&consumer.queue) {
            return Err(QueueError::InvalidName { queue: queue() });
        }
        if !seen.insert(consumer.queue.as_str()) {
            return Err(QueueError::ConsumedTwice { queue: queue() });
        }
        if let Some(dlq) = &consumer.dead_letter_queue {
            if !is_queue_name(dlq) {
                return Err(QueueError::InvalidName { queue: dlq.clone() });
            }
            if *dlq == consumer.queue {
                return Err(QueueError::DeadLetterIsSelf { queue: queue() });
            }
        }
        let ranges = [
            ("maxBatchSize", consumer.max_batch_size, 1, 100),
            (
                "maxBatchTimeoutMs",
                consumer.max_batch_timeout_ms,
                0,
                60_000,
            ),
            ("maxRetries", consumer.max_retries, 0, 100),
            ("retryDelaySeconds", consumer.retry_delay_seconds, 0, 86_400),
            ("maxConcurrency", consumer.max_concurrency, 1, 250),
        ];
        for (field, value, min, max) in ranges {
            if let Some(value) = value.filter(|v| !(min..=max).contains(v)) {
                return Err(QueueError::OutOfRange {
                    queue: queue(),
                    field,
                    value,
                    min,
                    max,
                });
            }
        }
    }
    Ok(())
}

/// Checks the consumers of a namespace's Workers (name to its consumers),
/// `worker`'s among them: refused when a queue `worker` consumes is consumed
/// by another of them too.
pub fn check_namespace_consumers<'a>(
    worker: &str,
    consumers: &[QueueConsumer],
    others: impl IntoIterator<Item = (&'a str, &'a [QueueConsumer])>,
) -> Result<(), QueueError> {
    let mut taken: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, theirs) in others {
        if name == worker {
            continue;
        }
        for consumer in theirs {
            taken.entry(consumer.queue.as_str()).or_insert(name);
        }
    }
    for consumer in consumers {
        if let Some(other) = taken.get(consumer.queue.as_str()) {
            return Err(QueueError::Taken {
                queue: consumer.queue.clone(),
                other: (*other).to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_cloudflares_rule() {
        for ok in ["q", "my-queue", "a1", &"q".repeat(63)] {
            assert!(is_queue_name(ok), "{ok}");
        }
        for bad in ["", "-q", "q-", "Q", "a_b", "a.b", "ns/q", &"q".repeat(64)] {
            assert!(!is_queue_name(bad), "{bad}");
        }
    }

    #[test]
    fn consumers_are_checked_with_their_bounds() {
        let ok = QueueConsumer {
            max_batch_size: Some(100),
            max_batch_timeout_ms: Some(0),
            dead_letter_queue: Some("dlq".into()),
            ..QueueConsumer::new("jobs")
        };
        assert_eq!(check_consumers(std::slice::from_ref(&ok)), Ok(()));
        assert_eq!(ok.batch_size(), 100);
        assert_eq!(ok.batch_timeout_ms(), 0);
        assert_eq!(ok.retries(), 3);
        let defaults = QueueConsumer::new("jobs");
        assert_eq!(
            (defaults.batch_size(), defaults.batch_timeout_ms()),
            (10, 5000)
        );

        let self_dlq = QueueConsumer {
            dead_letter_queue: Some("jobs".into()),
            ..QueueConsumer::new("jobs")
        };
        assert_eq!(
            check_consumers(&[self_dlq]).unwrap_err().to_string(),
            "queue \"jobs\": deadLetterQueue must be another queue"
        );
        let big = QueueConsumer {
            max_batch_size: Some(101),
            ..QueueConsumer::new("jobs")
        };
        assert_eq!(
            check_consumers(&[big]).unwrap_err().to_string(),
            "queue \"jobs\": maxBatchSize is 101, out of 1 to 100"
        );
        let twice = [QueueConsumer::new("jobs"), QueueConsumer::new("jobs")];
        assert!(matches!(
            check_consumers(&twice),
            Err(QueueError::ConsumedTwice { .. })
        ));
        assert!(matches!(
            check_consumers(&[QueueConsumer::new("Jobs")]),
            Err(QueueError::InvalidName { .. })
        ));
    }

    #[test]
    fn a_queue_has_one_consumer_in_a_namespace() {
        let mine = [QueueConsumer::new("jobs")];
        let theirs = [QueueConsumer::new("jobs")];
        let other = [QueueConsumer::new("mail")];
        assert_eq!(
            check_namespace_consumers("a", &mine, [("b", &other[..]), ("a", &mine[..])]),
            Ok(())
        );
        assert_eq!(
            check_namespace_consumers("a", &mine, [("b", &theirs[..])])
                .unwrap_err()
                .to_string(),
            "queue \"jobs\" is already consumed by Worker \"b\" of this namespace (a queue has one consumer)"
        );
    }
}
