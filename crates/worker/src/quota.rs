//! [`CpuQuotas`]: the CPU quota of a namespace on one engine (a
//! `TenantPolicy`'s `quotas.cpuMsPerSecond`, carried in each Worker's
//! bundle: docs/policy.md), shared by every engine thread: the engine
//! charges it each turn and asks it before a request starts.
//!
//! A leaky bucket per namespace: the CPU its turns use (every turn, as
//! the schedule charges it) fills the bucket, which drains at the quota's
//! rate (`cpuMsPerSecond` CPU-ms each second). While the bucket holds more
//! than one second's worth (the quota), the namespace's new requests are
//! refused at once (the engine's `ExecuteError::QuotaExceeded`: 429 and
//! `Retry-After`: the seconds until it holds less again); requests already
//! running go on, so it may overshoot by what they use. A namespace without
//! a quota never reaches this (a branch on an `Option` on the request's
//! path); one with a quota takes a short lock per request and per turn.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Namespaces remembered before those whose bucket is empty are forgotten.
const KEPT: usize = 256;

/// One namespace's bucket: CPU used and not yet drained, as of `at`, and
/// the quota it drains at (its last charge's).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    held: Duration,
    at: Instant,
    quota_ms: u32,
}

impl Bucket {
    /// The bucket at `now`, drained at `quota_ms` CPU-ms per second.
    fn drained(self, quota_ms: u32, now: Instant) -> Self {
        let elapsed = now.saturating_duration_since(self.at);
        let drained = elapsed.mul_f64(f64::from(quota_ms) / 1000.0);
        Self {
            held: self.held.saturating_sub(drained),
            at: now.max(self.at),
            quota_ms: self.quota_ms,
        }
    }
}

/// The buckets of the namespaces that have a quota.
#[derive(Debug, Default)]
pub struct CpuQuotas {
    buckets: Mutex<HashMap<Box<str>, Bucket>>,
}

impl CpuQuotas {
    /// Whether `namespace` (quota `quota_ms` per second) may start a
    /// request at `now`; `Err` with the seconds to wait when not.
    pub fn admit(&self, namespace: &str, quota_ms: u32, now: Instant) -> Result<(), u32> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let Some(bucket) = buckets.get_mut(namespace) else {
            return Ok(());
        };
        *bucket = bucket.drained(quota_ms, now);
        let capacity = Duration::from_millis(u64::from(quota_ms));
        if bucket.held <= capacity {
            return Ok(());
        }
        let over = bucket.held - capacity;
        let wait = over.as_secs_f64() * 1000.0 / f64::from(quota_ms.max(1));
        Err((wait.ceil() as u32).max(1))
    }

    /// Adds `used` CPU to `namespace`'s bucket at `now`.
    pub fn charge(&self, namespace: &str, quota_ms: u32, used: Duration, now: Instant) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(namespace) && buckets.len() >= KEPT {
            buckets.retain(|_, bucket| !bucket.drained(bucket.quota_ms, now).held.is_zero());
        }
        let bucket = buckets.entry(Box::from(namespace)).or_insert(Bucket {
            held: Duration::ZERO,
            at: now,
            quota_ms,
        });
        *bucket = bucket.drained(quota_ms, now);
        bucket.held += used;
        bucket.quota_ms = quota_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_over_its_quota_waits_while_another_does_not() {
        let quotas = CpuQuotas::default();
        let start = Instant::now();
        let ms = Duration::from_millis;
        // 100 ms per second: a second's worth is admitted.
        assert_eq!(quotas.admit("a", 100, start), Ok(()));
        quotas.charge("a", 100, ms(100), start);
        assert_eq!(quotas.admit("a", 100, start), Ok(()));
        // 350 ms used: 250 over, drained in 2.5 s, so 3 s to wait.
        quotas.charge("a", 100, ms(250), start);
        assert_eq!(quotas.admit("a", 100, start), Err(3));
        assert_eq!(quotas.admit("b", 100, start), Ok(()));
        // Half a second later, 50 ms drained: 2 s.
        assert_eq!(quotas.admit("a", 100, start + ms(500)), Err(2));
        // Once drained to a second's worth, admitted again.
        assert_eq!(quotas.admit("a", 100, start + ms(2500)), Ok(()));
    }

    #[test]
    fn idle_namespaces_are_forgotten() {
        let quotas = CpuQuotas::default();
        let start = Instant::now();
        for n in 0..KEPT {
            quotas.charge(&format!("ns{n}"), 10, Duration::from_millis(1), start);
        }
        quotas.charge("late", 10, Duration::ZERO, start + Duration::from_secs(1));
        let kept = quotas.buckets.lock().unwrap().len();
        assert_eq!(kept, 1);
    }
}
