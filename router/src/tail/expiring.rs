//! A bounded map whose entries expire: the caches of the tail endpoint's
//! reviews ([`super::access`]). Least recently used entries go first when
//! it is full; an expired entry is dropped when it is next looked up (or
//! pushed out). The clock is tokio's, so tests run it paused.

use std::hash::Hash;
use std::num::NonZeroUsize;
use std::time::Duration;

use tokio::time::Instant;

struct Entry<V> {
    value: V,
    until: Instant,
}

/// The map.
pub struct Expiring<K: Hash + Eq, V> {
    entries: lru::LruCache<K, Entry<V>>,
}

impl<K: Hash + Eq, V: Clone> Expiring<K, V> {
    /// A map of at most `capacity` entries.
    pub fn new(capacity: NonZeroUsize) -> Self {
        Self {
            entries: lru::LruCache::new(capacity),
        }
    }

    /// The value under `key` if it has not expired at `now`.
    pub fn get(&mut self, key: &K, now: Instant) -> Option<V> {
        let fresh = self
            .entries
            .get(key)
            .map(|entry| (now < entry.until).then(|| entry.value.clone()));
        match fresh {
            Some(Some(value)) => Some(value),
            Some(None) => {
                self.entries.pop(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` under `key` for `ttl` from `now`.
    pub fn insert(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        let until = now + ttl;
        self.entries.put(key, Entry { value, until });
    }

    /// How many entries are kept (expired ones included until looked up).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

impl<K: Hash + Eq, V> std::fmt::Debug for Expiring<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expiring")
            .field("len", &self.entries.len())
            .field("cap", &self.entries.cap())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn an_entry_lives_for_its_ttl() {
        let mut map = Expiring::new(NonZeroUsize::new(4).unwrap());
        map.insert("a", 1, TTL, Instant::now());
        tokio::time::advance(TTL - Duration::from_millis(1)).await;
        assert_eq!(map.get(&"a", Instant::now()), Some(1));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(map.get(&"a", Instant::now()), None);
        assert_eq!(map.len(), 0, "an expired entry is dropped when looked up");
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_goes_when_full() {
        let mut map = Expiring::new(NonZeroUsize::new(2).unwrap());
        let now = Instant::now();
        map.insert("a", 1, TTL, now);
        map.insert("b", 2, TTL, now);
        assert_eq!(map.get(&"a", now), Some(1));
        map.insert("c", 3, TTL, now);
        assert_eq!(map.get(&"b", now), None);
        assert_eq!(map.get(&"a", now), Some(1));
        assert_eq!(map.get(&"c", now), Some(3));
        assert_eq!(map.len(), 2);
    }
}
