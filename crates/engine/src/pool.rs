//! The isolate pool of one engine thread: an LRU of warm isolates keyed by
//! worker id (one revision each), bounded by count and by heap bytes, plus a
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

pub(crate) struct Pool {
    capacity: usize,
    heap_budget: usize,
    entries: HashMap<String, Entry>,
    tick: u64,
    spares: Vec<(Rc<WorkerIsolate>, usize)>,
}

impl Pool {
    pub(crate) fn new(capacity: usize, heap_budget: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            heap_budget,
            entries: HashMap::new(),
            tick: 0,
            spares: Vec::new(),
        }
    }

    /// The warm isolate for this worker revision, if any. An older revision,
    /// or a condemned isolate, is evicted on the way.
    pub(crate) fn lookup(
        &mut self,
        bundle: &WorkerBundle,
        evicted: &mut Vec<Evicted>,
    ) -> Option<Rc<WorkerIsolate>> {
        self.tick += 1;
        let entry = self.entries.get_mut(&bundle.id)?;
        let reason = if entry.revision != bundle.revision {
            EvictionReason::RevisionReplaced
        } else if entry.isolate.condemned().is_some() {
            EvictionReason::Terminated
        } else {
            entry.last_used = self.tick;
            return Some(entry.isolate.clone());
        };
        self.entries.remove(&bundle.id);
        evicted.push((bundle.id.clone(), reason));
        None
    }

    /// Adds a freshly loaded isolate, evicting the least recently used when full.
    pub(crate) fn insert(
        &mut self,
        bundle: &WorkerBundle,
        isolate: Rc<WorkerIsolate>,
        evicted: &mut Vec<Evicted>,
    ) {
        while self.entries.len() >= self.capacity {
            let Some(victim) = self.lru(None) else {
                break;
            };
            self.entries.remove(&victim);
            evicted.push((victim, EvictionReason::Capacity));
        }
        let heap_bytes = isolate.memory_used();
        self.tick += 1;
        self.entries.insert(
            bundle.id.clone(),
            Entry {
                revision: bundle.revision.clone(),
                isolate,
                last_used: self.tick,
                heap_bytes,
                releases: 0,
            },
        );
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
        let Some(entry) = self.entries.get_mut(&bundle.id) else {
            return;
        };
        if !Rc::ptr_eq(&entry.isolate, isolate) {
            return;
        }
        if isolate.condemned().is_some() {
            self.entries.remove(&bundle.id);
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
            let Some(victim) = self.lru(Some(&bundle.id)) else {
                break;
            };
            self.entries.remove(&victim);
            evicted.push((victim, EvictionReason::Memory));
        }
    }

    fn lru(&self, except: Option<&str>) -> Option<String> {
        self.entries
            .iter()
            .filter(|(id, _)| Some(id.as_str()) != except)
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())
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
        let live = self.entries.len() + self.spares.len();
        let heap = self.heap_bytes() + self.spares.iter().map(|(_, h)| h).sum::<usize>();
        (live, heap)
    }

    fn heap_bytes(&self) -> usize {
        self.entries.values().map(|e| e.heap_bytes).sum()
    }

    /// Empties the pool (shutdown); the caller drops the isolates.
    pub(crate) fn drain(&mut self) -> Vec<Rc<WorkerIsolate>> {
        let mut all: Vec<_> = self.entries.drain().map(|(_, e)| e.isolate).collect();
        all.extend(self.spares.drain(..).map(|(s, _)| s));
        all
    }
}
