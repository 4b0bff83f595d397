//! wrangler's `queues`: `[[queues.producers]]` (`binding`, `queue`,
//! `delivery_delay` in seconds) become queue bindings, `[[queues.consumers]]`
//! the Worker's `spec.queueConsumers` (`max_batch_timeout` in seconds becomes
//! `maxBatchTimeoutMs`). What has no meaning here (a pull consumer, its
//! `visibility_timeout_ms`) is a problem, one line each (docs/wrangler.md).

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Problem;
use isolane_worker::{Binding, QueueBinding, QueueConsumer};

/// `queues`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuesConfig {
    #[serde(default)]
    pub producers: Vec<ProducerConfig>,
    #[serde(default)]
    pub consumers: Vec<ConsumerConfig>,
}

/// `queues.producers[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerConfig {
    pub binding: String,
    pub queue: String,
    pub delivery_delay: Option<u32>,
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
}

/// `queues.consumers[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerConfig {
    pub queue: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub max_batch_size: Option<u32>,
    /// Seconds.
    pub max_batch_timeout: Option<f64>,
    pub max_retries: Option<u32>,
    pub dead_letter_queue: Option<String>,
    pub max_concurrency: Option<u32>,
    /// Seconds.
    pub retry_delay: Option<u32>,
    pub visibility_timeout_ms: Option<IgnoredAny>,
}

/// `queues.producers` as bindings.
pub fn producers(config: &super::Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, producer) in config.queues.producers.iter().enumerate() {
        let mut binding = Binding::queue(&producer.binding, &producer.queue);
        match producer.delivery_delay {
            Some(delay) if delay > QueueBinding::MAX_DELIVERY_DELAY => problems.push(Problem {
                key: format!("queues.producers[{i}].delivery_delay"),
                reason: format!("{delay} is out of 0 to 43200 seconds (12 hours)"),
            }),
            Some(delay) => {
                binding.queue = Some(QueueBinding {
                    delivery_delay: Some(delay),
                    ..QueueBinding::new(&producer.queue)
                });
            }
            None => {}
        }
        bindings.push(binding);
    }
}

/// `queues.consumers` as `spec.queueConsumers` (pull consumers left out).
pub fn consumers(config: &super::Config, problems: &mut Vec<Problem>) -> Vec<QueueConsumer> {
    let mut consumers = Vec::new();
    for (i, consumer) in config.queues.consumers.iter().enumerate() {
        if consumer
            .kind
            .as_deref()
            .is_some_and(|kind| kind != "worker")
        {
            problems.push(Problem {
                key: format!("queues.consumers[{i}].type"),
                reason: "only push consumers (a Worker's queue handler) are supported".into(),
            });
            continue;
        }
        if consumer.visibility_timeout_ms.is_some() {
            problems.push(Problem {
                key: format!("queues.consumers[{i}].visibility_timeout_ms"),
                reason: "a pull consumer's setting".into(),
            });
        }
        // Whole milliseconds of a timeout in seconds (wrangler's unit).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let timeout = consumer
            .max_batch_timeout
            .map(|secs| (secs.clamp(0.0, 3600.0) * 1000.0).round() as u32);
        consumers.push(QueueConsumer {
            max_batch_size: consumer.max_batch_size,
            max_batch_timeout_ms: timeout,
            max_retries: consumer.max_retries,
            retry_delay_seconds: consumer.retry_delay,
            dead_letter_queue: consumer.dead_letter_queue.clone(),
            max_concurrency: consumer.max_concurrency,
            ..QueueConsumer::new(&consumer.queue)
        });
    }
    consumers
}
