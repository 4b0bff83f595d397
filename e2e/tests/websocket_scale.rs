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

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::SinkExt as _;
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::kubectl;
use isolane_e2e::websocket::{self, connect_from, next, open_files_limit, percentiles};
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, wait_until};
use tempfile::TempDir;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;

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

/// Acknowledges each message `<number>:<payload>` with
/// `ack:<number>:<payload's length>` once it has it.
const ACKS: &str = r#"
export default {
  fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket', { status: 426 });
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => {
      const colon = event.data.indexOf(':');
      server.send(`ack:${event.data.slice(0, colon)}:${event.data.length - colon - 1}`);
    });
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
        inline_worker("acks", ACKS, &["acks.test"]),
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

const ACK_CLIENTS: usize = 20;
const NUMBERED: u64 = 150;
const WINDOW: usize = 4;

/// One client of the acknowledging Worker: what it sent and what came back.
#[derive(Default)]
struct Acks {
    next: u64,
    unacknowledged: BTreeMap<u64, String>,
    acknowledged: BTreeSet<u64>,
    /// The code of the first close, and the nodes that served each socket.
    first_close: Option<u16>,
    nodes: Vec<String>,
    resent: usize,
}

impl Acks {
    fn payload(client: usize, n: u64) -> String {
        format!(
            "{n}:client {client} message {n} {}",
            "x".repeat((n % 50) as usize)
        )
    }

    /// Takes `ack:<n>:<len>`: it must name a message sent, with its length.
    fn acknowledge(&mut self, text: &str, total: &AtomicUsize) {
        let mut parts = text.split(':').skip(1);
        let n: u64 = parts.next().unwrap().parse().unwrap();
        let len: usize = parts.next().unwrap().parse().unwrap();
        if let Some(payload) = self.unacknowledged.remove(&n) {
            assert_eq!(payload.len() - payload.find(':').unwrap() - 1, len);
            assert!(self.acknowledged.insert(n));
            total.fetch_add(1, Ordering::Relaxed);
        } else {
            // Sent again after a reconnect, acknowledged twice: fine once.
            assert!(self.acknowledged.contains(&n), "ack of unsent {n}");
        }
    }
}

/// Sends numbered messages, `WINDOW` unacknowledged at most: half of
/// `NUMBERED`, then waits for the name of the node that drains. A client
/// on that node sends on until its socket closes (so it is mid-stream
/// however long the drain waits to close it); any client whose socket
/// closes reconnects, sends again every unacknowledged message and a few
/// more. Ends when all it sent, at least `NUMBERED`, is acknowledged.
async fn ack_client(
    ingress: SocketAddr,
    client: usize,
    total: Arc<AtomicUsize>,
    mut drained: watch::Receiver<Option<String>>,
) -> Acks {
    let mut acks = Acks::default();
    let (mut socket, node) = connect_from(ingress, "acks.test", address(client))
        .await
        .unwrap();
    acks.nodes.push(node);
    let (mut gated, mut on_drained, mut target) = (false, false, NUMBERED / 2);
    loop {
        if !gated && acks.next == target && acks.unacknowledged.is_empty() {
            let name = drained.wait_for(Option::is_some).await.unwrap().clone();
            on_drained = name.as_ref() == acks.nodes.first();
            (gated, target) = (true, NUMBERED);
        }
        if on_drained && acks.first_close.is_none() {
            target = target.max(acks.next + WINDOW as u64);
        }
        if gated && acks.next >= target && acks.unacknowledged.is_empty() {
            break;
        }
        let mut gone = false;
        while acks.unacknowledged.len() < WINDOW && acks.next < target && !gone {
            let payload = Acks::payload(client, acks.next);
            gone = socket.send(Message::text(payload.as_str())).await.is_err();
            acks.unacknowledged.insert(acks.next, payload);
            acks.next += 1;
        }
        let close = match (gone, next(&mut socket).await) {
            // An ack may still arrive after a send failed (the socket is
            // closing): take it, and read on to the close.
            (_, Some(Message::Text(text))) => {
                acks.acknowledge(text.as_str(), &total);
                continue;
            }
            (_, Some(Message::Close(frame))) => frame.map(|f| u16::from(f.code)),
            // Gone without a close frame (after a failed send).
            (_, None) => None,
            (_, other) => panic!("client {client}: {other:?}"),
        };
        acks.first_close = acks.first_close.or(close);
        // Reconnect (to whichever node the router picks now) and send again
        // what was not acknowledged, then 10 more.
        let (again, node) = wait_until("a reconnect", SETTLE, || async {
            connect_from(ingress, "acks.test", address(client))
                .await
                .ok()
        })
        .await;
        socket = again;
        acks.nodes.push(node);
        target = target.max(acks.next + 10);
        for payload in acks.unacknowledged.values() {
            acks.resent += 1;
            if socket.send(Message::text(payload.as_str())).await.is_err() {
                break;
            }
        }
    }
    let _ = socket.close(None).await;
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_message_is_lost_across_a_drain() {
    let (mut cluster, _cp, _dir) = start(2, &[]).await;
    let ingress = cluster.ingress();
    let total = Arc::new(AtomicUsize::new(0));
    let (drain_tx, drain_rx) = watch::channel(None);
    let clients: Vec<_> = (0..ACK_CLIENTS)
        .map(|client| {
            tokio::spawn(ack_client(
                ingress,
                client,
                Arc::clone(&total),
                drain_rx.clone(),
            ))
        })
        .collect();
    // Every client has had its first half acknowledged and waits.
    let half = ACK_CLIENTS * (NUMBERED as usize / 2);
    wait_until("half the messages acknowledged", SETTLE, || async {
        (total.load(Ordering::Relaxed) >= half).then_some(())
    })
    .await;
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
    drain_tx.send(Some(serving.0.clone())).unwrap();

    let (mut on_drained, mut resent, mut sent) = (0, 0, 0);
    for (client, acks) in clients.into_iter().enumerate() {
        let acks = acks.await.unwrap();
        // Every message sent is acknowledged, none lost on the way.
        assert!(acks.next >= NUMBERED, "client {client}");
        assert_eq!(acks.acknowledged.len() as u64, acks.next, "client {client}");
        assert!(acks.unacknowledged.is_empty(), "client {client}");
        sent += acks.next as usize;
        if acks.nodes[0] == serving.0 {
            on_drained += 1;
            assert_eq!(
                acks.first_close,
                Some(1012),
                "client {client}: {:?}",
                acks.nodes
            );
            assert!(
                acks.nodes.last() != Some(&serving.0),
                "client {client}: {:?}",
                acks.nodes
            );
        }
        resent += acks.resent;
    }
    eprintln!(
        "{} of {sent} messages acknowledged; {on_drained} of {ACK_CLIENTS} sockets closed 1012 by \
         the drain, reconnected and sent {resent} unacknowledged messages again",
        total.load(Ordering::Relaxed)
    );
    assert_eq!(total.load(Ordering::Relaxed), sent);
    assert!(on_drained > 0);
    cluster.shutdown();
}
