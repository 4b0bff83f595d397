//! Which of one engine thread's isolates stay warm, apart from the isolates
//! themselves, so that the fleet simulator (`isolane-bench fleet`) runs the
//! very policy the engine does.
//!
//! Entries are keyed by worker id and revision, each weighing its heap
//! bytes, and held within a weight budget by `quick_cache`'s CLOCK-Pro
//! admission: a new entry starts *cold* and stays only if it is used again
//! before the cold queue turns over; entries used since the clock last passed
//! them go *hot*; and the recently evicted are remembered as *ghosts*, so one
//! that returns soon comes back hot. Under skewed traffic (Zipf), this keeps
//! the Workers that are asked for again and again warm through bursts of
//! Workers seen once, where least-recently-used let each of those push a hot
//! one out: at 200 isolates for 10,000 Zipf(1.1) Workers, 70 % of requests
//! find their isolate against 61 % (the test `beats_lru_under_zipf_traffic`,
//! and docs/engine.md, "Which isolates stay warm").
//!
//! Three rules:
//! - a worker keeps at most [`REVISIONS_PER_WORKER`] revisions warm; a
//!   further one evicts the worker's least recently used revision
//!   (`revision_replaced`);
//! - an entry weighs its heap bytes, but at least `heap_budget / capacity`,
//!   so no more than `capacity` entries fit; inserting evicts by the policy
//!   above until the new entry fits (`capacity`);
//! - when an entry's heap grows past the budget, the policy evicts others
//!   until the entries fit again (`memory`).
//!
//! An entry that is in use ([`InUse`]: a request runs in the isolate) is
//! never evicted; neither is the entry whose weight just changed, so the
//! isolate that just served stays even when it alone is over budget.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use quick_cache::{
    DefaultHashBuilder, Equivalent, Lifecycle, OptionsBuilder, Weighter, unsync::Cache,
};

use crate::observer::EvictionReason;

/// How many revisions of one worker a thread keeps warm at once. A traffic
/// split sends a worker's requests to two or three revisions, and a rollback
/// returns to one that served a moment ago; a fourth evicts the one used
/// least recently (`revision_replaced`).
pub const REVISIONS_PER_WORKER: usize = 3;

/// The share of the budget for entries used again since they came (hot);
/// the rest is for new ones on trial (cold). A single entry heavier than
/// this share is turned away unless it is in use. quick_cache's default.
pub const HOT_SHARE: f64 = 0.97;

/// The heap of an idle isolate, roughly (docs/engine.md): how many entries
/// a budget without a count holds, to size what the policy remembers.
const ENTRY_GUESS: u64 = 1 << 20;

/// An entry that left, and why.
pub type Evicted = (String, EvictionReason);

/// Whether a warm entry is in use and must not be evicted now.
pub trait InUse {
    fn in_use(&self) -> bool {
        false
    }
}

impl InUse for () {}

/// A warm entry's place: worker id and revision.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    id: String,
    revision: String,
}

impl Hash for Slot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        SlotRef(&self.id, &self.revision).hash(state);
    }
}

/// A slot as borrowed, so a lookup needs no allocation.
#[derive(Hash)]
struct SlotRef<'a>(&'a str, &'a str);

impl Equivalent<Slot> for SlotRef<'_> {
    fn equivalent(&self, key: &Slot) -> bool {
        self.0 == key.id && self.1 == key.revision
    }
}

struct Entry<V> {
    value: V,
    /// When it was last used: orders a worker's revisions.
    last_used: Cell<u64>,
    heap_bytes: usize,
    /// Its weight is being changed after a request: it stays.
    serving: Cell<bool>,
}

/// An entry's weight: its heap bytes, at least the floor that bounds how
/// many fit, and never 0 (the cache keeps 0-weight entries unevictable).
#[derive(Clone)]
struct ByHeap {
    floor: u64,
}

impl<V> Weighter<Slot, Entry<V>> for ByHeap {
    fn weight(&self, _: &Slot, entry: &Entry<V>) -> u64 {
        (entry.heap_bytes as u64).max(self.floor).max(1)
    }
}

/// What the cache evicted since the last look.
type Gone<V> = Rc<RefCell<Vec<(Slot, Entry<V>)>>>;

/// Collects what the cache evicts, for the caller to account and drop
/// outside the cache.
struct Notes<V> {
    evicted: Gone<V>,
}

impl<V> Clone for Notes<V> {
    fn clone(&self) -> Self {
        Self {
            evicted: self.evicted.clone(),
        }
    }
}

impl<V: InUse> Lifecycle<Slot, Entry<V>> for Notes<V> {
    type RequestState = ();

    fn is_pinned(&self, _: &Slot, entry: &Entry<V>) -> bool {
        entry.serving.get() || entry.value.in_use()
    }

    fn on_evict(&self, _: &mut (), slot: Slot, entry: Entry<V>) {
        self.evicted.borrow_mut().push((slot, entry));
    }
}

type Entries<V> = Cache<Slot, Entry<V>, ByHeap, DefaultHashBuilder, Notes<V>>;

/// A thread's warm entries and the rules that evict them. `V` is what the
/// caller keeps per entry (the engine: the isolate).
pub struct WarmSet<V: InUse> {
    budget: u64,
    /// The least an entry weighs (`ByHeap`).
    floor: u64,
    entries: Entries<V>,
    notes: Gone<V>,
    /// Worker id → its warm revisions.
    revisions: HashMap<String, Vec<String>>,
    /// The sum of the entries' `heap_bytes`.
    heap_bytes: usize,
    tick: u64,
}

