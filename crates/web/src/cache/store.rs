//! The Cache API's store: one per engine (node), shared by its threads.
//!
//! Entries are keyed by the worker's namespace, the cache's name
//! (`caches.default` or `caches.open(name)`) and the request URL, so a tenant
//! can only ever reach its own namespace's entries, whatever URL it asks for.
//! Under one key, one entry per `Vary` variant. The store is bounded in bytes
//! (least recently used first out), and each namespace in a share of it and
//! in a number of entries, so one tenant filling its share evicts only its
//! own entries (`isolane_storage::lru::SharedLru`, the same bounded map as
//! KV's hot keys). An entry's bytes are everything it holds: body, response
//! headers, the request headers and URL its policy keeps, and a fixed
//! overhead (`policy::ENTRY_OVERHEAD`).
//!
//! What may be stored and for how long is `policy.rs`; how a hit answers a
//! conditional or range request is `conditional.rs`.

mod conditional;
mod policy;

use std::sync::Mutex;
use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_cache_semantics::{BeforeRequest, CachePolicy};
use isolane_engine::api::{CacheConfig, EngineConfig, EngineState};
use isolane_storage::lru::{Bounds, Namespaced, SharedLru, Usage};

pub(crate) use conditional::Answer;
pub(crate) use policy::Refusal;

/// Where an entry lives: whose, which cache, which URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub(crate) namespace: String,
    /// `None` for `caches.default`.
    pub(crate) cache: Option<String>,
    /// Without its fragment.
    pub(crate) url: String,
}

impl Namespaced for CacheKey {
    fn namespace(&self) -> &str {
        &self.namespace
    }
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

/// The node's cache.
pub(crate) struct HttpCache {
    config: CacheConfig,
    /// Each key's variants; an entry's units are its variants.
    store: Mutex<SharedLru<CacheKey, Vec<Variant>>>,
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

impl EngineState for HttpCache {
    fn start(config: &EngineConfig) -> Self {
        Self::new(config.cache)
    }
}

impl HttpCache {
    pub(crate) fn new(config: CacheConfig) -> Self {
        let bounds = Bounds {
            capacity_bytes: config.capacity_bytes,
            namespace_bytes: config.namespace_share(),
            namespace_units: config.namespace_entries.max(1),
        };
        Self {
            config,
            store: Mutex::new(SharedLru::new(bounds)),
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
        // The variant this request would match is replaced; others stay.
        let mut pending = Some(variant);
        store.update(&key, |variants| {
            variants.retain(|old| !varies_alike(&old.policy, request, now));
            variants.extend(pending.take());
            (usage(variants), ())
        });
        if let Some(variant) = pending {
            store.insert(
                key,
                vec![variant],
                Usage {
                    bytes: size,
                    units: 1,
                },
            );
        }
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
        store
            .update(key, |variants| {
                variants.retain(|v| v.expires > now);
                let hit = variants
                    .iter()
                    .find(|v| varies_alike(&v.policy, request, now))
                    .map(|v| {
                        conditional::answer(v.status, &v.status_text, &v.headers, &v.body, request)
                    });
                (usage(variants), hit)
            })
            .flatten()
    }

    /// Removes every variant stored under `key`; whether there was one.
    pub(crate) fn delete(&self, key: &CacheKey) -> bool {
        self.lock()
            .remove(key)
            .is_some_and(|variants| !variants.is_empty())
    }

    /// Bytes held, in all and by `namespace`.
    #[cfg(test)]
    pub(crate) fn usage(&self, namespace: &str) -> (usize, usize) {
        let (all, mine) = self.lock().usage(namespace);
        (all, mine.bytes)
    }

    /// Entries (variants) `namespace` holds.
    #[cfg(test)]
    pub(crate) fn entries(&self, namespace: &str) -> usize {
        self.lock().usage(namespace).1.units
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SharedLru<CacheKey, Vec<Variant>>> {
        // A panic while holding the lock cannot leave the store inconsistent
        // in a way that matters more than losing the cache: keep serving.
        self.store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What `variants` hold together.
fn usage(variants: &[Variant]) -> Usage {
    Usage {
        bytes: variants.iter().map(|v| v.size).sum(),
        units: variants.len(),
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
