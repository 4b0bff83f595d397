//! Storage operations per Kubernetes namespace, per process
//! ([`crate::Store::with_namespace_ops`]): each namespace has a bucket of
//! `per_second` operations that refills continuously and holds at most one
//! second's worth, so a namespace may burst to its rate and no further. An
//! operation that finds its namespace's bucket empty is refused
//! ([`crate::StoreError::Throttled`]) before it reaches the database: one
//! namespace hammering storage spends only its own operations, and the
//! database pool (and SQLite's one connection) keeps serving the others.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// Buckets kept at most before full ones (idle namespaces) are forgotten.
const KEPT: usize = 4096;

/// The buckets of a process.
#[derive(Debug)]
pub(crate) struct OpsQuota {
    per_second: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl OpsQuota {
    pub(crate) fn new(per_second: u32) -> Self {
        Self {
            per_second: per_second.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The rate, per namespace and second.
    pub(crate) fn per_second(&self) -> u32 {
        self.per_second
    }

    /// Takes one operation of `namespace`'s bucket at `now`: whether there
    /// was one.
    pub(crate) fn take(&self, namespace: &str, now: Instant) -> bool {
        let rate = f64::from(self.per_second);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= KEPT && !buckets.contains_key(namespace) {
            buckets.retain(|_, b| refilled(*b, now, rate) < rate);
        }
        let bucket = buckets.entry(namespace.to_owned()).or_insert(Bucket {
            tokens: rate,
            at: now,
        });
        let tokens = refilled(*bucket, now, rate);
        if tokens < 1.0 {
            *bucket = Bucket { tokens, at: now };
            return false;
        }
        *bucket = Bucket {
            tokens: tokens - 1.0,
            at: now,
        };
        true
    }
}

/// `bucket`'s tokens at `now`, at most one second's worth.
fn refilled(bucket: Bucket, now: Instant, rate: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
    (bucket.tokens + elapsed * rate).min(rate)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_namespace_spends_its_own_bucket_which_refills_at_its_rate() {
        let quota = OpsQuota::new(10);
        let start = Instant::now();
        let taken = (0..25).filter(|_| quota.take("hostile", start)).count();
        assert_eq!(taken, 10, "a burst of one second's worth");
        assert!(
            quota.take("benign", start),
            "another namespace is untouched"
        );
        let later = start + Duration::from_millis(500);
        let taken = (0..25).filter(|_| quota.take("hostile", later)).count();
        assert_eq!(taken, 5, "half a second refills half");
        let much_later = start + Duration::from_secs(60);
        let taken = (0..25)
            .filter(|_| quota.take("hostile", much_later))
            .count();
        assert_eq!(taken, 10, "never more than one second's worth");
    }

    #[test]
    fn idle_namespaces_are_forgotten_when_many() {
        let quota = OpsQuota::new(5);
        let start = Instant::now();
        for i in 0..KEPT {
            assert!(quota.take(&format!("ns-{i}"), start));
        }
        let later = start + Duration::from_secs(1);
        assert!(quota.take("new", later));
        let kept = quota.buckets.lock().unwrap().len();
        assert_eq!(kept, 1, "full buckets dropped, the new one kept");
    }
}
