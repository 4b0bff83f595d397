//! The isolate pool of one engine thread: an LRU of warm isolates keyed by
//! worker id and revision (a few revisions per worker, so a traffic split or
//! a rollback finds each warm), bounded by count and by heap bytes, plus a
//! few blank spares.
//!
//! Thread-local (`Rc`), so the request path takes no lock. The pool only
//! forgets an evicted isolate; requests still running in it keep it alive
//! (`Rc`) until they finish.

use std::collections::HashMap;
use std::rc::Rc;

use crate::bundle::WorkerBundle;
use crate::isolate::WorkerIsolate;
use crate::observer::EvictionReason;

/// How often (in requests) a warm isolate's heap size is read again: V8's
/// heap statistics walk every space (~3.4 K instructions, 7% of a warm hello
/// request's engine-side cost when read after every request).
const HEAP_SAMPLE_EVERY: u32 = 16;

/// How many revisions of one worker a thread keeps warm at once. A traffic
/// split sends a worker's requests to two or three revisions, and a rollback
/// returns to one that served a moment ago; a fourth evicts the one used
/// least recently (`revision_replaced`).
pub(crate) const REVISIONS_PER_WORKER: usize = 3;

struct Entry {
    revision: String,
    isolate: Rc<WorkerIsolate>,
    last_used: u64,
    heap_bytes: usize,
    /// Requests released so far.
    releases: u32,
}

/// An isolate that left the pool, and why.
pub(crate) type Evicted = (String, EvictionReason);

/// A warm isolate's place: worker id and revision.
type Slot = (String, String);

pub(crate) struct Pool {
    capacity: usize,
    heap_budget: usize,
    /// Worker id → its warm revisions (one, or a few during a split).
    entries: HashMap<String, Vec<Entry>>,
    /// Warm isolates in `entries`.
    len: usize,
    tick: u64,
    spares: Vec<(Rc<WorkerIsolate>, usize)>,
}

