use std::rc::Rc;

use super::*;

// Values the tests keep, never in use.
impl InUse for u32 {}
impl InUse for char {}

/// Least recently used with a scan: the policy this module replaced, as
/// the baseline the hit ratios are compared with.
struct Lru {
    capacity: usize,
    /// (id, last used)
    entries: Vec<(u32, u64)>,
    tick: u64,
}

impl Lru {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Vec::with_capacity(capacity),
            tick: 0,
        }
    }

    /// A request: whether it hit; a miss inserts.
    fn request(&mut self, id: u32) -> bool {
        self.tick += 1;
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == id) {
            e.1 = self.tick;
            return true;
        }
        if self.entries.len() >= self.capacity
            && let Some(oldest) = (0..self.entries.len()).min_by_key(|&i| self.entries[i].1)
        {
            self.entries.swap_remove(oldest);
        }
        self.entries.push((id, self.tick));
        false
    }
}

/// A deterministic xorshift stream.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Zipf(`s`) over `n` ranks by inverse CDF.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut sum = 0.0;
        let cdf = (1..=n)
            .map(|k| {
                sum += 1.0 / (k as f64).powf(s);
                sum
            })
            .collect::<Vec<_>>();
        Self(cdf.iter().map(|c| c / sum).collect())
    }

    fn sample(&self, state: &mut u64) -> u32 {
        let u = (next(state) >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|&c| c < u) as u32
    }
}

#[test]
fn beats_lru_under_zipf_traffic() {
    // The density benchmark's mix (docs/benchmarks.md section 5): 10,000
    // Workers, Zipf(1.1), 200 warm isolates of one size.
    let zipf = Zipf::new(10_000, 1.1);
    let mut set = WarmSet::<()>::new(200, 200 * 1000);
    let mut lru = Lru::new(200);
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let (mut set_hits, mut lru_hits, counted) = (0u32, 0u32, 100_000u32);
    let mut evicted = Vec::new();
    for i in 0..counted + 50_000 {
        let worker = zipf.sample(&mut state);
        let id = format!("ns/w{worker}");
        let count = u32::from(i >= 50_000);
        if set.get(&id, "1").is_some() {
            set_hits += count;
        } else {
            set.insert(&id, "1", (), 1000, &mut evicted);
            set.set_heap_bytes(&id, "1", 1000, &mut evicted);
        }
        lru_hits += count * u32::from(lru.request(worker));
        assert!(set.len() <= 200, "step {i}: {} entries", set.len());
    }
    let ratio = |hits: u32| f64::from(hits) / f64::from(counted);
    let (set_ratio, lru_ratio) = (ratio(set_hits), ratio(lru_hits));
    eprintln!("warm: {set_ratio:.3} against LRU's {lru_ratio:.3}");
    assert!(
        set_ratio > lru_ratio + 0.05,
        "warm {set_ratio:.3} against LRU's {lru_ratio:.3}"
    );
}

#[test]
fn holds_its_count_and_its_bytes_and_accounts_for_every_eviction() {
    for (capacity, budget) in [(4, usize::MAX), (16, 40_000), (1, 1000), (64, 9_000)] {
        let mut set = WarmSet::<u32>::new(capacity, budget);
        let mut state = 0x1234_5678_9abc_def0_u64 ^ capacity as u64;
        let mut held = std::collections::HashMap::new();
        for step in 0..20_000u32 {
            let r = next(&mut state);
            let id = format!("ns/w{}", r % 40);
            let revision = format!("r{}", (r >> 8) % 5);
            let heap = 500 + (r >> 16) as usize % 3000;
            let mut evicted = Vec::new();
            if (r >> 40).is_multiple_of(8) {
                set.remove(&id, &revision);
                held.remove(&(id.clone(), revision.clone()));
                continue;
            }
            if set.get(&id, &revision).is_none() {
                set.insert(&id, &revision, step, heap, &mut evicted);
            }
            set.set_heap_bytes(&id, &revision, heap, &mut evicted);
            held.insert((id.clone(), revision.clone()), heap);
            let mut slots = set
                .entries
                .iter()
                .map(|(s, e)| ((s.id.clone(), s.revision.clone()), e.heap_bytes))
                .collect::<Vec<_>>();
            held.retain(|k, _| slots.iter().any(|(s, _)| s == k));
            slots.sort();
            assert_eq!(set.len(), held.len(), "step {step}");
            assert!(set.len() <= capacity, "step {step}");
            let bytes: usize = slots.iter().map(|(_, b)| b).sum();
            assert_eq!(set.heap_bytes(), bytes, "step {step}");
            assert!(
                bytes <= budget || set.len() == 1,
                "step {step}: {bytes} bytes in {} entries",
                set.len()
            );
            // One over the hot share is turned away when nothing holds it.
            let over = heap as f64 > budget as f64 * HOT_SHARE;
            assert!(
                set.peek(&id, &revision).is_some() || over,
                "step {step}: the entry that just served left"
            );
        }
    }
}

#[test]
fn the_entry_that_just_served_stays_over_budget() {
    let mut set = WarmSet::new(10, 100);
    let mut evicted = Vec::new();
    set.insert("ns/a", "1", 'a', 6, &mut evicted);
    set.insert("ns/b", "1", 'b', 3, &mut evicted);
    assert!(evicted.is_empty());
    set.set_heap_bytes("ns/a", "1", 500, &mut evicted);
    assert_eq!(evicted, vec![("ns/b".to_owned(), EvictionReason::Memory)]);
    assert_eq!(set.len(), 1);
    assert_eq!(set.heap_bytes(), 500);
}

/// A value a test holds on to, as a request holds its isolate.
struct Held(Rc<()>);

impl InUse for Held {
    fn in_use(&self) -> bool {
        Rc::strong_count(&self.0) > 1
    }
}

#[test]
fn an_entry_in_use_is_never_evicted() {
    let mut set = WarmSet::new(4, usize::MAX);
    let mut evicted = Vec::new();
    let busy = Rc::new(());
    set.insert("ns/busy", "1", Held(busy.clone()), 1, &mut evicted);
    for i in 0..50 {
        set.insert(&format!("ns/w{i}"), "1", Held(Rc::new(())), 1, &mut evicted);
        assert!(set.peek("ns/busy", "1").is_some(), "evicted after {i}");
    }
    assert_eq!(set.len(), 4);
    drop(busy);
    // Once idle it is an entry like the others: Workers asked for again
    // (each twice in a row) take its place.
    for i in 50..1000 {
        let id = format!("ns/w{}", (i / 2) % 8);
        if set.get(&id, "1").is_none() {
            set.insert(&id, "1", Held(Rc::new(())), 1, &mut evicted);
        }
        if set.peek("ns/busy", "1").is_none() {
            return;
        }
    }
    panic!("an idle entry stayed through 950 requests to 8 other Workers");
}

#[test]
fn a_fourth_revision_replaces_the_least_recently_used() {
    let mut set = WarmSet::new(10, usize::MAX);
    let mut evicted = Vec::new();
    for r in ["1", "2", "3"] {
        set.insert("ns/a", r, (), 1, &mut evicted);
    }
    assert!(set.get("ns/a", "1").is_some());
    set.insert("ns/a", "4", (), 1, &mut evicted);
    assert_eq!(
        evicted,
        vec![("ns/a".to_owned(), EvictionReason::RevisionReplaced)]
    );
    assert!(set.peek("ns/a", "2").is_none());
    assert_eq!(set.remove_worker("ns/a").len(), 3);
    assert!(set.is_empty());
    assert_eq!(set.heap_bytes(), 0);
}
