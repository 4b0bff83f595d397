//! The Cache API's store: one per engine (node), shared by its threads.
//!
//! Entries are keyed by the worker's namespace, the cache's name
//! (`caches.default` or `caches.open(name)`) and the request URL, so a tenant
//! can only ever reach its own namespace's entries, whatever URL it asks for.
//! Under one key, one entry per `Vary` variant. The store is bounded in bytes
//! (least recently used first out), and each namespace in a share of it and
//! in a number of entries, so one tenant filling its share evicts only its
//! own entries. An entry's bytes are everything it holds: body, response
//! headers, the request headers and URL its policy keeps, and a fixed
//! overhead (`policy::ENTRY_OVERHEAD`).
//!
//! What may be stored and for how long is `policy.rs`; how a hit answers a
//! conditional or range request is `conditional.rs`.

mod conditional;
mod policy;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_cache_semantics::{BeforeRequest, CachePolicy};

pub(crate) use conditional::Answer;
pub(crate) use policy::Refusal;

/// The store's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// Bytes all entries may hold together (bodies, headers, keys).
    pub capacity_bytes: usize,
    /// Bytes one namespace's entries may hold together; also the largest
    /// single entry. 0: a quarter of `capacity_bytes`.
    pub namespace_bytes: usize,
    /// Entries (variants) one namespace may hold together.
    pub namespace_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            capacity_bytes: 128 << 20,
            namespace_bytes: 0,
            namespace_entries: 16_384,
        }
    }
}

impl CacheConfig {
    fn namespace_share(&self) -> usize {
        match self.namespace_bytes {
            0 => self.capacity_bytes / 4,
            n => n.min(self.capacity_bytes),
        }
    }
}

/// Where an entry lives: whose, which cache, which URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub(crate) namespace: String,
    /// `None` for `caches.default`.
    pub(crate) cache: Option<String>,
    /// Without its fragment.
    pub(crate) url: String,
}

impl CacheKey {
    fn size(&self) -> usize {
        self.namespace.len() + self.cache.as_ref().map_or(0, String::len) + self.url.len()
    }
}

/// A stored response.
struct Variant {
    policy: CachePolicy,
    status: StatusCode,
    status_text: String,
    headers: HeaderMap,
    body: Bytes,
    expires: SystemTime,
    size: usize,
}

struct Store {
    entries: lru::LruCache<CacheKey, Vec<Variant>>,
    bytes: usize,
    by_namespace: HashMap<String, Usage>,
}

/// What one namespace holds.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    bytes: usize,
    variants: usize,
}

/// The node's cache.
pub(crate) struct HttpCache {
    config: CacheConfig,
    store: Mutex<Store>,
}

/// A request as the cache sees it: its URL and headers (the method is
/// checked by the caller: only GET is ever stored or matched).
pub(crate) struct CacheRequest {
    pub(crate) uri: http::Uri,
    pub(crate) headers: HeaderMap,
}

