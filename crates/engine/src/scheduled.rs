//! A cron tick for a worker's `scheduled` handler, run by
//! [`crate::Engine::run`] as a [`crate::Work::Scheduled`]: the engine
//! then calls `scheduled(controller, env, ctx)` (or dispatches a
//! `ScheduledEvent` to a service worker) instead of `fetch`, under the same
//! limits, slots and accounting as a request. The answer is a bodiless 200
//! when the handler succeeded, or the usual error (an exception, a limit).

/// One tick of one of the worker's cron schedules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledEvent {
    /// The schedule that fired, as written in the Worker (`controller.cron`).
    pub cron: String,
    /// When the tick was due, in milliseconds since the Unix epoch
    /// (`controller.scheduledTime`); the same for every attempt at that
    /// tick, so a handler can de-duplicate by it.
    pub scheduled_time_ms: i64,
}
