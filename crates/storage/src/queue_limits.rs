//! Cloudflare Queues' limits on what is sent, with its messages, and a
//! namespace's queue quota ([`crate::queue`]'s rules, kept apart so that
//! the store's error type can name them).

/// Cloudflare's limits on what is sent (1 KB is 1000 bytes, as
/// Cloudflare counts).
pub mod limits {
    /// Bytes of one message's body, at most.
    pub const MAX_MESSAGE_BYTES: usize = 128_000;
    /// Bytes of one `sendBatch`, at most.
    pub const MAX_BATCH_BYTES: usize = 256_000;
    /// Messages of one `sendBatch`, at most.
    pub const MAX_BATCH_MESSAGES: usize = 100;
    /// A send's or a retry's delay, at most (24 hours).
    pub const MAX_DELAY_SECONDS: u32 = 86_400;
}

/// What one Kubernetes namespace's queues may hold, in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueQuota {
    pub messages: u64,
    pub bytes: u64,
}

impl QueueQuota {
    /// The quota of `max_messages` messages and `max_mib` MiB (the flags'
    /// `--queue-namespace-max-messages` and `--queue-namespace-max-mib`),
    /// 0 meaning no bound on that one; `None` when neither bounds.
    pub fn from_flags(max_messages: u64, max_mib: u64) -> Option<Self> {
        let or_none = |n: u64| if n == 0 { u64::MAX } else { n };
        (max_messages > 0 || max_mib > 0).then(|| Self {
            messages: or_none(max_messages),
            bytes: or_none(max_mib.saturating_mul(1 << 20)),
        })
    }
}

/// Why a send is refused; the messages are Cloudflare's (its queue broker's,
/// as `wrangler dev` shows them) where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error("message length of {len} bytes exceeds limit of {max}", max = limits::MAX_MESSAGE_BYTES)]
    MessageTooLarge { len: usize },
    #[error(
        "message in batch has length {len} bytes which exceeds single message size limit of {max}",
        max = limits::MAX_MESSAGE_BYTES
    )]
    BatchMessageTooLarge { len: usize },
    #[error("batch message count of {count} exceeds limit of {max}", max = limits::MAX_BATCH_MESSAGES)]
    BatchTooMany { count: usize },
    #[error("batch size of {len} bytes exceeds limit of {max}", max = limits::MAX_BATCH_BYTES)]
    BatchTooLarge { len: usize },
    #[error("delaySeconds of {delay} exceeds limit of {max}", max = limits::MAX_DELAY_SECONDS)]
    DelayTooLong { delay: u32 },
    #[error(
        "Storage Limit Exceeded: this namespace's queues hold {messages} messages and {bytes} bytes; the quota is {max_messages} messages and {max_bytes} bytes"
    )]
    QuotaExceeded {
        messages: u64,
        bytes: u64,
        max_messages: u64,
        max_bytes: u64,
    },
    /// A lease by a process that is no longer the queue's owner
    /// ([`crate::Store::queue_take`]): another took it since.
    #[error(
        "this process is no longer the queue's owner (its epoch is {mine}, the queue's {current})"
    )]
    Fenced { mine: i64, current: i64 },
}

/// `queue::check_send` on each message's body length and delay, before its
/// bytes are copied anywhere.
pub fn check_sizes(messages: &[(usize, u32)], batch: bool) -> Result<(), QueueError> {
    if batch && messages.len() > limits::MAX_BATCH_MESSAGES {
        return Err(QueueError::BatchTooMany {
            count: messages.len(),
        });
    }
    let mut total = 0usize;
    for &(len, delay) in messages {
        if len > limits::MAX_MESSAGE_BYTES {
            return Err(if batch {
                QueueError::BatchMessageTooLarge { len }
            } else {
                QueueError::MessageTooLarge { len }
            });
        }
        if delay > limits::MAX_DELAY_SECONDS {
            return Err(QueueError::DelayTooLong { delay });
        }
        total = total.saturating_add(len);
    }
    if batch && total > limits::MAX_BATCH_BYTES {
        return Err(QueueError::BatchTooLarge { len: total });
    }
    Ok(())
}

/// Whether a send of `count` messages and `bytes` bytes onto what a
/// namespace holds goes past `quota`.
pub(crate) fn over_quota(
    quota: Option<QueueQuota>,
    held: (i64, i64),
    count: usize,
    bytes: usize,
) -> Result<(), QueueError> {
    let Some(quota) = quota else {
        return Ok(());
    };
    let messages = u64::try_from(held.0).unwrap_or(0);
    let stored = u64::try_from(held.1).unwrap_or(0);
    if messages + count as u64 > quota.messages || stored + bytes as u64 > quota.bytes {
        return Err(QueueError::QuotaExceeded {
            messages,
            bytes: stored,
            max_messages: quota.messages,
            max_bytes: quota.bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_of_zero_bounds_nothing() {
        assert_eq!(QueueQuota::from_flags(0, 0), None);
        let quota = QueueQuota::from_flags(5, 0).unwrap();
        assert_eq!((quota.messages, quota.bytes), (5, u64::MAX));
        assert_eq!(QueueQuota::from_flags(0, 2).unwrap().bytes, 2 << 20);
        assert!(over_quota(Some(quota), (5, 0), 1, 1).is_err());
        assert!(over_quota(Some(quota), (4, i64::MAX), 1, 1).is_ok());
    }
}
