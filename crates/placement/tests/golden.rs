//! Pinned answers. Operator and router may run different builds during a
//! rollout; if any of these change, every worker in every cluster moves, so a
//! change here is a deliberate, documented decision, never an accident.

use isolane_placement::{Node, NodeSet, thread_for};

fn cluster() -> NodeSet {
    NodeSet::new(vec![
        Node::new("node-a", 4),
        Node::new("node-b", 8),
        Node::new("node-c", 2),
        Node::new("node-d", 16),
    ])
}

fn render(set: &NodeSet, worker: &str) -> String {
    let order: Vec<&str> = set
        .candidates(worker)
        .into_iter()
        .map(|i| set.nodes()[i].name.as_str())
        .collect();
    let placed: Vec<String> = set
        .place(worker, 2)
        .into_iter()
        .map(|a| format!("{}#{}", a.node, a.thread))
        .collect();
    format!("{worker}: {} | {}", order.join(","), placed.join(","))
}

#[test]
fn placements_are_pinned() {
    let set = cluster();
    let got: Vec<String> = [
        "default/hello",
        "default/echo",
        "team-a/api",
        "team-b/cron",
        "x/y",
    ]
    .into_iter()
    .map(|w| render(&set, w))
    .collect();
    let expected = [
        "default/hello: node-d,node-b,node-a,node-c | node-d#3,node-b#3",
        "default/echo: node-b,node-d,node-a,node-c | node-b#3,node-d#3",
        "team-a/api: node-b,node-d,node-c,node-a | node-b#4,node-d#4",
        "team-b/cron: node-b,node-d,node-a,node-c | node-b#4,node-d#12",
        "x/y: node-d,node-a,node-b,node-c | node-d#11,node-a#1",
    ];
    assert_eq!(got, expected);
}

#[test]
fn threads_are_pinned() {
    let got: Vec<u32> = [1, 2, 3, 8, 64, 1000]
        .into_iter()
        .map(|t| thread_for("default/hello", t))
        .collect();
    assert_eq!(got, vec![0, 1, 1, 3, 3, 870]);
}
