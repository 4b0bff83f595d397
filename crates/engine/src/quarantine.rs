//! [`Quarantine`]: a worker that keeps getting stopped by its limits is
//! refused for a while, so that it cannot cost its thread's other tenants
//! the same stall again and again.
//!
//! Most limits stop a worker within microseconds of being reached: V8 checks
//! for termination at every function entry and loop back edge. A few of its
//! builtins do not (a `fill` of a huge array, a global regexp replace over a
//! huge string): they run to the end, seconds past the limit, and the whole
//! thread waits. Nothing can interrupt them, so the engine bounds how often
//! a worker can do it:
//! - a turn stopped by a limit that kept running more than [`OVERRUN`] of
//!   CPU time past the moment the limit was reached quarantines its worker
//!   at once;
//! - otherwise [`STRIKES`] limit terminations in a row (no successful request
//!   between them) do;
//! - each quarantine lasts twice the previous one, from [`FIRST`] up to
//!   [`LONGEST`]; a worker not quarantined for [`LONGEST`] starts over.
//!
//! While quarantined, the worker's requests are refused at once with
//! `503 quarantined` and a `Retry-After`, without touching its isolate.
//! Per engine thread, like the isolates: a worker runs on one thread.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// CPU time a terminated turn may keep running past its limit before its
/// worker is quarantined at once. An interruptible turn stops within
/// microseconds; this leaves room for the garbage collection that
/// termination may run.
pub(crate) const OVERRUN: Duration = Duration::from_millis(100);

/// Limit terminations in a row that quarantine a worker.
pub(crate) const STRIKES: u32 = 3;

/// The first quarantine.
pub(crate) const FIRST: Duration = Duration::from_secs(10);

/// The longest quarantine.
pub(crate) const LONGEST: Duration = Duration::from_secs(600);

#[derive(Debug, Default)]
struct Record {
    /// Limit terminations since the last success or quarantine.
    strikes: u32,
    /// The current (or last) quarantine's length, if any.
    last: Option<Duration>,
    /// When the current (or last) quarantine ends.
    until: Option<Instant>,
}

/// The quarantine records of one engine thread.
#[derive(Debug, Default)]
pub(crate) struct Quarantine {
    records: HashMap<String, Record>,
}

impl Quarantine {
    /// How long `worker` stays refused, if it is quarantined now.
    pub(crate) fn remaining(&self, worker: &str, now: Instant) -> Option<Duration> {
        // The warm path: almost always nothing to look up.
        if self.records.is_empty() {
            return None;
        }
        let until = self.records.get(worker)?.until?;
        (until > now).then(|| until - now)
    }

    /// A limit stopped one of `worker`'s turns; `overrun` is how much CPU
    /// time the turn used past the moment the limit was reached. Returns
    /// the quarantine this starts, if any.
    pub(crate) fn strike(
        &mut self,
        worker: &str,
        overrun: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let record = self.records.entry(worker.to_owned()).or_default();
        record.strikes += 1;
        if overrun <= OVERRUN && record.strikes < STRIKES {
            return None;
        }
        // A worker that stayed clear of quarantine for `LONGEST` starts over.
        let fresh = record.until.is_none_or(|until| now >= until + LONGEST);
        let length = match record.last {
            Some(last) if !fresh => (last * 2).min(LONGEST),
            _ => FIRST,
        };
        record.strikes = 0;
        record.last = Some(length);
        record.until = Some(now + length);
        Some(length)
    }

    /// One of `worker`'s requests succeeded: its strikes start over.
    pub(crate) fn success(&mut self, worker: &str) {
        if self.records.is_empty() {
            return;
        }
        if let Some(record) = self.records.get_mut(worker) {
            record.strikes = 0;
            if record.until.is_none() {
                self.records.remove(worker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: Duration = Duration::ZERO;

    #[test]
    fn strikes_in_a_row_quarantine_and_a_success_forgives_them() {
        let mut q = Quarantine::default();
        let now = Instant::now();
        assert_eq!(q.strike("w", CLEAN, now), None);
        q.success("w");
        assert_eq!(q.strike("w", CLEAN, now), None);
        assert_eq!(q.strike("w", CLEAN, now), None);
        assert_eq!(q.strike("w", CLEAN, now), Some(FIRST));
        assert_eq!(q.remaining("w", now), Some(FIRST));
        assert_eq!(q.remaining("other", now), None);
        assert_eq!(q.remaining("w", now + FIRST), None);
    }

    #[test]
    fn an_overrun_quarantines_at_once_and_repeats_double() {
        let mut q = Quarantine::default();
        let mut now = Instant::now();
        let overrun = OVERRUN + Duration::from_millis(1);
        let mut expected = FIRST;
        for _ in 0..10 {
            assert_eq!(q.strike("w", overrun, now), Some(expected));
            now += expected;
            expected = (expected * 2).min(LONGEST);
        }
        assert_eq!(expected, LONGEST);
        // Clear for `LONGEST` after the last one ended: back to the first.
        now += LONGEST;
        assert_eq!(q.strike("w", overrun, now), Some(FIRST));
    }
}
