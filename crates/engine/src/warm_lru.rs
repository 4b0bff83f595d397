//! The eviction policy of one engine thread's warm isolates, apart from the
//! isolates themselves, so that the fleet simulator (`isolane-bench fleet`)
//! runs the very policy the engine does.
//!
//! Entries are keyed by worker id and revision and kept in recency order.
//! Three rules, applied in this order:
//! - a worker keeps at most [`REVISIONS_PER_WORKER`] revisions warm; a
//!   further one evicts the worker's least recently used revision
//!   (`revision_replaced`);
//! - at `capacity` entries, inserting evicts the least recently used entry
//!   of any worker (`capacity`);
//! - after a request, when the entries' heap bytes together exceed
//!   `heap_budget`, the least recently used entries go until they fit, never
//!   the entry that just served (`memory`).
//!
//! Lookups and inserts cost O(1) (a hash map with a recency list); a memory
//! eviction walks from the least recently used end.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use lru::LruCache;

use crate::observer::EvictionReason;

/// How many revisions of one worker a thread keeps warm at once. A traffic
/// split sends a worker's requests to two or three revisions, and a rollback
/// returns to one that served a moment ago; a fourth evicts the one used
/// least recently (`revision_replaced`).
pub const REVISIONS_PER_WORKER: usize = 3;

/// An entry that left, and why.
pub type Evicted = (String, EvictionReason);

/// A warm entry's place: worker id and revision.
#[derive(Debug, Clone)]
struct Slot {
    id: String,
    revision: String,
}

/// A slot as owned ([`Slot`]) or borrowed (`(&str, &str)`), so a lookup
/// needs no allocation.
trait SlotKey {
    fn id(&self) -> &str;
    fn revision(&self) -> &str;
}

impl SlotKey for Slot {
    fn id(&self) -> &str {
        &self.id
    }
    fn revision(&self) -> &str {
        &self.revision
    }
}

impl SlotKey for (&str, &str) {
    fn id(&self) -> &str {
        self.0
    }
    fn revision(&self) -> &str {
        self.1
    }
}

impl Hash for dyn SlotKey + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id().hash(state);
        self.revision().hash(state);
    }
}

impl PartialEq for dyn SlotKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id() && self.revision() == other.revision()
    }
}

impl Eq for dyn SlotKey + '_ {}

impl Hash for Slot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self as &dyn SlotKey).hash(state);
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.revision == other.revision
    }
}

impl Eq for Slot {}

impl<'a> Borrow<dyn SlotKey + 'a> for Slot {
    fn borrow(&self) -> &(dyn SlotKey + 'a) {
        self
    }
}

struct Entry<V> {
    value: V,
    /// When it was last used: orders a worker's revisions.
    last_used: u64,
    heap_bytes: usize,
}

/// A thread's warm entries and the rules that evict them. `V` is what the
/// caller keeps per entry (the engine: the isolate).
pub struct WarmLru<V> {
    capacity: usize,
    heap_budget: usize,
    /// Most recently used first.
    entries: LruCache<Slot, Entry<V>>,
    /// Worker id → its warm revisions.
    revisions: HashMap<String, Vec<String>>,
    /// The sum of the entries' `heap_bytes`.
    heap_bytes: usize,
    tick: u64,
}

