//! A least-recently-used map bounded in bytes, in which each namespace
//! (tenant) holds at most a share: one namespace filling its share evicts
//! only its own entries, and the map as a whole evicts anyone's least
//! recently used. The one implementation behind the node's caches: the
//! Cache API's responses and KV's hot keys.

use std::collections::HashMap;
use std::hash::Hash;

/// A key that belongs to a namespace.
pub trait Namespaced: Hash + Eq + Clone {
    fn namespace(&self) -> &str;
}

/// What an entry (or a namespace) holds: bytes, and units (entries, or the
/// variants under one key).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub bytes: usize,
    pub units: usize,
}

/// The bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes all entries may hold together.
    pub capacity_bytes: usize,
    /// Bytes one namespace's entries may hold together.
    pub namespace_bytes: usize,
    /// Units one namespace's entries may hold together.
    pub namespace_units: usize,
}

struct Slot<V> {
    value: V,
    usage: Usage,
}

/// The map.
pub struct SharedLru<K: Namespaced, V> {
    bounds: Bounds,
    entries: lru::LruCache<K, Slot<V>>,
    bytes: usize,
    by_namespace: HashMap<String, Usage>,
}

impl<K: Namespaced, V> SharedLru<K, V> {
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            entries: lru::LruCache::unbounded(),
            bytes: 0,
            by_namespace: HashMap::new(),
        }
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// The value under `key`, now the most recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|slot| &slot.value)
    }

    /// Stores `value` under `key` (replacing what was there), then evicts
    /// until the namespace fits its share and the map its capacity. A value
    /// larger than a namespace's share is not stored (`false`).
    pub fn insert(&mut self, key: K, value: V, usage: Usage) -> bool {
        self.remove(&key);
        if usage.bytes > self.bounds.namespace_bytes {
            return false;
        }
        let namespace = key.namespace().to_owned();
        self.charge(&namespace, usage);
        self.entries.put(key, Slot { value, usage });
        self.evict(&namespace);
        true
    }

    /// Changes the value under `key` in place (now the most recently used);
    /// `change` returns what it holds afterwards. One left holding nothing
    /// (no units) is removed. Evicts as [`SharedLru::insert`] does.
    pub fn update<T>(&mut self, key: &K, change: impl FnOnce(&mut V) -> (Usage, T)) -> Option<T> {
        let slot = self.entries.get_mut(key)?;
        let before = slot.usage;
        let (after, answer) = change(&mut slot.value);
        slot.usage = after;
        let namespace = key.namespace().to_owned();
        self.release(&namespace, before);
        self.charge(&namespace, after);
        if after.units == 0 {
            self.remove(key);
        } else {
            self.evict(&namespace);
        }
        Some(answer)
    }

    /// Removes the value under `key`.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let slot = self.entries.pop(key)?;
        self.release(key.namespace(), slot.usage);
        Some(slot.value)
    }

    /// Bytes held, in all and by `namespace`.
    pub fn usage(&self, namespace: &str) -> (usize, Usage) {
        let mine = self
            .by_namespace
            .get(namespace)
            .copied()
            .unwrap_or_default();
        (self.bytes, mine)
    }

    fn charge(&mut self, namespace: &str, usage: Usage) {
        self.bytes += usage.bytes;
        let used = self.by_namespace.entry(namespace.to_owned()).or_default();
        used.bytes += usage.bytes;
        used.units += usage.units;
    }

    fn release(&mut self, namespace: &str, usage: Usage) {
        self.bytes = self.bytes.saturating_sub(usage.bytes);
        if let Some(used) = self.by_namespace.get_mut(namespace) {
            used.bytes = used.bytes.saturating_sub(usage.bytes);
            used.units = used.units.saturating_sub(usage.units);
            if used.units == 0 && used.bytes == 0 {
                self.by_namespace.remove(namespace);
            }
        }
    }

    /// `namespace`'s least recently used out until it fits its share, then
    /// anyone's until all fit the capacity.
    fn evict(&mut self, namespace: &str) {
        let bounds = self.bounds;
        let over = |map: &Self| {
            map.by_namespace.get(namespace).is_some_and(|u| {
                u.bytes > bounds.namespace_bytes || u.units > bounds.namespace_units
            })
        };
        while over(self) {
            let oldest = self
                .entries
                .iter()
                .rev()
                .find(|(key, _)| key.namespace() == namespace)
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            self.remove(&oldest);
        }
        while self.bytes > bounds.capacity_bytes {
            let Some((key, slot)) = self.entries.pop_lru() else {
                break;
            };
            self.release(key.namespace(), slot.usage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Key(&'static str, u32);

    impl Namespaced for Key {
        fn namespace(&self) -> &str {
            self.0
        }
    }

    fn map() -> SharedLru<Key, u32> {
        SharedLru::new(Bounds {
            capacity_bytes: 100,
            namespace_bytes: 40,
            namespace_units: 3,
        })
    }

    fn bytes(n: usize) -> Usage {
        Usage { bytes: n, units: 1 }
    }

    #[test]
    fn a_namespace_over_its_share_evicts_only_its_own_least_recent() {
        let mut map = map();
        map.insert(Key("b", 0), 0, bytes(30));
        for i in 0..3 {
            map.insert(Key("a", i), i, bytes(15));
        }
        // a holds 30 (a0 went at 45 > 40); b untouched.
        assert_eq!(map.get(&Key("a", 0)), None);
        assert_eq!(map.get(&Key("b", 0)), Some(&0));
        assert_eq!(
            map.usage("a").1,
            Usage {
                bytes: 30,
                units: 2
            }
        );
        // Units too: four small entries keep three.
        for i in 10..14 {
            map.insert(Key("c", i), i, bytes(1));
        }
        assert_eq!(map.usage("c").1.units, 3);
        assert_eq!(map.get(&Key("c", 10)), None);
        // Larger than a share: not stored.
        assert!(!map.insert(Key("d", 0), 0, bytes(41)));
    }

    #[test]
    fn the_capacity_evicts_anyones_least_recent_and_updates_recharge() {
        let mut map = map();
        for (i, ns) in ["a", "b", "c"].into_iter().enumerate() {
            map.insert(Key(ns, 0), 0, bytes(30));
            assert_eq!(map.usage(ns).0, 30 * (i + 1));
        }
        map.get(&Key("a", 0));
        map.insert(Key("d", 0), 0, bytes(30));
        // 120 > 100: b (least recent) went, a stayed.
        assert_eq!(map.get(&Key("b", 0)), None);
        assert_eq!(map.get(&Key("a", 0)), Some(&0));
        assert_eq!(map.update(&Key("a", 0), |v| (bytes(5), *v + 1)), Some(1));
        assert_eq!(map.usage("a").1.bytes, 5);
        map.update(&Key("a", 0), |_| (Usage::default(), ()));
        assert_eq!(map.get(&Key("a", 0)), None);
        assert_eq!(map.usage("a").1, Usage::default());
        assert_eq!(map.remove(&Key("d", 0)), Some(0));
        assert_eq!(map.usage("x").0, 30);
    }
}
