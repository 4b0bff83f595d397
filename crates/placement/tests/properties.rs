//! Property tests: the contracts operator and router rely on.
//!
//! Statistical checks use 10,000 workers and bounds several standard
//! deviations wide, so they hold for every generated case, not just usually.

use std::collections::{BTreeMap, HashSet};

use isolane_placement::{
    DEFAULT_LOAD_FACTOR, LONE_HEADROOM, Node, NodeSet, ring::Ring, thread_for,
};
use proptest::prelude::*;

const WORKERS: usize = 10_000;

fn workers() -> impl Iterator<Item = String> {
    (0..WORKERS).map(|i| format!("ns-{}/worker-{i}", i % 7))
}

/// 1..=`max` nodes with distinct names and 1..=64 threads each.
fn node_map(max: usize) -> impl Strategy<Value = BTreeMap<String, u32>> {
    prop::collection::btree_map("[a-z][a-z0-9-]{0,11}", 1u32..=64, 1..=max)
}

fn to_nodes(map: &BTreeMap<String, u32>) -> Vec<Node> {
    map.iter().map(|(n, &t)| Node::new(n.clone(), t)).collect()
}

/// The name of each worker's first choice.
fn primaries(set: &NodeSet) -> Vec<String> {
    workers()
        .map(|w| {
            let i = set.primary(&w).expect("non-empty set");
            set.nodes()[i].name.clone()
        })
        .collect()
}

