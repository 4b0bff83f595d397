//! A Durable Object alarm, run by [`crate::Engine::run`] as a
//! [`crate::Work::Alarm`] (as a cron tick is, `scheduled.rs`): the engine
//! then delivers `alarm(alarmInfo)` to the object, through its input gate
//! like any other event, under the Worker's limits, slots and accounting.
//! The answer is a bodiless 200 once the handler and the writes it made
//! are done, or the usual error (an exception, a limit).

/// One delivery of one object's alarm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmEvent {
    /// The class as the Worker's binding names it (`durableObject.className`).
    pub class: String,
    /// The object's id (64 hex digits).
    pub id: String,
    /// How many deliveries of this alarm failed before
    /// (`alarmInfo.retryCount`; `isRetry` when above 0).
    pub retry_count: u32,
}
