//! The owner of an object: the first node of its key's order over the live
//! nodes, the same on every node, spread over them, moved only off a node
//! that left, and past a node that refused a connection.

use isolane_engine::object_key;
use isolane_membership::NodeMember;

use super::*;

fn members(names: &[&str]) -> Members {
    let live = names
        .iter()
        .map(|name| NodeMember {
            name: (*name).to_owned(),
            endpoints: vec![format!("http://{name}:9000")],
            threads: 1,
            draining: false,
            expires_at: None,
            crash: None,
        })
        .collect();
    Members {
        live,
        invalid: Vec::new(),
        leases: names.len(),
    }
}

fn peers(me: &str, names: &[&str]) -> Peers {
    let peers = Peers::new(me, None);
    peers.members(&members(names));
    peers
}

/// Object `i`'s owner as node `me` names it (`me` itself when `None`).
fn owner(peers: &Peers, i: usize) -> String {
    let key = object_key("shop/counter", "Counter", &format!("{i:064x}"));
    peers
        .owner_of(&key)
        .unwrap_or_else(|| peers.me().to_owned())
}

#[test]
fn every_node_names_the_same_owner_and_objects_spread_over_nodes() {
    let names = ["node-a", "node-b", "node-c"];
    let views: Vec<Peers> = names.iter().map(|me| peers(me, &names)).collect();
    let mut per_node = HashMap::<String, usize>::new();
    for i in 0..300 {
        let owners: Vec<String> = views.iter().map(|p| owner(p, i)).collect();
        assert!(
            owners.iter().all(|o| *o == owners[0]),
            "object {i}: {owners:?}"
        );
        *per_node.entry(owners[0].clone()).or_default() += 1;
    }
    // About a third each (binomial, 300 draws: far outside 60..140 is a bug).
    for name in names {
        let n = per_node.get(name).copied().unwrap_or(0);
        assert!(
            (60..140).contains(&n),
            "{name} owns {n} of 300: {per_node:?}"
        );
    }
    // Before any Lease is seen, every object is this node's.
    let alone = Peers::new("node-a", None);
    assert!(!alone.knows_ring());
    assert_eq!(owner(&alone, 7), "node-a");
}

#[test]
fn a_node_leaving_moves_only_its_objects_and_a_joining_node_takes_only_objects() {
    let before = peers("node-a", &["node-a", "node-b", "node-c"]);
    let after = peers("node-a", &["node-a", "node-b"]);
    let joined = peers("node-a", &["node-a", "node-b", "node-c", "node-d"]);
    for i in 0..300 {
        let (was, is, then) = (owner(&before, i), owner(&after, i), owner(&joined, i));
        if was != "node-c" {
            assert_eq!(was, is, "object {i} moved off a node that stayed");
        }
        assert!(
            then == was || then == "node-d",
            "object {i}: {was} -> {then}"
        );
    }
}

#[test]
fn a_node_that_refused_a_connection_is_passed_over_for_a_while() {
    let peers = peers("node-a", &["node-a", "node-b"]);
    let theirs = (0..300)
        .find(|i| owner(&peers, *i) == "node-b")
        .expect("node-b owns some object");
    peers.eject("node-b", "http://node-b:9000");
    assert_eq!(owner(&peers, theirs), "node-a");
    // Ejected until EJECTED_FOR has passed.
    peers
        .inner
        .ejected
        .lock()
        .unwrap()
        .insert("node-b".to_owned(), Instant::now());
    assert_eq!(owner(&peers, theirs), "node-b");
}
