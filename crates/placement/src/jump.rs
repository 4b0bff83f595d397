//! Thread choice: jump consistent hash.

use crate::hash::thread_key;

/// The thread of a node with `threads` threads that serves `worker_id`.
///
/// Jump consistent hash (Lamping & Veach, 2014) of the worker over the
/// threads: uniform, allocation-free, and when a node grows from `n` to `n + 1`
/// threads only about `1/(n + 1)` of its workers change thread (all of them to
/// the new one). The key is independent of the node choice, so the workers a
/// node receives spread evenly over its threads. A node with no threads has
/// nowhere to run anything; the answer is then 0.
pub fn thread_for(worker_id: &str, threads: u32) -> u32 {
    jump(thread_key(worker_id), threads)
}

/// Jump consistent hash of `key` into `buckets` buckets, in `[0, buckets)`.
///
/// Only integer arithmetic and correctly rounded IEEE-754 operations, so the
/// answer is the same on every platform.
pub(crate) fn jump(mut key: u64, buckets: u32) -> u32 {
    let buckets = i64::from(buckets);
    let mut chosen: i64 = 0;
    let mut next: i64 = 0;
    while next < buckets {
        chosen = next;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        let step = (1u64 << 31) as f64 / ((key >> 33) + 1) as f64;
        next = ((chosen + 1) as f64 * step) as i64;
    }
    // `chosen` < `buckets` ≤ u32::MAX, so this never saturates.
    u32::try_from(chosen).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_in_range() {
        for threads in 1..40 {
            for w in 0..200 {
                assert!(thread_for(&format!("ns/w{w}"), threads) < threads);
            }
        }
        assert_eq!(thread_for("ns/w", 0), 0);
        assert_eq!(thread_for("ns/w", 1), 0);
    }

    #[test]
    fn matches_the_reference_implementation() {
        // Values computed independently from the paper's reference algorithm.
        assert_eq!(jump(0, 1), 0);
        assert_eq!(jump(1, 10), 6);
        assert_eq!(jump(0xdead_beef, 1000), 285);
        assert_eq!(jump(12_345_678_901_234_567, 100_000), 46_958);
        assert_eq!(jump(u64::MAX, 7), 2);
    }
}
