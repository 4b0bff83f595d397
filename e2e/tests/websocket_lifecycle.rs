//! WebSocket lifecycles through the router and a node as processes (issue
//! 33), beside the traffic tests of `websocket.rs`:
//!
//! - an open socket stays on the revision it opened on after a new revision
//!   takes over: new sockets get the new revision, the old socket keeps
//!   answering from the old one until it closes;
//! - no silent half-open sockets: a router that stops answering without
//!   closing its connection (SIGSTOP: its TCP connections stay open) is
//!   found by the node's HTTP/2 pings, and the node closes that router's
//!   sockets (the Worker's `close` listener runs) within the keepalive.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, wait_until};
use nix::sys::signal::Signal;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

const NAMESPACE: &str = "demo";
const HOST: &str = "echo.test";
const SETTLE: Duration = Duration::from_secs(60);

type Socket = WebSocketStream<TcpStream>;

/// An echo Worker that prefixes each answer with its `version`; `/closes`
/// counts the `close` events it has seen.
fn echo(version: &str) -> String {
    format!(
        r#"
let closes = 0;
export default {{
  fetch(request) {{
    if (new URL(request.url).pathname === '/closes') return new Response(String(closes));
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => server.send('{version}:' + event.data));
    server.addEventListener('close', () => {{ closes += 1; }});
    return new Response(null, {{ status: 101, webSocket: client }});
  }},
}};
"#
    )
}

async fn connect(ingress: SocketAddr) -> Option<Socket> {
    let tcp = TcpStream::connect(ingress).await.ok()?;
    let (socket, _) = tokio_tungstenite::client_async(format!("ws://{HOST}/"), tcp)
        .await
        .ok()?;
    Some(socket)
}

/// Sends `text` and returns the answer.
async fn ask(socket: &mut Socket, text: &str) -> Option<String> {
    socket.send(Message::text(text)).await.ok()?;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .ok()??
            .ok()?;
        match message {
            Message::Text(text) => return Some(text.to_string()),
            Message::Ping(_) | Message::Pong(_) => continue,
            _ => return None,
        }
    }
}

async fn apply(cp: &ControlPlane, dir: &std::path::Path, version: &str) {
    let worker = inline_worker("echo", &echo(version), &[HOST]);
    let path = dir.join(format!("echo-{version}.yaml"));
    kubectl::apply_workers(cp, &path, NAMESPACE, &[worker]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_keep_their_revision_and_never_stay_half_open() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions {
        nodes: 1,
        node: NodeOptions {
            threads: 1,
            ..NodeOptions::default()
        },
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let ingress = cluster.ingress();

    // An open socket keeps its revision.
    apply(&cp, dir.path(), "v1").await;
    let mut old = wait_until("a socket on v1", SETTLE, || async {
        let mut socket = connect(ingress).await?;
        (ask(&mut socket, "hello").await? == "v1:hello").then_some(socket)
    })
    .await;
    apply(&cp, dir.path(), "v2").await;
    let mut new = wait_until("a socket on v2", SETTLE, || async {
        let mut socket = connect(ingress).await?;
        (ask(&mut socket, "hello").await? == "v2:hello").then_some(socket)
    })
    .await;
    assert_eq!(ask(&mut old, "still").await.as_deref(), Some("v1:still"));
    assert_eq!(ask(&mut new, "again").await.as_deref(), Some("v2:again"));
    old.close(None).await.unwrap();

    // A frozen router: the node finds it by its pings and closes its socket.
    let node = &cluster.nodes[0];
    let open = || async {
        node.metric_sum("isolane_node_websockets_open", "")
            .await
            .unwrap_or(-1.0)
    };
    wait_until("the old socket closed on the node", SETTLE, || async {
        (open().await == 1.0).then_some(())
    })
    .await;
    cluster.router.process.signal(Signal::SIGSTOP).unwrap();
    let frozen = Instant::now();
    wait_until(
        "the node closes the frozen router's socket",
        SETTLE,
        || async { (open().await == 0.0).then_some(()) },
    )
    .await;
    eprintln!(
        "a frozen router's socket closed by the node after {:?}",
        frozen.elapsed()
    );
    cluster.router.process.signal(Signal::SIGCONT).unwrap();
    drop(new);
    // The router serves again, and v2's Worker saw its socket close.
    let http = Ingress::new(ingress);
    wait_until(
        "v2 saw the frozen router's socket close",
        SETTLE,
        || async {
            let reply = http.get(HOST, "/closes").await.ok()?;
            (reply.status == 200 && reply.body == "1").then_some(())
        },
    )
    .await;
    let mut again = connect(ingress)
        .await
        .expect("a socket after the router thawed");
    assert_eq!(ask(&mut again, "back").await.as_deref(), Some("v2:back"));
    cluster.shutdown();
}
