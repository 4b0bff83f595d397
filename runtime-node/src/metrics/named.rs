//! The keys (a workflow, a queue) a family of per-tenant gauges has series
//! for: the first [`Named::new`]'s `max` this node set, so the labels stay
//! bounded whatever tenants make. A key dropped ([`Named::forget`]) frees
//! its place.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

/// The keys with series, at most `max` of them.
#[derive(Debug)]
pub(super) struct Named<K> {
    max: usize,
    keys: Mutex<HashSet<K>>,
}

impl<K: Clone + Eq + Hash> Named<K> {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            keys: Mutex::new(HashSet::new()),
        }
    }

    /// Whether `key` has series: it had, or there is room for it (it is
    /// counted from now on).
    pub(super) fn admit(&self, key: &K) -> bool {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if keys.contains(key) {
            return true;
        }
        if keys.len() >= self.max {
            return false;
        }
        keys.insert(key.clone())
    }

    /// Drops `key`; whether it had series.
    pub(super) fn forget(&self, key: &K) -> bool {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }

    /// The keys with series now.
    pub(super) fn all(&self) -> Vec<K> {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keys_have_series_until_forgotten() {
        let named = Named::new(2);
        assert!(named.admit(&"a") && named.admit(&"b") && named.admit(&"a"));
        assert!(!named.admit(&"c"));
        assert!(named.forget(&"a") && !named.forget(&"a"));
        assert!(named.admit(&"c"));
        let mut all = named.all();
        all.sort_unstable();
        assert_eq!(all, ["b", "c"]);
    }
}
