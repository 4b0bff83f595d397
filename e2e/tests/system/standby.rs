//! The router's standby prewarm (`router/src/proxy/prewarming.rs`) end to
//! end, with processes: two nodes and a Worker whose `/slow` answers after
//! a timer. Its first two requests in flight together make the router send
//! one standby prewarm to the node that is not the Worker's first choice,
//! and that node's engine answers it (loaded, or warm already if the second
//! request spilled there first: `isolane_node_prewarms_total`). More busy
//! requests send no more.

use isolane_e2e::cluster::Node;
use isolane_e2e::workers::inline_worker;
use isolane_testenv::wait_until;

use super::{SETTLE, System, names, placement};

const NAME: &str = "standby";
const HOST: &str = "standby.test";

/// The router's standby prewarms by outcome and the prewarms each node
/// answered (`isolane_node_prewarms_total`, any result).
#[derive(Debug, PartialEq)]
struct Counts {
    standby_ok: f64,
    standby_failed: f64,
    other: f64,
    home: f64,
}

impl Counts {
    async fn read(system: &System, other: &Node, home: &Node) -> Self {
        let router = &system.cluster.router;
        let standby = |outcome: &str| {
            let labels = format!("outcome=\"{outcome}\"");
            async move {
                router
                    .metric_sum("isolane_router_standby_prewarms_total", &labels)
                    .await
                    .unwrap_or(0.0)
            }
        };
        Counts {
            standby_ok: standby("ok").await,
            standby_failed: standby("failed").await,
            other: Self::prewarms(other).await,
            home: Self::prewarms(home).await,
        }
    }

    async fn prewarms(node: &Node) -> f64 {
        node.metric_sum("isolane_node_prewarms_total", "")
            .await
            .unwrap_or(0.0)
    }
}

async fn slow_pair(system: &System, count: usize) {
    let ingress = system.ingress();
    let pending: Vec<_> = (0..count)
        .map(|_| {
            let ingress = ingress.clone();
            tokio::spawn(async move { ingress.get(HOST, "/slow").await })
        })
        .collect();
    for request in pending {
        let reply = request.await.expect("joined").expect("answered");
        assert_eq!((reply.status, reply.body.as_str()), (200, NAME));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_first_busy_gets_one_standby_prewarm_on_its_other_node() {
    let system = System::start(2).await;
    let worker = inline_worker(
        NAME,
        "export default { async fetch(request) { if (new URL(request.url).pathname === '/slow') { await new Promise((r) => setTimeout(r, 1500)); } return new Response('standby'); } };\n",
        &[HOST],
    );
    let workers = [worker];
    system.kubectl_apply("standby.yaml", &workers).await;
    let placed = system.wait_ready_and_placed(&names(&workers)).await;
    let primary = placement(&placed[NAME])[0].0.clone();
    system.wait_served(HOST, "/", NAME).await;
    let nodes = &system.cluster.nodes;
    let other = nodes.iter().find(|n| n.name != primary).expect("two nodes");
    let home = nodes.iter().find(|n| n.name == primary).expect("its node");
    let none = Counts::read(&system, other, home).await;
    assert_eq!(
        none.standby_ok + none.standby_failed,
        0.0,
        "a lone request sends none: {none:?}"
    );

    slow_pair(&system, 2).await;
    let one = wait_until("one standby prewarm answered", SETTLE, || async {
        let now = Counts::read(&system, other, home).await;
        if now.standby_ok == 1.0 && now.other == 1.0 {
            Ok(now)
        } else {
            Err(format!("{now:?}"))
        }
    })
    .await;
    slow_pair(&system, 3).await;
    let after = Counts::read(&system, other, home).await;
    assert_eq!(after, one, "once per Worker, never to its first choice");
    assert_eq!(after.home, 0.0, "never its first choice: {after:?}");
}
