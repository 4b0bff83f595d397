//! The isolate pool of one engine thread: its warm isolates keyed by worker
//! id and revision (a few revisions per worker, so a traffic split or a
//! rollback finds each warm), kept by the policy of `warm_set.rs` within a
//! count and heap bytes, plus a few blank spares.
//!
//! Thread-local (`Rc`), so the request path takes no lock. The pool only
//! forgets an evicted isolate; requests still running in it keep it alive
//! (`Rc`) until they finish.

use std::cell::Cell;
use std::rc::Rc;

use crate::bundle::WorkerBundle;
use crate::isolate::WorkerIsolate;
use crate::observer::EvictionReason;
pub(crate) use crate::warm_set::Evicted;
use crate::warm_set::{InUse, WarmSet};

/// How often (in requests) a warm isolate's heap size is read again: V8's
/// heap statistics walk every space (~3.4 K instructions, 7% of a warm hello
/// request's engine-side cost when read after every request).
const HEAP_SAMPLE_EVERY: u32 = 16;

/// What the pool keeps per warm isolate beside the policy's bookkeeping.
struct Warm {
    isolate: Rc<WorkerIsolate>,
    /// Requests released so far.
    releases: Cell<u32>,
}

/// A request holds the isolate (its `Rc` beside the pool's): it stays.
impl InUse for Warm {
    fn in_use(&self) -> bool {
        Rc::strong_count(&self.isolate) > 1
    }
}

pub(crate) struct Pool {
    /// Which warm isolates stay: `warm_set.rs`, shared with the fleet
    /// simulator.
    warm: WarmSet<Warm>,
    spares: Vec<(Rc<WorkerIsolate>, usize)>,
}

impl Pool {
    pub(crate) fn new(capacity: usize, heap_budget: usize) -> Self {
        Self {
            warm: WarmSet::new(capacity, heap_budget),
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
        let warm = self.warm.get(&bundle.id, &bundle.revision)?;
        if warm.isolate.condemned().is_none() {
            return Some(warm.isolate.clone());
        }
        self.warm.remove(&bundle.id, &bundle.revision);
        evicted.push((bundle.id.clone(), EvictionReason::Terminated));
        None
    }

    /// Adds a freshly loaded isolate, evicting what the policy picks when
    /// full, and the worker's least recently used revision when it has
    /// [`REVISIONS_PER_WORKER`](crate::warm_set::REVISIONS_PER_WORKER) warm
    /// already.
    pub(crate) fn insert(
        &mut self,
        bundle: &WorkerBundle,
        isolate: Rc<WorkerIsolate>,
        evicted: &mut Vec<Evicted>,
    ) {
        let heap_bytes = isolate.memory_used();
        let warm = Warm {
            isolate,
            releases: Cell::new(0),
        };
        self.warm
            .insert(&bundle.id, &bundle.revision, warm, heap_bytes, evicted);
    }

    /// Adds a freshly loaded isolate only if it fits beside the warm ones
    /// without evicting any of them (a standby prewarm); false: not added.
    pub(crate) fn insert_if_room(
        &mut self,
        bundle: &WorkerBundle,
        isolate: Rc<WorkerIsolate>,
        evicted: &mut Vec<Evicted>,
    ) -> bool {
        if !self.warm.has_room(isolate.memory_used()) {
            return false;
        }
        self.insert(bundle, isolate, evicted);
        true
    }

    /// Whether one more isolate of the usual size would fit beside the warm
    /// ones without evicting any: the warm isolates' mean heap, or a spare's
    /// when none is warm.
    pub(crate) fn has_room_for_another(&self) -> bool {
        let usual = match self.warm.len() {
            0 => self.spares.first().map_or(0, |(_, heap)| *heap),
            n => self.warm.heap_bytes() / n,
        };
        self.warm.has_room(usual)
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
        let Some(warm) = self.warm.peek(&bundle.id, &bundle.revision) else {
            return;
        };
        if !Rc::ptr_eq(&warm.isolate, isolate) {
            return;
        }
        if isolate.condemned().is_some() {
            self.warm.remove(&bundle.id, &bundle.revision);
            evicted.push((bundle.id.clone(), EvictionReason::Terminated));
            return;
        }
        // The first request's growth counts at once (a thread cycling
        // through many workers is kept within budget), then every so often.
        let releases = warm.releases.get().wrapping_add(1);
        warm.releases.set(releases);
        if releases != 1 && releases % HEAP_SAMPLE_EVERY != 0 {
            return;
        }
        let heap_bytes = isolate.memory_used();
        self.warm
            .set_heap_bytes(&bundle.id, &bundle.revision, heap_bytes, evicted);
    }

    /// Forgets every warm revision of worker `id` (it was deleted); returns
    /// how many.
    pub(crate) fn remove_worker(&mut self, id: &str) -> usize {
        self.warm.remove_worker(id).len()
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

    /// The most recently made spare, taken out to be dropped (the thread
    /// keeps fewer, `spare_demand.rs`).
    pub(crate) fn drop_spare(&mut self) -> Option<Rc<WorkerIsolate>> {
        self.spares.pop().map(|(spare, _)| spare)
    }

    /// Live isolates (warm + spare) and the heap bytes they last reported.
    pub(crate) fn stats(&self) -> (usize, usize) {
        let live = self.warm.len() + self.spares.len();
        let heap = self.warm.heap_bytes() + self.spares.iter().map(|(_, h)| h).sum::<usize>();
        (live, heap)
    }

    /// Empties the pool (shutdown); the caller drops the isolates.
    pub(crate) fn drain(&mut self) -> Vec<Rc<WorkerIsolate>> {
        let mut all: Vec<_> = self.warm.drain().into_iter().map(|w| w.isolate).collect();
        all.extend(self.spares.drain(..).map(|(s, _)| s));
        all
    }
}
