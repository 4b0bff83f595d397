//! WebSockets at scale and across a drain, through operator, nodes and
//! router as processes (issue 33): a real WebSocket client, a real router,
//! real nodes and real V8.
//!
//! - [`the_echo_worker_answers_1000_concurrent_clients`] — 1,000 clients,
//!   each from an address of its own (so each has its own per-client share)
//!   and all open at once, send 4 messages each, text and binary in turn;
//!   every one is echoed. The Worker's socket budget per thread is raised
//!   to 1,024 by its flag (`--websocket-max-sockets`), as an operator would
//!   for such a Worker. Needs about 3,000 file descriptors
//!   (`ulimit -n`): the test process holds 1,000, the router 2,000.
//! - [`no_acknowledged_message_is_lost_across_a_drain`] — 20 clients of a
//!   Worker that acknowledges each numbered message send at least 150 each,
//!   4 unacknowledged at a time; half-way the node that serves them drains
//!   (SIGTERM) while they send: each of its sockets gets 1012, its client
//!   reconnects (to the other node) and sends again what was not
//!   acknowledged. Every message sent ends up acknowledged, each
//!   acknowledgement names a message that was sent, with its length.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::kubectl;
use isolane_e2e::websocket::{self, acks, connect_from, open_files_limit, percentiles};
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, wait_until};
use tempfile::TempDir;

const NAMESPACE: &str = "demo";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);

/// The echo Worker of docs/websockets.md.
const ECHO: &str = r#"
export default {
  fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket', { status: 426 });
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => server.send(event.data));
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// A fleet of `nodes` nodes of one thread each with `node_args`, the echo
/// Worker on `echo.test` and the acknowledging one on `acks.test`.
async fn start(nodes: usize, node_args: &[&str]) -> (Cluster, ControlPlane, TempDir) {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ClusterOptions {
        nodes,
        node: NodeOptions {
            threads: 1,
            extra_args: node_args.iter().map(|a| (*a).to_owned()).collect(),
            ..NodeOptions::default()
        },
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let path = dir.path().join("workers.yaml");
    let workers = [
        inline_worker("echo", ECHO, &["echo.test"]),
        inline_worker("acks", acks::WORKER, &["acks.test"]),
    ];
    kubectl::apply_workers(&cp, &path, NAMESPACE, &workers).await;
    for host in ["echo.test", "acks.test"] {
        wait_until(&format!("a WebSocket to {host}"), SETTLE, || async {
            connect_from(cluster.ingress(), host, [127, 0, 0, 1])
                .await
                .ok()
        })
        .await;
    }
    (cluster, cp, dir)
}

/// Client `i`'s own loopback address (127.1.0.1 onwards).
fn address(i: usize) -> [u8; 4] {
    let [_, _, high, low] = u32::try_from(i + 1).unwrap().to_be_bytes();
    [127, 1, high, low]
}

const CLIENTS: usize = 1000;
const ACK_CLIENTS: usize = 20;
const PER_CLIENT: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_echo_worker_answers_1000_concurrent_clients() {
    let limit = open_files_limit();
    assert!(
        limit >= 4096,
        "1,000 sockets need `ulimit -n` of 4096 or more (the router holds 2 per socket), not {limit}"
    );
    let (cluster, _cp, _dir) = start(1, &["--websocket-max-sockets", "1024"]).await;
    let ingress = cluster.ingress();

    // All 1,000 open at once.
    let started = Instant::now();
    let mut sockets = Vec::new();
    for (i, opened) in websocket::open_all(ingress, "echo.test", CLIENTS, address)
        .await
        .into_iter()
        .enumerate()
    {
        let (socket, _) = opened.unwrap_or_else(|e| panic!("client {i}: {e}"));
        sockets.push(socket);
    }
    eprintln!(
        "{CLIENTS} sockets open after {:.1}s",
        started.elapsed().as_secs_f64()
    );
    // Counted once the router's side of each upgrade has run.
    wait_until("the router to count 1,000 open sockets", SETTLE, || async {
        let open = cluster
            .router
            .metric("isolane_router_websockets_open")
            .await?;
        (open == CLIENTS as f64).then_some(())
    })
    .await;

    let started = Instant::now();
    let (mut trips, open) = websocket::echo_all(sockets, PER_CLIENT).await;
    eprintln!(
        "{} of {} messages echoed in {:.1}s; round trip {}",
        trips.len(),
        CLIENTS * PER_CLIENT,
        started.elapsed().as_secs_f64(),
        percentiles(&mut trips)
    );
    assert_eq!(trips.len(), CLIENTS * PER_CLIENT);
    websocket::close_all(open).await;
    wait_until("every socket to be closed", SETTLE, || async {
        let open = cluster
            .router
            .metric("isolane_router_websockets_open")
            .await?;
        (open == 0.0).then_some(())
    })
    .await;
    cluster.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_message_is_lost_across_a_drain() {
    let (mut cluster, _cp, _dir) = start(2, &[]).await;
    let ingress = cluster.ingress();
    let run = acks::Run::start(ingress, "acks.test", ACK_CLIENTS, address);
    // Every client has had its first half acknowledged and waits.
    run.half_acknowledged(SETTLE).await;
    let serving = wait_until("the serving node", SETTLE, || async {
        let mut best = None;
        for node in &cluster.nodes {
            let open = node
                .metric_sum("isolane_node_websockets_open", "")
                .await
                .unwrap_or(0.0);
            if open > 0.0 && best.as_ref().is_none_or(|(_, most)| open > *most) {
                best = Some((node.name.clone(), open));
            }
        }
        best
    })
    .await;
    eprintln!("draining {} ({} sockets) mid-stream", serving.0, serving.1);
    cluster.node_mut(&serving.0).drain();
    run.drained(&serving.0);

    eprintln!("{}", run.check(&serving.0).await);
    cluster.shutdown();
}
