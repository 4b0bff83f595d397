//! WebSockets at scale on the kubelet (issue 33), as
//! `e2e/tests/websocket_scale.rs` checks them for processes: 1,000 clients
//! of the echo Worker through the router's Service (its ClusterIP, through
//! kube-proxy), all open at once, 4 messages each, text and binary in turn,
//! every echo checked; then, while all 1,000 stream on, the node pod that
//! serves them is deleted: each socket closes with 1012 once the node's
//! drain grace is over, and each client reconnects (to the DaemonSet's new
//! node pod) and has 4 more messages echoed. In the same drain 20 clients
//! of the acknowledging Worker (`isolane_e2e::websocket::acks`) send
//! numbered messages: those on the node get 1012, reconnect and send again
//! what was not acknowledged, and no message is lost.
//!
//! The chart's per-thread caps would refuse this by design (128 sockets of
//! a Worker, 16 of them per client: these clients all reach the router from
//! the host's one address), so the test's `helm install` raises both
//! ([`helm_values`]), as an operator would for such a Worker.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use isolane_e2e::websocket::{
    self, ANY, Echoed, HANDSHAKES, Socket, acks, connect_from, open_files_limit, percentiles,
};
use isolane_testenv::wait_until;
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Semaphore;

use super::{apply, delete_pod, only_node_pod};
use isolane_e2e::release::worker_yaml;

/// The echo Worker's host (`echo_through_the_service` applies it).
const HOST: &str = "echo.pods.test";
/// The acknowledging Worker's host.
const ACKS_HOST: &str = "acks.pods.test";
const ACK_CLIENTS: usize = 20;
const CLIENTS: usize = 1000;
const PER_CLIENT: usize = 4;
/// The pause between a streaming client's round trips.
const PACE: Duration = Duration::from_millis(250);
/// Deadline for the node pod's replacement and every reconnect.
const REPLACED: Duration = Duration::from_secs(180);

/// `helm --set` arguments raising the node's socket caps for 1,000 sockets
/// of one Worker from one address.
pub fn helm_values() -> Vec<String> {
    ["websocketMaxSockets", "websocketMaxSocketsPerClient"]
        .into_iter()
        .flat_map(|key| ["--set".to_owned(), format!("node.config.{key}=1024")])
        .collect()
}

/// How one client's stream across the drain went.
struct Drained {
    /// The close code its streaming socket got, and when.
    code: Option<u16>,
    closed: Instant,
    /// Messages echoed on the streaming socket.
    streamed: usize,
    /// From that close to its new socket's first echo.
    reconnect: Duration,
    /// The node that served its new socket.
    node: String,
    trips: Vec<Duration>,
}

/// Echoes client `i`'s messages on `socket`, one each `PACE`, until it
/// closes (counting it in `streaming` after its first echo); then
/// reconnects through `address`, a handshake of `handshakes` at a time,
/// and has 4 more messages echoed.
async fn stream_across_the_drain(
    i: usize,
    mut socket: Socket,
    address: SocketAddr,
    streaming: Arc<AtomicUsize>,
    handshakes: Arc<Semaphore>,
) -> Drained {
    let mut m = PER_CLIENT;
    let code = loop {
        match websocket::echo(i, socket, m..m + 1).await {
            (_, Echoed::All(open)) => socket = *open,
            (_, Echoed::Closed(code)) => break code,
            (_, Echoed::Wrong(what)) => panic!("client {i}: {what}"),
        }
        if m == PER_CLIENT {
            streaming.fetch_add(1, Ordering::Relaxed);
        }
        m += 1;
        tokio::time::sleep(PACE).await;
    };
    let closed = Instant::now();
    let (again, node) = wait_until(&format!("client {i} to reconnect"), REPLACED, || {
        let handshakes = Arc::clone(&handshakes);
        async move {
            let _permit = handshakes.acquire().await.ok()?;
            connect_from(address, HOST, ANY).await.ok()
        }
    })
    .await;
    let (trips, ended) = websocket::echo(i, again, 0..PER_CLIENT).await;
    let Echoed::All(mut again) = ended else {
        panic!("client {i}: its new socket did not echo all {PER_CLIENT}");
    };
    let reconnect = closed.elapsed();
    let _ = futures::SinkExt::close(&mut *again).await;
    Drained {
        code,
        closed,
        streamed: m - PER_CLIENT,
        reconnect,
        node,
        trips,
    }
}