impl<V> WarmLru<V> {
    /// At most `capacity` entries (at least 1), evicted down to
    /// `heap_budget` bytes after each request.
    pub fn new(capacity: usize, heap_budget: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            heap_budget,
            entries: LruCache::unbounded(),
            revisions: HashMap::new(),
            heap_bytes: 0,
            tick: 0,
        }
    }

    /// The entry for this worker revision, now the most recently used.
    pub fn get(&mut self, id: &str, revision: &str) -> Option<&mut V> {
        self.tick += 1;
        let key: &dyn SlotKey = &(id, revision);
        let entry = self.entries.get_mut(key)?;
        entry.last_used = self.tick;
        Some(&mut entry.value)
    }

    /// The entry for this worker revision, its recency unchanged.
    pub fn peek_mut(&mut self, id: &str, revision: &str) -> Option<&mut V> {
        let key: &dyn SlotKey = &(id, revision);
        self.entries.peek_mut(key).map(|e| &mut e.value)
    }

    /// Adds an entry of `heap_bytes` as the most recently used, replacing
    /// the same revision if present, evicting the worker's least recently
    /// used revision when it has [`REVISIONS_PER_WORKER`] already and the
    /// least recently used of all while at capacity.
    pub fn insert(
        &mut self,
        id: &str,
        revision: &str,
        value: V,
        heap_bytes: usize,
        evicted: &mut Vec<Evicted>,
    ) {
        self.remove(id, revision);
        if let Some(oldest) = self.oldest_revision(id) {
            self.remove(id, &oldest);
            evicted.push((id.to_owned(), EvictionReason::RevisionReplaced));
        }
        while self.entries.len() >= self.capacity {
            let Some((slot, entry)) = self.entries.pop_lru() else {
                break;
            };
            self.forget(&slot, entry.heap_bytes);
            evicted.push((slot.id, EvictionReason::Capacity));
        }
        self.tick += 1;
        let slot = Slot {
            id: id.to_owned(),
            revision: revision.to_owned(),
        };
        self.entries.put(
            slot,
            Entry {
                value,
                last_used: self.tick,
                heap_bytes,
            },
        );
        self.revisions
            .entry(id.to_owned())
            .or_default()
            .push(revision.to_owned());
        self.heap_bytes += heap_bytes;
    }

    /// Records what this entry now holds, then evicts the least recently
    /// used others until the heap budget holds (or only it is left).
    pub fn set_heap_bytes(
        &mut self,
        id: &str,
        revision: &str,
        heap_bytes: usize,
        evicted: &mut Vec<Evicted>,
    ) {
        let key: &dyn SlotKey = &(id, revision);
        let Some(entry) = self.entries.peek_mut(key) else {
            return;
        };
        self.heap_bytes = self.heap_bytes - entry.heap_bytes + heap_bytes;
        entry.heap_bytes = heap_bytes;
        while self.heap_bytes > self.heap_budget {
            let Some(victim) = self
                .entries
                .iter()
                .rev()
                .map(|(slot, _)| slot)
                .find(|slot| slot.id != id || slot.revision != revision)
                .cloned()
            else {
                break;
            };
            self.remove(&victim.id, &victim.revision);
            evicted.push((victim.id, EvictionReason::Memory));
        }
    }

    /// Removes this worker revision's entry.
    pub fn remove(&mut self, id: &str, revision: &str) -> Option<V> {
        let key: &dyn SlotKey = &(id, revision);
        let (slot, entry) = self.entries.pop_entry(key)?;
        self.forget(&slot, entry.heap_bytes);
        Some(entry.value)
    }

    /// Removes every revision of worker `id`.
    pub fn remove_worker(&mut self, id: &str) -> Vec<V> {
        let revisions = self.revisions.get(id).cloned().unwrap_or_default();
        revisions
            .iter()
            .filter_map(|revision| self.remove(id, revision))
            .collect()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The heap bytes the entries last reported, together.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes
    }

    /// Removes every entry.
    pub fn drain(&mut self) -> Vec<V> {
        self.revisions.clear();
        self.heap_bytes = 0;
        let mut all = Vec::with_capacity(self.entries.len());
        while let Some((_, entry)) = self.entries.pop_lru() {
            all.push(entry.value);
        }
        all
    }

    /// The revision of `id` to replace before adding one more.
    fn oldest_revision(&self, id: &str) -> Option<String> {
        let revisions = self.revisions.get(id)?;
        if revisions.len() < REVISIONS_PER_WORKER {
            return None;
        }
        revisions
            .iter()
            .filter_map(|r| {
                let key: &dyn SlotKey = &(id, r.as_str());
                self.entries.peek(key).map(|e| (e.last_used, r))
            })
            .min_by_key(|(used, _)| *used)
            .map(|(_, r)| r.clone())
    }

    /// Bookkeeping after `slot` left `entries`.
    fn forget(&mut self, slot: &Slot, heap_bytes: usize) {
        self.heap_bytes -= heap_bytes;
        if let Some(revisions) = self.revisions.get_mut(&slot.id) {
            revisions.retain(|r| *r != slot.revision);
            if revisions.is_empty() {
                self.revisions.remove(&slot.id);
            }
        }
    }
}

#[cfg(test)]
mod tests;
