//! KV's hot keys, cached per node: Cloudflare's consistency model. A read
//! may be answered from this node's cache for up to its `cacheTtl` (60 s by
//! default, as on Cloudflare) after the entry was fetched; a write or a
//! delete through this node drops its key from the cache, so the node that
//! wrote reads its own write at once, and other nodes see it within the
//! TTL. Absent keys are cached too (a read of a missing key costs the
//! database nothing for a TTL), as Cloudflare does.
//!
//! Bounded in bytes, each Kubernetes namespace in a share of them
//! ([`crate::lru::SharedLru`]): one tenant's hot keys never push another's
//! out beyond what the capacity asks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{KvEntry, KvScope};
use crate::lru::{Bounds, Namespaced, SharedLru, Usage};

/// Bytes an entry costs beyond its key, value and metadata.
const ENTRY_OVERHEAD: usize = 96;

/// How long a read may be answered from the cache when it names no
/// `cacheTtl` (Cloudflare's default; its minimum is
/// `limits::MIN_CACHE_TTL_SECS`).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    scope: KvScope,
    key: String,
}

impl Namespaced for CacheKey {
    fn namespace(&self) -> &str {
        &self.scope.namespace
    }
}

struct Cached {
    entry: Option<KvEntry>,
    fetched: Instant,
}

/// The node's cache of KV reads.
pub(crate) struct KvCache {
    map: Mutex<SharedLru<CacheKey, Cached>>,
    /// Writes and deletes through this node so far. A read keeps what it
    /// fetched only if none happened while it ran: a read that raced a
    /// write may have fetched the value the write replaced.
    writes: AtomicU64,
}

impl std::fmt::Debug for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvCache").finish_non_exhaustive()
    }
}

impl KvCache {
    /// A cache of `capacity_bytes`, each Kubernetes namespace in a quarter.
    pub(crate) fn new(capacity_bytes: usize) -> Self {
        Self {
            map: Mutex::new(SharedLru::new(Bounds {
                capacity_bytes,
                namespace_bytes: capacity_bytes / 4,
                namespace_units: usize::MAX,
            })),
            writes: AtomicU64::new(0),
        }
    }

    /// Where writes stand now: what [`KvCache::fill`] is given by a read
    /// that starts now.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// The cached read of `key`, when fetched within `ttl` and not expired
    /// at `now` (seconds since the epoch): `Some(None)` for a cached
    /// absence.
    pub(crate) fn lookup(
        &self,
        scope: &KvScope,
        key: &str,
        ttl: Duration,
        now: u64,
    ) -> Option<Option<KvEntry>> {
        let cache_key = CacheKey {
            scope: scope.clone(),
            key: key.to_owned(),
        };
        let mut map = self.lock();
        let cached = map.get(&cache_key)?;
        let fresh = cached.fetched.elapsed() < ttl
            && cached
                .entry
                .as_ref()
                .and_then(|e| e.expiration)
                .is_none_or(|at| at > now);
        if fresh {
            return Some(cached.entry.clone());
        }
        map.remove(&cache_key);
        None
    }

    /// Keeps a read from the database that started when writes stood at
    /// `writes` (nothing is kept if one happened since).
    pub(crate) fn fill(&self, scope: &KvScope, key: &str, entry: Option<&KvEntry>, writes: u64) {
        let bytes = ENTRY_OVERHEAD
            + scope.namespace.len()
            + scope.kv.len()
            + key.len()
            + entry.map_or(0, |e| {
                e.value.len() + e.metadata.as_ref().map_or(0, String::len)
            });
        let mut map = self.lock();
        if bytes > map.bounds().namespace_bytes || self.writes() != writes {
            return;
        }
        let cache_key = CacheKey {
            scope: scope.clone(),
            key: key.to_owned(),
        };
        let cached = Cached {
            entry: entry.cloned(),
            fetched: Instant::now(),
        };
        map.insert(cache_key, cached, Usage { bytes, units: 1 });
    }

    /// Drops `key` (a write or delete through this node: called before it
    /// starts and after it is done).
    pub(crate) fn forget(&self, scope: &KvScope, key: &str) {
        let cache_key = CacheKey {
            scope: scope.clone(),
            key: key.to_owned(),
        };
        let mut map = self.lock();
        self.writes.fetch_add(1, Ordering::AcqRel);
        map.remove(&cache_key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SharedLru<CacheKey, Cached>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: &str, expiration: Option<u64>) -> KvEntry {
        KvEntry {
            value: value.as_bytes().to_vec(),
            metadata: None,
            expiration,
        }
    }

    #[test]
    fn reads_within_the_ttl_and_not_past_expiration_or_a_local_write() {
        let cache = KvCache::new(1 << 20);
        let a = KvScope::new("team-a", "kv");
        let b = KvScope::new("team-b", "kv");
        let ttl = Duration::from_secs(60);
        assert_eq!(cache.lookup(&a, "k", ttl, 0), None);
        cache.fill(&a, "k", Some(&entry("v", None)), 0);
        cache.fill(&a, "gone", None, 0);
        assert_eq!(cache.lookup(&a, "k", ttl, 0), Some(Some(entry("v", None))));
        assert_eq!(cache.lookup(&a, "gone", ttl, 0), Some(None));
        // Another namespace's same names are not this one's.
        assert_eq!(cache.lookup(&b, "k", ttl, 0), None);
        // Older than the read's TTL: a miss.
        assert_eq!(cache.lookup(&a, "k", Duration::ZERO, 0), None);
        // Past its expiration: a miss.
        cache.fill(&a, "e", Some(&entry("v", Some(100))), 0);
        assert!(cache.lookup(&a, "e", ttl, 99).is_some());
        assert_eq!(cache.lookup(&a, "e", ttl, 100), None);
        // A write here drops the key.
        cache.fill(&a, "k", Some(&entry("v", None)), 0);
        cache.forget(&a, "k");
        assert_eq!(cache.lookup(&a, "k", ttl, 0), None);
        // A read that raced the write keeps nothing.
        cache.fill(&a, "k", Some(&entry("old", None)), 0);
        assert_eq!(cache.lookup(&a, "k", ttl, 0), None);
        cache.fill(&a, "k", Some(&entry("new", None)), cache.writes());
        assert_eq!(
            cache.lookup(&a, "k", ttl, 0),
            Some(Some(entry("new", None)))
        );
    }

    #[test]
    fn one_namespace_cannot_take_more_than_its_share() {
        let cache = KvCache::new(64 << 10);
        let big = "x".repeat(4 << 10);
        for i in 0..100 {
            let hog = KvScope::new("hog", "kv");
            cache.fill(&hog, &format!("k{i}"), Some(&entry(&big, None)), 0);
        }
        cache.fill(&KvScope::new("calm", "kv"), "k", Some(&entry("v", None)), 0);
        let (all, hog) = cache.lock().usage("hog");
        assert!(hog.bytes <= 16 << 10, "{hog:?}");
        assert!(all <= 64 << 10);
        let ttl = Duration::from_secs(60);
        assert!(
            cache
                .lookup(&KvScope::new("calm", "kv"), "k", ttl, 0)
                .is_some()
        );
    }
}