impl Pool {
    pub(crate) fn new(capacity: usize, heap_budget: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            heap_budget,
            entries: HashMap::new(),
            len: 0,
            tick: 0,
            spares: Vec::new(),
        }
    }

    /// The warm isolate for this worker revision, if any. A condemned
    /// isolate is evicted on the way.
    pub(crate) fn lookup(
        &mut self,
        bundle: &WorkerBundle,
        evicted: &mut Vec<Evicted>,
    ) -> Option<Rc<WorkerIsolate>> {
        self.tick += 1;
        let revisions = self.entries.get_mut(&bundle.id)?;
        let at = revisions
            .iter()
            .position(|e| e.revision == bundle.revision)?;
        let entry = &mut revisions[at];
        if entry.isolate.condemned().is_none() {
            entry.last_used = self.tick;
            return Some(entry.isolate.clone());
        }
        self.remove(&bundle.id, &bundle.revision);
        evicted.push((bundle.id.clone(), EvictionReason::Terminated));
        None
    }

    /// Adds a freshly loaded isolate, evicting the least recently used when
    /// full, and the worker's least recently used revision when it has
    /// [`REVISIONS_PER_WORKER`] warm already.
    pub(crate) fn insert(
        &mut self,
        bundle: &WorkerBundle,
        isolate: Rc<WorkerIsolate>,
        evicted: &mut Vec<Evicted>,
    ) {
        // A revision loaded twice (two requests raced to load it) keeps the newest.
        self.remove(&bundle.id, &bundle.revision);
        let oldest_revision = self.entries.get(&bundle.id).and_then(|revisions| {
            (revisions.len() >= REVISIONS_PER_WORKER)
                .then(|| revisions.iter().min_by_key(|e| e.last_used))
                .flatten()
                .map(|e| e.revision.clone())
        });
        if let Some(revision) = oldest_revision {
            self.remove(&bundle.id, &revision);
            evicted.push((bundle.id.clone(), EvictionReason::RevisionReplaced));
        }
        while self.len >= self.capacity {
            let Some((id, revision)) = self.lru(None) else {
                break;
            };
            self.remove(&id, &revision);
            evicted.push((id, EvictionReason::Capacity));
        }
        let heap_bytes = isolate.memory_used();
        self.tick += 1;
        self.entries
            .entry(bundle.id.clone())
            .or_default()
            .push(Entry {
                revision: bundle.revision.clone(),
                isolate,
                last_used: self.tick,
                heap_bytes,
                releases: 0,
            });
        self.len += 1;
    }

    /// After a request: drops a condemned isolate, refreshes its heap size
    /// (after its first request, then every `HEAP_SAMPLE_EVERY`) and enforces
    /// the heap budget (never evicting the isolate just used).
    pub(crate) fn release(
        &mut self,
        bundle: &WorkerBundle,
        isolate: &Rc<WorkerIsolate>,
        evicted: &mut Vec<Evicted>,
    ) {
        let Some(entry) = self
            .entries
            .get_mut(&bundle.id)
            .and_then(|revisions| revisions.iter_mut().find(|e| e.revision == bundle.revision))
        else {
            return;
        };
        if !Rc::ptr_eq(&entry.isolate, isolate) {
            return;
        }
        if isolate.condemned().is_some() {
            self.remove(&bundle.id, &bundle.revision);
            evicted.push((bundle.id.clone(), EvictionReason::Terminated));
            return;
        }
        // The first request's growth counts at once (a thread cycling
        // through many workers is kept within budget), then every so often.
        entry.releases = entry.releases.wrapping_add(1);
        if entry.releases != 1 && entry.releases % HEAP_SAMPLE_EVERY != 0 {
            return;
        }
        entry.heap_bytes = isolate.memory_used();
        while self.heap_bytes() > self.heap_budget {
            let Some((id, revision)) = self.lru(Some((&bundle.id, &bundle.revision))) else {
                break;
            };
            self.remove(&id, &revision);
            evicted.push((id, EvictionReason::Memory));
        }
    }

    /// Forgets every warm revision of worker `id` (it was deleted); returns
    /// how many.
    pub(crate) fn remove_worker(&mut self, id: &str) -> usize {
        let removed = self
            .entries
            .remove(id)
            .map_or(0, |revisions| revisions.len());
        self.len -= removed;
        removed
    }

    fn remove(&mut self, id: &str, revision: &str) {
        let Some(revisions) = self.entries.get_mut(id) else {
            return;
        };
        let before = revisions.len();
        revisions.retain(|e| e.revision != revision);
        self.len -= before - revisions.len();
        if revisions.is_empty() {
            self.entries.remove(id);
        }
    }

    fn lru(&self, except: Option<(&str, &str)>) -> Option<Slot> {
        self.entries
            .iter()
            .flat_map(|(id, revisions)| revisions.iter().map(move |e| (id, e)))
            .filter(|(id, e)| except != Some((id.as_str(), e.revision.as_str())))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, e)| (id.clone(), e.revision.clone()))
    }

    /// A blank isolate for a worker whose heap limit is `heap_limit`, if one
    /// is ready: any spare made with at least that limit, lowered to it.
    pub(crate) fn take_spare(&mut self, heap_limit: usize) -> Option<Rc<WorkerIsolate>> {
        let at = self
            .spares
            .iter()
            .position(|(s, _)| s.heap_limit() >= heap_limit)?;
        let spare = self.spares.swap_remove(at).0;
        spare.lower_heap_limit(heap_limit);
        Some(spare)
    }

    pub(crate) fn add_spare(&mut self, isolate: Rc<WorkerIsolate>) {
        let heap = isolate.memory_used();
        self.spares.push((isolate, heap));
    }

    pub(crate) fn spares(&self) -> usize {
        self.spares.len()
    }

    /// Live isolates (warm + spare) and the heap bytes they last reported.
    pub(crate) fn stats(&self) -> (usize, usize) {
        let live = self.len + self.spares.len();
        let heap = self.heap_bytes() + self.spares.iter().map(|(_, h)| h).sum::<usize>();
        (live, heap)
    }

    fn heap_bytes(&self) -> usize {
        self.entries.values().flatten().map(|e| e.heap_bytes).sum()
    }

    /// Empties the pool (shutdown); the caller drops the isolates.
    pub(crate) fn drain(&mut self) -> Vec<Rc<WorkerIsolate>> {
        self.len = 0;
        let mut all: Vec<_> = self
            .entries
            .drain()
            .flat_map(|(_, revisions)| revisions.into_iter().map(|e| e.isolate))
            .collect();
        all.extend(self.spares.drain(..).map(|(s, _)| s));
        all
    }
}