impl<V: InUse> WarmSet<V> {
    /// At most `capacity` entries (at least 1) of `heap_budget` bytes
    /// together.
    pub fn new(capacity: usize, heap_budget: usize) -> Self {
        let capacity = capacity.max(1);
        // Bounded so that the cache's sums of weights cannot overflow.
        let budget = (heap_budget as u64).clamp(1, 1 << 60);
        // `capacity` entries of the floor fill the budget as entries of
        // `budget / capacity` bytes would (so a count bound and the same
        // memory bound decide alike), one more overruns it; one entry alone
        // still fits the hot share.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let hot = (budget as f64 * HOT_SHARE) as u64;
        let floor = (budget / capacity as u64).min(hot).max(1);
        // How many entries to expect, which sizes the remembered evictions.
        let estimate = match capacity {
            usize::MAX => budget / ENTRY_GUESS,
            _ => capacity as u64,
        };
        let estimate = usize::try_from(estimate.clamp(1, 1 << 20)).unwrap_or(1 << 20);
        let notes = Rc::new(RefCell::new(Vec::new()));
        let lifecycle = Notes {
            evicted: notes.clone(),
        };
        let options = OptionsBuilder::new()
            .estimated_items_capacity(estimate)
            .weight_capacity(budget)
            .hot_allocation(HOT_SHARE)
            .build();
        let weigher = ByHeap { floor };
        let hasher = DefaultHashBuilder::default();
        let entries = match options {
            Ok(options) => Cache::with_options(options, weigher, hasher, lifecycle),
            // Not reached: both required options are set.
            Err(_) => Cache::with(estimate, budget, weigher, hasher, lifecycle),
        };
        Self {
            budget,
            floor,
            entries,
            notes,
            revisions: HashMap::new(),
            heap_bytes: 0,
            tick: 0,
        }
    }

    /// The entry for this worker revision, now marked as used.
    pub fn get(&mut self, id: &str, revision: &str) -> Option<&V> {
        self.tick += 1;
        let entry = self.entries.get(&SlotRef(id, revision))?;
        entry.last_used.set(self.tick);
        Some(&entry.value)
    }

    /// The entry for this worker revision, its standing unchanged.
    pub fn peek(&self, id: &str, revision: &str) -> Option<&V> {
        self.entries.peek(&SlotRef(id, revision)).map(|e| &e.value)
    }

    /// Adds an entry of `heap_bytes`, replacing the same revision if
    /// present, evicting the worker's least recently used revision when it
    /// has [`REVISIONS_PER_WORKER`] already, and what the policy picks until
    /// the new entry fits.
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
        self.tick += 1;
        let slot = Slot {
            id: id.to_owned(),
            revision: revision.to_owned(),
        };
        let entry = Entry {
            value,
            last_used: Cell::new(self.tick),
            heap_bytes,
            serving: Cell::new(false),
        };
        // Counted first: an entry the cache turns away comes back through
        // `settle` as evicted, as every other does.
        self.revisions
            .entry(id.to_owned())
            .or_default()
            .push(revision.to_owned());
        self.heap_bytes += heap_bytes;
        self.entries.insert(slot, entry);
        self.settle(EvictionReason::Capacity, evicted);
    }

    /// Records what this entry now holds, then evicts others until the
    /// budget holds (or only entries that cannot leave are left).
    pub fn set_heap_bytes(
        &mut self,
        id: &str,
        revision: &str,
        heap_bytes: usize,
        evicted: &mut Vec<Evicted>,
    ) {
        let Some(mut entry) = self.entries.peek_mut(&SlotRef(id, revision)) else {
            return;
        };
        self.heap_bytes = self.heap_bytes - entry.heap_bytes + heap_bytes;
        // The `RefMut`'s drop weighs the entry again.
        entry.heap_bytes = heap_bytes;
        drop(entry);
        if self.entries.weight() > self.budget {
            // Evicts down to the budget, never a pinned entry.
            if let Some(entry) = self.entries.peek(&SlotRef(id, revision)) {
                entry.serving.set(true);
            }
            self.entries.set_capacity(self.budget);
            if let Some(entry) = self.entries.peek(&SlotRef(id, revision)) {
                entry.serving.set(false);
            }
        }
        self.settle(EvictionReason::Memory, evicted);
    }

    /// Removes this worker revision's entry.
    pub fn remove(&mut self, id: &str, revision: &str) -> Option<V> {
        let (slot, entry) = self.entries.remove(&SlotRef(id, revision))?;
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

    /// Whether an entry of `heap_bytes` would fit beside the others
    /// without evicting any.
    pub fn has_room(&self, heap_bytes: usize) -> bool {
        let weight = (heap_bytes as u64).max(self.floor).max(1);
        self.entries.weight().saturating_add(weight) <= self.budget
    }

    /// The heap bytes the entries last reported, together.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes
    }

    /// Removes every entry.
    pub fn drain(&mut self) -> Vec<V> {
        self.revisions.clear();
        self.heap_bytes = 0;
        let all: Vec<V> = self.entries.drain().map(|(_, e)| e.value).collect();
        self.notes.borrow_mut().clear();
        all
    }

    /// Accounts for what the cache evicted, as `reason`, and drops it here,
    /// outside the cache.
    fn settle(&mut self, reason: EvictionReason, evicted: &mut Vec<Evicted>) {
        let gone = std::mem::take(&mut *self.notes.borrow_mut());
        for (slot, entry) in gone {
            self.forget(&slot, entry.heap_bytes);
            evicted.push((slot.id, reason));
        }
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
                self.entries
                    .peek(&SlotRef(id, r))
                    .map(|e| (e.last_used.get(), r))
            })
            .min_by_key(|(used, _)| *used)
            .map(|(_, r)| r.clone())
    }

    /// Bookkeeping after `slot` left the entries.
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