fn names_in_order(set: &NodeSet, worker: &str) -> Vec<String> {
    set.candidates(worker)
        .into_iter()
        .map(|i| set.nodes()[i].name.clone())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn same_answer_whatever_the_input_order(
        (nodes, shuffled) in node_map(24).prop_flat_map(|m| {
            let nodes = to_nodes(&m);
            (Just(nodes.clone()), Just(nodes).prop_shuffle())
        }),
        worker in "[a-z0-9-]{1,20}/[a-z0-9-]{1,20}",
    ) {
        let mut shuffled = shuffled;
        // Duplicates of existing names with fewer threads change nothing.
        shuffled.extend(nodes.iter().map(|n| Node::new(n.name.clone(), 1)));
        let a = NodeSet::new(nodes);
        let b = NodeSet::new(shuffled);
        prop_assert_eq!(a.nodes(), b.nodes());
        prop_assert_eq!(a.candidates(&worker), b.candidates(&worker));
        prop_assert_eq!(a.place(&worker, 3), b.place(&worker, 3));
        // And the same on a second call: no hidden state.
        prop_assert_eq!(a.candidates(&worker), a.candidates(&worker));
    }

    #[test]
    fn candidates_are_a_permutation_led_by_the_primary(
        map in node_map(40),
        worker in "[a-z0-9/-]{0,30}",
    ) {
        let set = NodeSet::new(to_nodes(&map));
        let order = set.candidates(&worker);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, (0..set.len()).collect::<Vec<_>>());
        prop_assert_eq!(set.primary(&worker), order.first().copied());
        prop_assert_eq!(set.preference(&worker).collect::<Vec<_>>(), order);
    }

    #[test]
    fn replicas_land_on_distinct_nodes_in_preference_order(
        map in node_map(12),
        worker in "[a-z0-9-]{1,20}/[a-z0-9-]{1,20}",
        replicas in 0usize..20,
    ) {
        let set = NodeSet::new(to_nodes(&map));
        let placed = set.place(&worker, replicas);
        prop_assert_eq!(placed.len(), replicas.min(set.len()));
        let distinct: HashSet<_> = placed.iter().map(|a| &a.node).collect();
        prop_assert_eq!(distinct.len(), placed.len());
        let order = names_in_order(&set, &worker);
        for (a, expected) in placed.iter().zip(&order) {
            prop_assert_eq!(&a.node, expected);
            let threads = map[&a.node];
            prop_assert!(a.thread < threads);
            prop_assert_eq!(a.thread, thread_for(&worker, threads));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn a_joining_node_takes_only_its_share(
        map in node_map(12),
        new_threads in 1u32..=64,
    ) {
        let before = NodeSet::new(to_nodes(&map));
        let mut nodes = to_nodes(&map);
        nodes.push(Node::new("joining-node", new_threads));
        let after = NodeSet::new(nodes);

        let (old, new) = (primaries(&before), primaries(&after));
        let mut moved = 0;
        for (o, n) in old.iter().zip(&new) {
            if o != n {
                prop_assert_eq!(n, "joining-node", "a worker moved between old nodes");
                moved += 1;
            }
        }
        let total: u32 = map.values().sum();
        let expected = f64::from(new_threads) / f64::from(total + new_threads);
        let fraction = moved as f64 / WORKERS as f64;
        prop_assert!((fraction - expected).abs() < 0.03, "moved {fraction}, expected {expected}");

        // Deeper: the old nodes keep their relative order for every worker.
        for w in workers().take(200) {
            let mut order = names_in_order(&after, &w);
            order.retain(|n| n != "joining-node");
            prop_assert_eq!(order, names_in_order(&before, &w));
        }
    }

    #[test]
    fn a_leaving_node_hands_over_only_its_own_workers(
        map in node_map(12).prop_filter("two nodes or more", |m| m.len() >= 2),
        pick in any::<prop::sample::Index>(),
    ) {
        let before = NodeSet::new(to_nodes(&map));
        let gone = before.nodes()[pick.index(before.len())].name.clone();
        let after = NodeSet::new(to_nodes(&map).into_iter().filter(|n| n.name != gone).collect());

        let (old, new) = (primaries(&before), primaries(&after));
        let mut moved = 0;
        for (w, (o, n)) in workers().zip(old.iter().zip(&new)) {
            if *o == gone {
                // It goes to its second choice.
                prop_assert_eq!(n, &names_in_order(&before, &w)[1]);
                moved += 1;
            } else {
                prop_assert_eq!(o, n, "a worker on a surviving node moved");
            }
        }
        let total: u32 = map.values().sum();
        let expected = f64::from(map[&gone]) / f64::from(total);
        let fraction = moved as f64 / WORKERS as f64;
        prop_assert!((fraction - expected).abs() < 0.03, "moved {fraction}, expected {expected}");
    }

    #[test]
    fn twice_the_threads_take_twice_the_workers(
        names in prop::collection::btree_set("[a-z][a-z0-9-]{0,11}", 2..=8),
        threads in 1u32..=16,
    ) {
        let big = names.iter().next().expect("two names or more").clone();
        let nodes = names
            .iter()
            .map(|n| Node::new(n.clone(), if *n == big { 2 * threads } else { threads }))
            .collect();
        let set = NodeSet::new(nodes);
        let placed = primaries(&set);
        let on_big = placed.iter().filter(|n| **n == big).count() as f64;
        let others = (WORKERS as f64 - on_big) / (names.len() - 1) as f64;
        let ratio = on_big / others;
        prop_assert!((1.7..2.3).contains(&ratio), "2x node got {ratio}x the workers");
    }

    #[test]
    fn a_new_thread_takes_only_its_share(threads in 1u32..=64) {
        let mut moved = 0;
        for w in workers() {
            let (old, new) = (thread_for(&w, threads), thread_for(&w, threads + 1));
            if old != new {
                prop_assert_eq!(new, threads, "a worker moved between old threads");
                moved += 1;
            }
        }
        let expected = 1.0 / f64::from(threads + 1);
        let fraction = moved as f64 / WORKERS as f64;
        prop_assert!((fraction - expected).abs() < 0.03, "moved {fraction}, expected {expected}");
    }

    #[test]
    fn bounded_load_stays_within_the_bound(
        map in node_map(12),
        c in 1.0f64..2.0,
    ) {
        let set = NodeSet::new(to_nodes(&map));
        let threads: Vec<f64> = set.nodes().iter().map(|n| f64::from(n.threads)).collect();
        let total_threads: f64 = threads.iter().sum();
        let min_threads = threads.iter().copied().fold(f64::INFINITY, f64::min);
        let mut loads = vec![0u64; set.len()];
        // In flight: each request ends `window` placements later, so the
        // total rises from idle and then holds.
        let window = 20 * set.len();
        let mut recent = std::collections::VecDeque::new();
        // A skewed stream: a few workers get most requests.
        for r in 0..5_000u64 {
            let worker = format!("ns/w{}", (r * r) % 97 % (r % 13 + 1));
            let total: u64 = loads.iter().sum();
            let i = set.choose_bounded(&worker, &loads, c).expect("non-empty set");
            // The bound after placing, computed as the crate does.
            let bound = |j: usize| c * (total + 1) as f64 / total_threads * threads[j];
            let room = |j: usize| (loads[j] + 1) as f64 <= bound(j).max(1.0);
            let order = set.candidates(&worker);
            match order.iter().position(|&j| room(j)) {
                // The first node with room takes it…
                Some(k) => prop_assert_eq!(i, order[k]),
                // …or, if none has, the least loaded per thread, the
                // earliest in the preference order among equals.
                None => {
                    let per_thread = |j: usize| loads[j] as f64 / threads[j];
                    let least = order.iter().map(|&j| per_thread(j)).fold(f64::INFINITY, f64::min);
                    let first_least = order.iter().copied().find(|&j| per_thread(j) == least);
                    prop_assert_eq!(Some(i), first_least);
                }
            }
            // Never above the paper's (rounded-up) bound…
            prop_assert!((loads[i] as f64) < (c * (total + 1) as f64 * threads[i] / total_threads).ceil());
            // …and within `c` × the share once the total load makes room
            // for a whole request on the least loaded node.
            if (c - 1.0) * total as f64 >= total_threads / min_threads {
                prop_assert!((loads[i] + 1) as f64 <= bound(i));
            }
            loads[i] += 1;
            recent.push_back(i);
            if recent.len() > window && let Some(done) = recent.pop_front() {
                loads[done] -= 1;
            }
        }
    }
}

proptest! {
    /// `choose_for`: a lone request goes to its first choice while that
    /// node, taking it, stays within `LONE_HEADROOM · c` × its share, and
    /// wherever `choose_bounded` sends it otherwise; a request of a Worker
    /// with others in flight always goes where `choose_bounded` sends it.
    #[test]
    fn a_lone_request_stays_home_within_the_headroom(
        map in node_map(12),
        loads in proptest::collection::vec(0u64..200, 12),
        c in 1.0f64..2.0,
        others in 1u64..50,
        w in 0u32..1000,
    ) {
        let set = NodeSet::new(to_nodes(&map));
        let worker = format!("ns/w{w}");
        let loads = &loads[..set.len()];
        let total: u64 = loads.iter().sum();
        let weight: f64 = set.nodes().iter().map(|n| f64::from(n.threads)).sum();
        let home = set.primary(&worker).expect("non-empty set");
        let bound = LONE_HEADROOM * c * (total + 1) as f64 / weight
            * f64::from(set.nodes()[home].threads);
        let bounded = set.choose_bounded(&worker, loads, c);
        let lone = set.choose_for(&worker, 0, loads, c);
        if (loads[home] + 1) as f64 <= bound.max(1.0) {
            prop_assert_eq!(lone, Some(home));
        } else {
            prop_assert_eq!(lone, bounded);
        }
        prop_assert_eq!(set.choose_for(&worker, others, loads, c), bounded);
    }
}

/// The node `choose_bounded` picks at the default factor, checked to be the
/// one `choose_bounded_among` picks over the worker's full preference order.
fn bounded(set: &NodeSet, worker: &str, loads: &[u64]) -> Option<usize> {
    let chosen = set.choose_bounded(worker, loads, DEFAULT_LOAD_FACTOR);
    let among = set.choose_bounded_among(&set.candidates(worker), loads, DEFAULT_LOAD_FACTOR);
    assert_eq!(chosen, among, "{worker} with loads {loads:?}");
    chosen
}

#[test]
fn bounded_load_keeps_in_flight_within_c_times_the_mean() {
    // 16 equal nodes, 16 requests in flight on each, and the one being
    // placed: the mean is 16 + 1/16 and c × the mean 20.08, so a node with 20
    // in flight is full. (The paper's bound, rounded up to 21, admitted it.)
    let set = NodeSet::new((0..16).map(|i| Node::new(format!("node-{i}"), 8)).collect());
    for w in workers().take(200) {
        let order = set.candidates(&w);
        let mut loads = vec![16u64; set.len()];
        (loads[order[0]], loads[order[1]]) = (19, 13);
        assert_eq!(bounded(&set, &w, &loads), Some(order[0]));
        (loads[order[0]], loads[order[1]]) = (20, 12);
        assert_eq!(bounded(&set, &w, &loads), Some(order[1]));
    }
}

#[test]
fn bounded_load_keeps_an_idle_primary_and_breaks_ties_by_preference() {
    // A small node's share of a near-idle fleet is far below one request:
    // its workers still go to it while it is idle.
    let mut nodes: Vec<Node> = (0..7).map(|i| Node::new(format!("big-{i}"), 64)).collect();
    nodes.push(Node::new("small", 1));
    let set = NodeSet::new(nodes);
    let small = set.index_of("small").expect("present");
    let mut loads = vec![3u64; set.len()];
    loads[small] = 0;
    let mine: Vec<String> = workers()
        .filter(|w| set.primary(w) == Some(small))
        .take(20)
        .collect();
    assert!(!mine.is_empty());
    for w in &mine {
        assert_eq!(bounded(&set, w, &loads), Some(small));
    }
    // Three equal nodes with one request each: 2 > 1.25 × 4 / 3, so nobody
    // has room; all are equally loaded, so the first choice keeps it.
    let set = NodeSet::new((0..3).map(|i| Node::new(format!("node-{i}"), 4)).collect());
    for w in workers().take(100) {
        let order = set.candidates(&w);
        assert_eq!(bounded(&set, &w, &[1, 1, 1]), Some(order[0]));
        let mut loads = vec![1u64; 3];
        loads[order[0]] = 2;
        assert_eq!(bounded(&set, &w, &loads), Some(order[1]));
    }
}

#[test]
fn bounded_load_prefers_the_primary_while_it_has_room() {
    let set = NodeSet::new((0..8).map(|i| Node::new(format!("node-{i}"), 4)).collect());
    for w in workers().take(500) {
        let order = set.candidates(&w);
        assert_eq!(bounded(&set, &w, &vec![0; set.len()]), Some(order[0]));
        // Overload the first two choices: the third takes it.
        let mut loads = vec![10; set.len()];
        loads[order[0]] = 1_000;
        loads[order[1]] = 1_000;
        assert_eq!(bounded(&set, &w, &loads), Some(order[2]));
    }
}

#[test]
fn empty_sets_place_nothing() {
    let set = NodeSet::new(vec![Node::new("no-threads", 0)]);
    assert!(set.is_empty());
    assert_eq!(set.candidates("ns/w"), Vec::<usize>::new());
    assert_eq!(set.primary("ns/w"), None);
    assert!(set.place("ns/w", 3).is_empty());
    assert_eq!(set.choose_bounded("ns/w", &[], 1.25), None);
    assert_eq!(Ring::new(&set, 16).primary("ns/w"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn ring_candidates_are_a_permutation_led_by_the_primary(
        map in node_map(20),
        worker in "[a-z0-9/-]{0,30}",
    ) {
        let set = NodeSet::new(to_nodes(&map));
        let ring = Ring::new(&set, 4);
        let order = ring.candidates(&worker);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, (0..set.len()).collect::<Vec<_>>());
        prop_assert_eq!(ring.primary(&worker), order.first().copied());
    }
}
