use super::*;

/// The pool's policy as it was written before this module (a tick per use,
/// a scan for the least recently used): the oracle the O(1) version must
/// match decision for decision.
#[derive(Default)]
struct Scan {
    capacity: usize,
    heap_budget: usize,
    /// (id, revision, last_used, heap_bytes)
    entries: Vec<(String, String, u64, usize)>,
    tick: u64,
}

impl Scan {
    fn new(capacity: usize, heap_budget: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            heap_budget,
            ..Self::default()
        }
    }

    fn get(&mut self, id: &str, revision: &str) -> bool {
        self.tick += 1;
        let tick = self.tick;
        self.entries
            .iter_mut()
            .find(|e| e.0 == id && e.1 == revision)
            .map(|e| e.2 = tick)
            .is_some()
    }

    fn remove(&mut self, id: &str, revision: &str) {
        self.entries.retain(|e| !(e.0 == id && e.1 == revision));
    }

    fn lru(&self, except: Option<(&str, &str)>) -> Option<(String, String)> {
        self.entries
            .iter()
            .filter(|e| except != Some((e.0.as_str(), e.1.as_str())))
            .min_by_key(|e| e.2)
            .map(|e| (e.0.clone(), e.1.clone()))
    }

    fn insert(&mut self, id: &str, revision: &str, heap: usize, evicted: &mut Vec<Evicted>) {
        self.remove(id, revision);
        let mine: Vec<_> = self.entries.iter().filter(|e| e.0 == id).collect();
        if mine.len() >= REVISIONS_PER_WORKER
            && let Some(oldest) = mine.iter().min_by_key(|e| e.2).map(|e| e.1.clone())
        {
            self.remove(id, &oldest);
            evicted.push((id.to_owned(), EvictionReason::RevisionReplaced));
        }
        while self.entries.len() >= self.capacity {
            let Some((i, r)) = self.lru(None) else { break };
            self.remove(&i, &r);
            evicted.push((i, EvictionReason::Capacity));
        }
        self.tick += 1;
        self.entries
            .push((id.to_owned(), revision.to_owned(), self.tick, heap));
    }

    fn set_heap(&mut self, id: &str, revision: &str, heap: usize, evicted: &mut Vec<Evicted>) {
        let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.0 == id && e.1 == revision)
        else {
            return;
        };
        e.3 = heap;
        while self.entries.iter().map(|e| e.3).sum::<usize>() > self.heap_budget {
            let Some((i, r)) = self.lru(Some((id, revision))) else {
                break;
            };
            self.remove(&i, &r);
            evicted.push((i, EvictionReason::Memory));
        }
    }

    fn slots(&self) -> Vec<(String, String)> {
        let mut all: Vec<_> = self
            .entries
            .iter()
            .map(|e| (e.0.clone(), e.1.clone()))
            .collect();
        all.sort();
        all
    }
}

fn slots(lru: &WarmLru<u32>) -> Vec<(String, String)> {
    let mut all: Vec<_> = lru
        .entries
        .iter()
        .map(|(s, _)| (s.id.clone(), s.revision.clone()))
        .collect();
    all.sort();
    all
}

/// A deterministic xorshift stream.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn matches_the_scanning_policy_decision_for_decision() {
    for (capacity, budget) in [(4, usize::MAX), (16, 40_000), (1, 1000), (64, 9_000)] {
        let mut fast = WarmLru::<u32>::new(capacity, budget);
        let mut scan = Scan::new(capacity, budget);
        let mut state = 0x1234_5678_9abc_def0_u64 ^ capacity as u64;
        for step in 0..20_000u32 {
            let r = next(&mut state);
            let id = format!("ns/w{}", r % 40);
            let revision = format!("r{}", (r >> 8) % 5);
            let heap = 500 + (r >> 16) as usize % 3000;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            match (r >> 40) % 8 {
                0 => {
                    fast.remove(&id, &revision);
                    scan.remove(&id, &revision);
                }
                1 => {
                    fast.set_heap_bytes(&id, &revision, heap, &mut a);
                    scan.set_heap(&id, &revision, heap, &mut b);
                }
                _ => {
                    // A request: hit, or load and insert; then release.
                    let hit = fast.get(&id, &revision).is_some();
                    assert_eq!(hit, scan.get(&id, &revision), "step {step}");
                    if !hit {
                        fast.insert(&id, &revision, step, heap, &mut a);
                        scan.insert(&id, &revision, heap, &mut b);
                    }
                    fast.set_heap_bytes(&id, &revision, heap, &mut a);
                    scan.set_heap(&id, &revision, heap, &mut b);
                }
            }
            assert_eq!(a, b, "step {step}: evictions differ");
            assert_eq!(slots(&fast), scan.slots(), "step {step}");
            assert_eq!(
                fast.heap_bytes(),
                scan.entries.iter().map(|e| e.3).sum::<usize>()
            );
        }
    }
}

#[test]
fn the_entry_that_just_served_stays_over_budget() {
    let mut lru = WarmLru::new(10, 100);
    let mut evicted = Vec::new();
    lru.insert("ns/a", "1", 'a', 60, &mut evicted);
    lru.insert("ns/b", "1", 'b', 30, &mut evicted);
    lru.set_heap_bytes("ns/a", "1", 500, &mut evicted);
    assert_eq!(evicted, vec![("ns/b".to_owned(), EvictionReason::Memory)]);
    assert_eq!(lru.len(), 1);
    assert_eq!(lru.heap_bytes(), 500);
}

#[test]
fn a_fourth_revision_replaces_the_least_recently_used() {
    let mut lru = WarmLru::new(10, usize::MAX);
    let mut evicted = Vec::new();
    for r in ["1", "2", "3"] {
        lru.insert("ns/a", r, (), 1, &mut evicted);
    }
    assert!(lru.get("ns/a", "1").is_some());
    lru.insert("ns/a", "4", (), 1, &mut evicted);
    assert_eq!(
        evicted,
        vec![("ns/a".to_owned(), EvictionReason::RevisionReplaced)]
    );
    assert!(lru.peek_mut("ns/a", "2").is_none());
    assert_eq!(lru.remove_worker("ns/a").len(), 3);
    assert!(lru.is_empty());
    assert_eq!(lru.heap_bytes(), 0);
}
