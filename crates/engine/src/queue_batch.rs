//! A batch of a queue's messages for a Worker's `queue(batch, env, ctx)`
//! handler, run by [`crate::Engine::run`] as a [`crate::Work::QueueBatch`]
//! (delivered by `isolane-node`'s `queues.rs`): the engine calls the
//! handler under the same limits, slots and accounting as a request.
//!
//! The answer is a 200 whose body is the batch's outcome as JSON
//! (what `ack()`, `retry()`, `ackAll()` and `retryAll()` said) once the
//! handler resolved, or a 500 with the same body when it threw (after the
//! exception is reported, as an invocation's). Anything else (a limit, a
//! thrown error before the batch was made) answers no outcome: every
//! message is retried.

use isolane_storage::QueueMessage;

/// The messages of one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBatch {
    /// The queue's name (`batch.queue`).
    pub queue: String,
    pub messages: Vec<QueueMessage>,
}