/// The 1,000 clients through the router's Service at `address`, then the
/// node pod serving them deleted mid-stream (see the module's comment).
pub async fn thousand_clients_and_a_drain(
    kubeconfig: &Path,
    pods: &kube::Api<Pod>,
    address: SocketAddr,
) {
    let limit = open_files_limit();
    assert!(
        limit >= 4096,
        "1,000 sockets need `ulimit -n` of 4096 or more (this process holds 1 per socket, the \
         pods inherit the node's limit), not {limit}"
    );
    let old_node = only_node_pod(pods).await;
    apply(kubeconfig, &worker_yaml("acks", ACKS_HOST, acks::WORKER));
    wait_until(
        "a WebSocket to the acknowledging Worker",
        REPLACED,
        || async { connect_from(address, ACKS_HOST, ANY).await.ok() },
    )
    .await;

    let started = Instant::now();
    let mut sockets = Vec::new();
    for (i, opened) in websocket::open_all(address, HOST, CLIENTS, |_| ANY)
        .await
        .into_iter()
        .enumerate()
    {
        let (socket, node) = opened.unwrap_or_else(|e| panic!("client {i}: {e}"));
        assert_eq!(node, old_node, "client {i}: served by the only node pod");
        sockets.push(socket);
    }
    let opened = started.elapsed();
    let started = Instant::now();
    let (mut trips, sockets) = websocket::echo_all(sockets, PER_CLIENT).await;
    eprintln!(
        "{CLIENTS} WebSockets through the router's Service open in {:.1}s; {} of {} messages \
         echoed in {:.1}s, round trip {}",
        opened.as_secs_f64(),
        trips.len(),
        CLIENTS * PER_CLIENT,
        started.elapsed().as_secs_f64(),
        percentiles(&mut trips)
    );
    assert_eq!(trips.len(), CLIENTS * PER_CLIENT);
    assert_eq!(sockets.len(), CLIENTS);

    // All 1,000 stream on; once each has had an echo, the node pod goes.
    let streaming = Arc::new(AtomicUsize::new(0));
    let handshakes = Arc::new(Semaphore::new(HANDSHAKES));
    let clients: Vec<_> = sockets
        .into_iter()
        .enumerate()
        .map(|(i, socket)| {
            tokio::spawn(stream_across_the_drain(
                i,
                socket,
                address,
                Arc::clone(&streaming),
                Arc::clone(&handshakes),
            ))
        })
        .collect();
    wait_until("every client to stream", websocket::ANSWER, || async {
        (streaming.load(Ordering::Relaxed) == CLIENTS).then_some(())
    })
    .await;
    let ack_run = acks::Run::start(address, ACKS_HOST, ACK_CLIENTS, |_| ANY);
    ack_run.half_acknowledged(REPLACED).await;
    let deleted = Instant::now();
    delete_pod(kubeconfig, &old_node);
    ack_run.drained(&old_node);
    let mut drained = Vec::new();
    for client in clients {
        drained.push(client.await.expect("a client's task"));
    }
    let all_back = deleted.elapsed();
    let acknowledged = ack_run.check(&old_node).await;
    for (i, client) in drained.iter().enumerate() {
        assert_eq!(client.code, Some(1012), "client {i}");
        assert_ne!(
            client.node, old_node,
            "client {i}: reconnected to the new pod"
        );
    }
    let since = |at: Instant| at.duration_since(deleted).as_secs_f64();
    let first_close = drained.iter().map(|d| d.closed).min().map_or(0.0, since);
    let last_close = drained.iter().map(|d| d.closed).max().map_or(0.0, since);
    let streamed: usize = drained.iter().map(|d| d.streamed).sum();
    let mut reconnects: Vec<_> = drained.iter().map(|d| d.reconnect).collect();
    let mut trips: Vec<_> = drained.iter().flat_map(|d| d.trips.clone()).collect();
    assert_eq!(trips.len(), CLIENTS * PER_CLIENT);
    eprintln!(
        "node pod {old_node} deleted under {CLIENTS} streaming sockets ({streamed} messages \
         echoed on them in all): every one closed 1012, {first_close:.1}s to {last_close:.1}s \
         after the delete, and reconnected to {}, all echoing again {:.1}s after the delete; \
         close to echo again {}; round trip after {}",
        drained[0].node,
        all_back.as_secs_f64(),
        percentiles(&mut reconnects),
        percentiles(&mut trips)
    );
    eprintln!("acknowledgement protocol across the node pod's delete: {acknowledged}");
}