/// A response offered to `put`.
pub(crate) struct CacheResponse {
    pub(crate) status: StatusCode,
    pub(crate) status_text: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl HttpCache {
    pub(crate) fn new(config: CacheConfig) -> Self {
        Self {
            config,
            store: Mutex::new(Store {
                entries: lru::LruCache::unbounded(),
                bytes: 0,
                by_namespace: HashMap::new(),
            }),
        }
    }

    /// Stores `response` for `request` under `key`, replacing the variant
    /// the same request would match. `Err` says why it was not stored (the
    /// Cache API resolves anyway, as Cloudflare's does).
    pub(crate) fn put(
        &self,
        key: CacheKey,
        request: &CacheRequest,
        response: CacheResponse,
        now: SystemTime,
    ) -> Result<(), Refusal> {
        let stored = policy::admit(request, response, now)?;
        let size = key.size() + stored.size();
        if size > self.config.namespace_share() {
            return Err(Refusal::TooLarge);
        }
        let variant = Variant {
            size,
            policy: stored.policy,
            status: stored.status,
            status_text: stored.status_text,
            headers: stored.headers,
            body: stored.body,
            expires: stored.expires,
        };
        let mut store = self.lock();
        let namespace = key.namespace.clone();
        // The variant this request would match is replaced; others stay.
        let (mut freed, mut replaced) = (0, 0);
        if let Some(variants) = store.entries.get_mut(&key) {
            variants.retain(|old| {
                let same = varies_alike(&old.policy, request, now);
                if same {
                    freed += old.size;
                    replaced += 1;
                }
                !same
            });
            variants.push(variant);
        } else {
            store.entries.put(key, vec![variant]);
        }
        store.bytes = store.bytes + size - freed;
        let used = store.by_namespace.entry(namespace.clone()).or_default();
        used.bytes = used.bytes + size - freed;
        used.variants = used.variants + 1 - replaced;
        store.evict(
            &namespace,
            self.config.namespace_share(),
            self.config.namespace_entries.max(1),
        );
        store.evict_all(self.config.capacity_bytes);
        Ok(())
    }

    /// The fresh stored response `request` matches, answered as `request`
    /// asks (`If-None-Match`/`If-Modified-Since`: 304; `Range`: 206/416).
    pub(crate) fn lookup(
        &self,
        key: &CacheKey,
        request: &CacheRequest,
        now: SystemTime,
    ) -> Option<Answer> {
        let mut store = self.lock();
        let variants = store.entries.get_mut(key)?;
        let (mut expired, mut gone) = (0, 0);
        variants.retain(|v| {
            let fresh = v.expires > now;
            if !fresh {
                expired += v.size;
                gone += 1;
            }
            fresh
        });
        let hit = variants
            .iter()
            .find(|v| varies_alike(&v.policy, request, now))
            .map(|v| conditional::answer(v.status, &v.status_text, &v.headers, &v.body, request));
        let empty = variants.is_empty();
        if gone > 0 {
            store.release(&key.namespace, expired, gone);
        }
        if empty {
            store.entries.pop(key);
        }
        hit
    }

    /// Removes every variant stored under `key`; whether there was one.
    pub(crate) fn delete(&self, key: &CacheKey) -> bool {
        let mut store = self.lock();
        match store.entries.pop(key) {
            Some(variants) => {
                store.release_all(&key.namespace, &variants);
                !variants.is_empty()
            }
            None => false,
        }
    }

    /// Bytes held, in all and by `namespace`.
    #[cfg(test)]
    pub(crate) fn usage(&self, namespace: &str) -> (usize, usize) {
        let store = self.lock();
        let mine = store.by_namespace.get(namespace).map_or(0, |u| u.bytes);
        (store.bytes, mine)
    }

    /// Entries (variants) `namespace` holds.
    #[cfg(test)]
    pub(crate) fn entries(&self, namespace: &str) -> usize {
        let store = self.lock();
        store.by_namespace.get(namespace).map_or(0, |u| u.variants)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave the store inconsistent
        // in a way that matters more than losing the cache: keep serving.
        self.store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Store {
    fn release(&mut self, namespace: &str, size: usize, variants: usize) {
        self.bytes = self.bytes.saturating_sub(size);
        if let Some(used) = self.by_namespace.get_mut(namespace) {
            used.bytes = used.bytes.saturating_sub(size);
            used.variants = used.variants.saturating_sub(variants);
            if used.variants == 0 {
                self.by_namespace.remove(namespace);
            }
        }
    }

    fn release_all(&mut self, namespace: &str, variants: &[Variant]) {
        let size = variants.iter().map(|v| v.size).sum();
        self.release(namespace, size, variants.len());
    }

    /// Least recently used keys of `namespace` out until it fits `share`
    /// bytes and `most` entries.
    fn evict(&mut self, namespace: &str, share: usize, most: usize) {
        let over = |store: &Self| {
            store
                .by_namespace
                .get(namespace)
                .is_some_and(|u| u.bytes > share || u.variants > most)
        };
        while over(self) {
            let oldest = self
                .entries
                .iter()
                .rev()
                .find(|(key, _)| key.namespace == namespace)
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            if let Some(variants) = self.entries.pop(&oldest) {
                self.release_all(namespace, &variants);
            }
        }
    }

    /// Least recently used keys (anyone's) out until all fit `capacity`.
    fn evict_all(&mut self, capacity: usize) {
        while self.bytes > capacity {
            let Some((key, variants)) = self.entries.pop_lru() else {
                break;
            };
            self.release_all(&key.namespace, &variants);
        }
    }
}

/// Whether `request` selects the same stored variant as the request
/// `policy` was made for (same URL, and the same values of every header the
/// response `Vary`s on).
fn varies_alike(policy: &CachePolicy, request: &CacheRequest, now: SystemTime) -> bool {
    let probe = policy::probe(request);
    match policy.before_request(&probe, now) {
        BeforeRequest::Fresh(_) => true,
        BeforeRequest::Stale { matches, .. } => matches,
    }
}

#[cfg(test)]
mod tests;
