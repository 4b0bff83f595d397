//! The router's quarantine of a Worker whose requests were lost with two
//! nodes (`router/src/losses.rs`) is lifted for a bystander by the nodes'
//! crash records, and kept for the Worker that was running.
//!
//! Two nodes. A poison Worker's request spins in one JavaScript turn; a
//! bystander's slow request (a timer, no turn) is in flight on the same
//! node. Each node is SIGKILLed while its turn map shows the poison in a
//! turn and both requests are there, so both Workers lose requests with
//! both nodes (the router replays both onto the second node after the
//! first kill): both are suspects, which is all the router can tell. The
//! nodes start again on their state directories and publish what their
//! maps said; then the bystander is served, and the poison is refused
//! `503 quarantined`.

use isolane_e2e::cluster::Node;
use isolane_e2e::operator::OPERATOR_NAMESPACE;
use isolane_e2e::workers::inline_worker;
use isolane_membership::NodeMember;
use isolane_testenv::wait_until;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::{NAMESPACE, POISONER, SETTLE, System, names};

/// The poison's id, as the map and the records name it.
const POISON: &str = "poisoner/poison";
/// How long a bystander's slow request stays in flight (under the test
/// client's 15 s timeout).
const SLOW_MS: u32 = 10_000;

/// A bystander: `/slow` answers after [`SLOW_MS`] (a timer: in flight, not
/// in a turn), anything else at once.
fn bystander(name: &str) -> isolane_crds::Worker {
    let script = format!(
        "export default {{\n  async fetch(request) {{\n    if (new URL(request.url).pathname === '/slow') {{\n      await new Promise((resolve) => setTimeout(resolve, {SLOW_MS}));\n    }}\n    return new Response({name:?});\n  }}\n}};\n"
    );
    inline_worker(name, &script, &[&format!("{name}.test")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_records_free_a_bystander_and_keep_the_poison_quarantined() {
    // CPU enough that the poison's turn is still running when it is killed.
    let mut system = System::start_with_node_args(2, &["--max-cpu-ms", "30000"]).await;
    let mut poison = inline_worker(
        "poison",
        "export default { fetch(request) { if (new URL(request.url).pathname === '/spin') { for (;;) {} } return new Response('poison'); } };\n",
        &["poison.test"],
    );
    poison.spec.limits.cpu_ms = 30_000;
    poison.spec.limits.wall_ms = 60_000;
    let by = "bystander";
    let by_host = format!("{by}.test");
    let by_id = format!("{NAMESPACE}/{by}");
    let bystanders = [bystander(by)];
    system
        .kubectl_apply_in(POISONER, "poison.yaml", std::slice::from_ref(&poison))
        .await;
    system.kubectl_apply("bystander.yaml", &bystanders).await;
    system
        .wait_ready_and_placed_in(POISONER, &names(std::slice::from_ref(&poison)))
        .await;
    system.wait_ready_and_placed(&names(&bystanders)).await;
    system.wait_served("poison.test", "/", "poison").await;
    system.wait_served(&by_host, "/", by).await;

    // The bystander's slow requests, several so that the router's bounded
    // load puts some on each node, and the poison's spin; each held by a
    // client of its own.
    let ingress = system.ingress();
    let slow: Vec<_> = (0..4)
        .map(|_| {
            let ingress = ingress.clone();
            let host = by_host.clone();
            tokio::spawn(async move { ingress.get(&host, "/slow").await })
        })
        .collect();
    let spin = tokio::spawn({
        let ingress = ingress.clone();
        async move { ingress.get("poison.test", "/spin").await }
    });
    // The node the poison runs on, then the one its request is replayed on.
    let first = kill_in_poison_turn(&mut system, &by_id, None).await;
    let second = kill_in_poison_turn(&mut system, &by_id, Some(&first)).await;
    let mut slow_replies = Vec::new();
    for reply in slow {
        slow_replies.push(reply.await.expect("slow"));
    }
    let spin = spin.await.expect("spin");
    eprintln!("in flight at the kills: {by} /slow -> {slow_replies:?}; poison /spin -> {spin:?}");
    // Lost twice, the bystander's requests were answered or refused as a
    // suspect's (the nodes were not back within the router's wait), for a
    // first quarantine only: its many requests lost in one death do not
    // lengthen it.
    for reply in slow_replies {
        let reply = reply.expect("a reply");
        if reply.status == 200 {
            continue;
        }
        assert_eq!(reply.reason.as_deref(), Some("quarantined"), "{reply:?}");
        let retry_after: u64 = reply
            .retry_after
            .as_deref()
            .and_then(|v| v.parse().ok())
            .expect("a Retry-After");
        assert!(retry_after <= 10, "a first quarantine is 10 s: {reply:?}");
    }

    // Both nodes start again on their state directories.
    for node in [&first, &second] {
        system.cluster.restart_node(&system.cp, node).await;
    }
    // What each restarted node published: the poison was in a turn, the
    // bystander was not.
    let leases: Api<Lease> = Api::namespaced(system.cp.client(), OPERATOR_NAMESPACE);
    for node in [&first, &second] {
        let lease = leases.get(node).await.expect("the node's Lease");
        let crash = NodeMember::from_lease(&lease)
            .expect("a node Lease")
            .crash
            .unwrap_or_else(|| panic!("{node} published no crash record"));
        eprintln!("{node}'s crash record: {crash:?}");
        assert!(
            crash.in_turn.iter().any(|w| w == POISON),
            "{node}: {crash:?}"
        );
        assert!(!crash.in_turn.contains(&by_id), "{node}: {crash:?}");
        assert!(crash.clears(&by_id));
    }

    // The bystander is served; the poison, shown in a turn on both dead
    // nodes, is refused without reaching a node. Without the records this
    // cannot be: both were quarantined at the same loss for the same 10 s,
    // so while the poison is still refused the bystander would be too.
    let served = system.wait_served(&by_host, "/", by).await;
    eprintln!("{by} served again after the restarts: {served:?}");
    let refused = ingress.get("poison.test", "/").await.expect("a reply");
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(
        refused.reason.as_deref(),
        Some("quarantined"),
        "{refused:?}"
    );
    let other = ingress.get(&by_host, "/").await.expect("a reply");
    assert_eq!(other.status, 200, "{other:?}");
    system.shutdown();
}

/// SIGKILLs the node (other than `killed`) whose turn map shows the poison
/// in a turn and `bystander` not, with a request of the bystander in
/// flight there too (only these two Workers have traffic); returns its name.
async fn kill_in_poison_turn(system: &mut System, bystander: &str, killed: Option<&str>) -> String {
    let nodes: Vec<&Node> = system
        .cluster
        .nodes
        .iter()
        .filter(|node| Some(node.name.as_str()) != killed)
        .collect();
    let nodes = &nodes;
    let name = wait_until(
        "the poison in a turn on a node beside the bystander's request",
        SETTLE,
        move || async move {
            for node in nodes {
                // The scrape first: the map is read last, with no wait
                // between it and the kill, so a bystander request that starts
                // its turn meanwhile cannot slip in (one did, in a CI run).
                if !node.in_flight().await.is_some_and(|n| n >= 2.0) {
                    continue;
                }
                let Some(map) = node.turn_map() else {
                    continue;
                };
                let poison_running = map.in_turn.iter().any(|w| w == POISON);
                let bystander_running = map.in_turn.iter().any(|w| w == bystander);
                if poison_running && !bystander_running {
                    return Some(node.name.clone());
                }
            }
            None
        },
    )
    .await;
    system.cluster.node_mut(&name).process.kill();
    eprintln!("killed {name} in the poison's turn");
    name
}
