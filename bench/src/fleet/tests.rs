use isolane_membership::NodeMember;
use std::sync::Arc;

use isolane_router::fleet::{FleetBuilder, WorkerLoad};

use super::*;

fn members(nodes: usize, threads: u32) -> Vec<NodeMember> {
    (0..nodes)
        .map(|n| NodeMember {
            name: format!("node-{n:03}"),
            endpoints: vec![format!("https://10.0.0.{n}:7443")],
            threads,
            draining: false,
            expires_at: None,
            crash: None,
        })
        .collect()
}

/// The simulator places each Worker where the router's `Fleet::pick`
/// sends it, idle and under load, and where the operator's
/// `status.placement` (`NodeSet::place`) says it runs.
#[test]
fn places_as_the_router_and_the_operator_do() {
    let (nodes, threads) = (16, 8);
    let placement = Placement::new(3000, nodes, threads);
    let fleet = FleetBuilder::default()
        .update(members(nodes, threads))
        .expect("a first fleet");
    let set = NodeSet::new(
        (0..nodes)
            .map(|n| Node::new(format!("node-{n:03}"), threads))
            .collect(),
    );
    let lone = Arc::new(WorkerLoad::default());
    for (w, id) in placement.ids.iter().enumerate() {
        let pick = fleet
            .pick(id, &lone, DEFAULT_LOAD_FACTOR, &[])
            .expect("a node");
        assert_eq!(
            placement.pick(w, None, None),
            (pick.index, pick.thread),
            "{id}"
        );
        let placed = &set.place(id, 1)[0];
        assert_eq!(set.nodes()[pick.index].name, placed.node);
        assert_eq!(pick.thread, placed.thread);
    }
    // Load the fleet unevenly, with requests of one Worker that is then
    // busy: the hot nodes turn Workers away the same way, lone requests
    // and requests of a busy Worker alike.
    let busy = Arc::new(WorkerLoad::default());
    let mut guards = Vec::new();
    for node in 0..nodes {
        // Bounds at c = 1.25: 45.4 for a busy Worker, 90.8 for a lone request.
        for _ in 0..[0, 5, 45, 95][node % 4] {
            guards.push(fleet.start(node, &busy));
        }
    }
    let loads: Vec<u64> = (0..nodes).map(|n| fleet.in_flight(n)).collect();
    let mut moved = [0, 0];
    for (w, id) in placement.ids.iter().enumerate() {
        for (others, load) in [&lone, &busy].into_iter().enumerate() {
            let pick = fleet
                .pick(id, load, DEFAULT_LOAD_FACTOR, &[])
                .expect("a node");
            let ours = placement.pick(w, Some(&loads), Some(load.in_flight()));
            assert_eq!(ours, (pick.index, pick.thread), "{id}");
            // Where the router sends the Worker's standby prewarm.
            let first = fleet.first_choice(id).expect("a first choice");
            let spill = fleet.pick(id, load, DEFAULT_LOAD_FACTOR, &[first]);
            assert_eq!(
                placement.spill_node(w, &loads),
                spill.map(|p| p.index),
                "{id}"
            );
            moved[others] += usize::from(!placement.is_first_choice(w, ours.0));
        }
    }
    assert!(moved[0] > 0, "the loads must turn some lone requests away");
    assert!(
        moved[1] > moved[0],
        "a busy Worker's requests are turned away more often: {moved:?}"
    );
}

fn small(budgets: Vec<u64>, in_flight: usize) -> Setup {
    Setup {
        workers: 2000,
        nodes: 4,
        threads: 2,
        zipf: 1.1,
        requests: 60_000,
        warmup: 10_000,
        isolate_bytes: 1 << 20,
        budgets,
        isolates_per_thread: None,
        in_flight,
        lone_stays: true,
        standby: false,
        seed: 3,
    }
}

/// More memory never lowers the warm ratio (LRU keeps what a smaller LRU
/// keeps), a budget that holds every Worker misses only first sightings
/// when every request goes to its first choice, and a seed gives the same
/// answer twice.
#[test]
fn warm_grows_with_the_budget_and_is_deterministic() {
    let budgets = vec![8 << 20, 32 << 20, 128 << 20, 4 << 30];
    for in_flight in [0, 4] {
        let setup = small(budgets.clone(), in_flight);
        let outcome = simulate(&setup);
        assert_eq!(outcome.rows.len(), budgets.len());
        for pair in outcome.rows.windows(2) {
            assert!(pair[0].hits <= pair[1].hits, "{pair:?}");
        }
        let all = &outcome.rows[3];
        if in_flight == 0 {
            assert_eq!(all.hits + all.first_sightings, all.requests);
        } else {
            // A Worker turned away from its first choice is cold on the
            // next node the first time it lands there.
            assert!(all.hits + all.first_sightings < all.requests);
        }
        assert!(outcome.rows[0].warm() < 0.9 && outcome.rows[0].warm() > 0.1);
        assert_eq!(simulate(&setup), outcome);
        assert!((in_flight > 0) == (outcome.spilled > 0.0));
    }
}

/// A count bound binds like the memory bound does: 10 isolates per thread
/// under a large budget is 10 MiB per thread under no count bound.
#[test]
fn a_count_bound_and_the_same_memory_bound_agree() {
    let by_count = simulate(&Setup {
        isolates_per_thread: Some(10),
        ..small(vec![1 << 40], 0)
    });
    let by_memory = simulate(&small(vec![20 << 20], 0));
    assert_eq!(by_count.rows[0].hits, by_memory.rows[0].hits);
}

/// Standby prewarms load only into room: at a budget that holds every
/// Worker they take the warm ratio up (a busy Worker's first spill is warm)
/// and load something; at a budget that holds few they change little
/// either way.
#[test]
fn standby_prewarms_warm_the_spill_node_where_there_is_room() {
    let budgets = vec![8 << 20, 4 << 30];
    let without = simulate(&small(budgets.clone(), 4));
    let with = simulate(&Setup {
        standby: true,
        ..small(budgets, 4)
    });
    let (roomy, roomy_before) = (&with.rows[1], &without.rows[1]);
    assert!(roomy.standby_loads > 0);
    assert!(roomy.hits > roomy_before.hits, "{roomy:?} {roomy_before:?}");
    assert_eq!(without.rows[1].standby_loads, 0);
    let (tight, tight_before) = (&with.rows[0], &without.rows[0]);
    assert!(
        tight.hits as f64 >= tight_before.hits as f64 * 0.98,
        "{tight:?} {tight_before:?}"
    );
    // Placement is the same: standbys move no request.
    assert_eq!(with.spilled, without.spilled);
}
