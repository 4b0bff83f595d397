//! WebSockets through the router to a node in another process, over the
//! mutual-TLS gRPC channel (issue 33): a real WebSocket client, a real
//! router, real nodes and real V8.
//!
//! - [`echo_close_limits_and_a_flood_beside_a_benign_socket`] — 1,000
//!   messages echoed; a Worker's close reaches the client with its code and
//!   reason, a client's close reaches the Worker's `close` listener; the
//!   1 MiB cap (1009) and the idle timeout (1001) hold through the router;
//!   a hostile client that floods without reading and a hostile Worker
//!   (another namespace, same node and thread) that floods a client that
//!   does not read each lose their own socket while a benign socket keeps
//!   echoing before, during and after.
//! - [`a_killed_node_closes_its_sockets`] — one client (an address) holds
//!   at most half a Worker's sockets on a thread (63 beside one, then 429:
//!   past its share of 16 once the Worker is short of them) while
//!   another still connects; many clients together meet the Worker's budget
//!   (128, then 503), freed when they leave; then SIGKILL of the node mid-socket: the client gets a close
//!   (1011), not a hang; the time is printed.
//! - [`a_worker_on_a_node_opens_a_websocket_to_a_server`] — an outbound
//!   socket (`new WebSocket`) from a Worker on a node process to a server
//!   on loopback under the node's egress policy, counted in the node's
//!   socket metrics (`peer="server"`); a refused one never opens.
//! - [`an_http2_client_opens_a_websocket_with_extended_connect`] — RFC 8441
//!   through the router: 200 messages echoed on an HTTP/2 stream, the
//!   Worker's close with its code and reason.
//! - [`drain_and_router_shutdown_close_sockets_with_1012_after_their_grace`]
//!   — SIGTERM of the socket's node: new sockets reach the other node at
//!   once, the open one still echoes during the node's WebSocket grace,
//!   then gets 1012, and a reconnect works; SIGTERM of the router: no new
//!   connection, the open socket still echoes during the router's grace,
//!   then gets 1012, and the router exits.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::websocket::{Socket, connect_from};
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, wait_until};
use tempfile::TempDir;
use tokio::sync::{Mutex, MutexGuard};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

const NAMESPACE: &str = "demo";
const HOSTILE: &str = "hostile";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);
/// How long a client waits for any one answer or close.
const ANSWER: Duration = Duration::from_secs(30);

/// One fleet at a time in this test binary.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// The echo Worker of docs/websockets.md, and a few commands: `close-me`
/// closes with 4000 "bye", `flood` sends 2,000 × 64 KiB at once,
/// `handshake` answers with the handshake's method and headers as the
/// Worker saw them; the last close it saw is at `/last-close`.
const ECHO: &str = r#"
let lastClose = 'none';
export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/last-close') return new Response(lastClose);
    if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket', { status: 426 });
    const [client, server] = Object.values(new WebSocketPair());
    const h = request.headers;
    const handshake = `${request.method} ${h.get('upgrade')} ${h.get('connection')} ${h.get('sec-websocket-version')} key:${h.has('sec-websocket-key')}`;
    server.accept();
    server.addEventListener('message', (event) => {
      if (event.data === 'close-me') return server.close(4000, 'bye');
      if (event.data === 'handshake') return server.send(handshake);
      if (event.data === 'flood') {
        const chunk = 'x'.repeat(64 * 1024);
        try { for (let i = 0; i < 2000; i++) server.send(chunk); } catch (e) {}
        return;
      }
      server.send(event.data);
    });
    server.addEventListener('close', (event) => { lastClose = `${event.code} ${event.reason}`; });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// Its `close` listener says what `readyState` it sees (a send that throws
/// once the runtime answered), then closes with 4002: served at a date
/// before 2026-04-07 (`closer-before.test`: that close is the client's
/// reply) and one after (`closer-after.test`: the runtime's reply with the
/// client's own code came first).
const CLOSER: &str = r#"
export default {
  fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('close', (event) => {
      try { server.send(`close ${event.code} seen in state ${server.readyState}`); } catch { /* answered */ }
      server.close(4002, 'worker reply');
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// `CLOSER` as `name` on `host` at compatibility date `date`.
fn closer(name: &str, host: &str, date: &str) -> isolane_crds::Worker {
    let mut worker = inline_worker(name, CLOSER, &[host]);
    worker.spec.compatibility_date = Some(date.to_owned());
    worker
}

/// An outbound WebSocket from a Worker: `new WebSocket(upstream)` with
/// the `on…` attributes, `n` messages sent one after the other and
/// echoed, then a close with 1000; answers with what it saw (or the
/// failure the `error` event carried).
const DIALER: &str = r#"
export default {
  async fetch(request) {
    const params = new URL(request.url).searchParams;
    const n = Number(params.get('n') ?? '1');
    const ws = new WebSocket(params.get('upstream'));
    const seen = await new Promise((resolve) => {
      let echoed = 0;
      ws.onopen = () => ws.send('message 0');
      ws.onmessage = (event) => {
        echoed += 1;
        if (echoed < n) ws.send(`message ${echoed}`);
        else { ws.close(1000, 'done'); resolve(`echoed ${echoed}`); }
      };
      ws.onerror = (event) => resolve(`error ${event.message}`);
    });
    return new Response(seen);
  },
};
"#;

struct System {
    cluster: Cluster,
    _cp: ControlPlane,
    dir: TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl System {
    /// `nodes` nodes of one thread each (every Worker on the same thread),
    /// sockets idle for `idle_secs` closed; the echo Worker as
    /// `demo/echo` on `echo.test` and `hostile/flood` on `flood.test`.
    async fn start(nodes: usize, idle_secs: u32) -> Self {
        Self::start_graced(nodes, idle_secs, Duration::ZERO, Duration::ZERO).await
    }

    /// [`System::start`] with the nodes' and the router's
    /// `--websocket-drain-grace` (the nodes' drain 10 s longer).
    async fn start_graced(
        nodes: usize,
        idle_secs: u32,
        node_grace: Duration,
        router_grace: Duration,
    ) -> Self {
        let serial = SERIAL.lock().await;
        let duration = |d: Duration| humantime::format_duration(d).to_string();
        let cp = ControlPlane::start().await.expect("control plane starts");
        workers::prepare(&cp, &[NAMESPACE, HOSTILE]).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let options = ClusterOptions {
            nodes,
            node: NodeOptions {
                threads: 1,
                drain_timeout: node_grace + Duration::from_secs(10),
                extra_args: vec![
                    // The dialer's upstream: one loopback address allowed
                    // (the default policy refuses loopback).
                    "--egress-allow".to_owned(),
                    "127.0.0.1/32".to_owned(),
                    "--websocket-idle-secs".to_owned(),
                    idle_secs.to_string(),
                    "--websocket-drain-grace".to_owned(),
                    duration(node_grace),
                ],
                ..NodeOptions::default()
            },
            router: RouterOptions {
                extra_args: vec![
                    "--shutdown-grace".to_owned(),
                    "5s".to_owned(),
                    "--websocket-drain-grace".to_owned(),
                    duration(router_grace),
                ],
                ..RouterOptions::default()
            },
            ..ClusterOptions::default()
        };
        let cluster = Cluster::start(&cp, dir.path(), options).await;
        let system = Self {
            cluster,
            _cp: cp,
            dir,
            _serial: serial,
        };
        let path = system.dir.path().join("echo.yaml");
        kubectl::apply_workers(
            &system._cp,
            &path,
            NAMESPACE,
            &[
                inline_worker("echo", ECHO, &["echo.test"]),
                inline_worker("dialer", DIALER, &["dialer.test"]),
                closer("closer-before", "closer-before.test", "2026-03-01"),
                closer("closer-after", "closer-after.test", "2026-11-01"),
            ],
        )
        .await;
        let path = system.dir.path().join("flood.yaml");
        kubectl::apply_workers(
            &system._cp,
            &path,
            HOSTILE,
            &[inline_worker("flood", ECHO, &["flood.test"])],
        )
        .await;
        for host in [
            "echo.test",
            "flood.test",
            "closer-before.test",
            "closer-after.test",
        ] {
            connect_within(system.ingress(), host, SETTLE).await;
        }
        system
    }

    fn ingress(&self) -> SocketAddr {
        self.cluster.ingress()
    }
}

/// A socket to `host`'s Worker through the router at `ingress`, and the
/// node that serves it.
async fn connect(ingress: SocketAddr, host: &str) -> Result<(Socket, String), String> {
    connect_from(ingress, host, [127, 0, 0, 1]).await
}

async fn connect_within(ingress: SocketAddr, host: &str, within: Duration) -> (Socket, String) {
    wait_until(&format!("a WebSocket to {host}"), within, || async {
        connect(ingress, host).await.ok()
    })
    .await
}

/// The next data or close message (pongs skipped); `None` when the
/// connection ended without one.
async fn next(socket: &mut Socket) -> Option<Message> {
    loop {
        let message = tokio::time::timeout(ANSWER, socket.next())
            .await
            .expect("an answer in time")?;
        match message {
            Ok(Message::Pong(_) | Message::Ping(_)) => continue,
            Ok(message) => return Some(message),
            Err(_) => return None,
        }
    }
}

/// The close frame the socket gets next, skipping data messages.
async fn close_code(socket: &mut Socket) -> Option<(u16, String)> {
    loop {
        match next(socket).await? {
            Message::Close(frame) => {
                return frame.map(|f| (u16::from(f.code), f.reason.to_string()));
            }
            _ => continue,
        }
    }
}

/// Sends `text` and expects it back.
async fn echoes(socket: &mut Socket, text: &str) -> bool {
    if socket.send(Message::text(text)).await.is_err() {
        return false;
    }
    matches!(next(socket).await, Some(Message::Text(t)) if t.as_str() == text)
}

/// Reads `socket` until it closes: the data messages it got, and the close
/// code (`None` when it ended without a close frame).
async fn read_to_close(mut socket: Socket) -> (usize, Option<u16>) {
    let mut received = 0usize;
    loop {
        match next(&mut socket).await {
            Some(Message::Close(frame)) => return (received, frame.map(|f| u16::from(f.code))),
            Some(_) => received += 1,
            None => return (received, None),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_close_limits_and_a_flood_beside_a_benign_socket() {
    let system = System::start(1, 5).await;
    let ingress = system.ingress();
    let (mut benign, node) = connect(ingress, "echo.test").await.unwrap();
    assert!(!node.is_empty(), "the 101 names its node");

    // 1,000 messages, text and binary in turn, each echoed.
    let started = Instant::now();
    let mut echoed = 0;
    for i in 0..1000usize {
        let message = if i % 2 == 0 {
            Message::text(format!("message {i}"))
        } else {
            Message::binary(Bytes::from(vec![i as u8; 1 + i * 10]))
        };
        benign.send(message.clone()).await.unwrap();
        if next(&mut benign).await == Some(message) {
            echoed += 1;
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "1000 round trips through the router to the node: {echoed} echoed in {:.2}s ({:.2} ms each)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / 1000.0
    );
    assert_eq!(echoed, 1000);
    let open = system
        .cluster
        .router
        .metric("isolane_router_websockets_open")
        .await;
    let open_on_node = system.cluster.nodes[0]
        .metric_sum("isolane_node_websockets_open", "thread=\"0\"")
        .await;
    let open_for_worker = system
        .cluster
        .router
        .metric("isolane_router_worker_websockets_open{worker=\"demo/echo\"}")
        .await;
    eprintln!(
        "open sockets: router {open:?}, node {open_on_node:?}, the Worker {open_for_worker:?}"
    );
    assert_eq!(open, Some(1.0));
    assert_eq!(open_on_node, Some(1.0));
    assert_eq!(open_for_worker, Some(1.0));

    // A client's ping through the router is answered with its payload, and
    // the socket echoes on.
    let payload = Bytes::from_static(b"a ping through the router");
    benign.send(Message::Ping(payload.clone())).await.unwrap();
    let pong = tokio::time::timeout(ANSWER, async {
        loop {
            match benign.next().await {
                Some(Ok(Message::Pong(data))) => break Some(data),
                Some(Ok(_)) => continue,
                _ => break None,
            }
        }
    })
    .await
    .expect("a pong in time");
    assert_eq!(pong, Some(payload));
    assert!(echoes(&mut benign, "after the ping").await);

    // The Worker closes: the client gets its code and reason.
    let (mut closing, _) = connect(ingress, "echo.test").await.unwrap();
    closing.send(Message::text("close-me")).await.unwrap();
    assert_eq!(
        close_code(&mut closing).await,
        Some((4000, "bye".to_owned()))
    );

    // The client closes: the Worker's `close` listener sees its code.
    let (mut leaving, _) = connect(ingress, "echo.test").await.unwrap();
    leaving
        .close(Some(CloseFrame {
            code: CloseCode::from(4001),
            reason: "client bye".into(),
        }))
        .await
        .unwrap();
    wait_until("the Worker to see the client's close", SETTLE, || async {
        let reply = Ingress::new(ingress)
            .get("echo.test", "/last-close")
            .await
            .ok()?;
        (reply.body == "4001 client bye").then_some(())
    })
    .await;

    // By the Worker's date (`web_socket_auto_reply_to_close`), through
    // router and node: the Worker's own close answers the client's, or
    // the runtime's with the client's code.
    for (host, expected) in [
        (
            "closer-before.test",
            vec!["close 4001 seen in state 2", "4002 worker reply"],
        ),
        ("closer-after.test", vec!["4001 client bye"]),
    ] {
        let (mut socket, _) = connect(ingress, host).await.unwrap();
        socket
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::from(4001),
                reason: "client bye".into(),
            })))
            .await
            .unwrap();
        let mut seen = Vec::new();
        while let Some(message) = next(&mut socket).await {
            match message {
                Message::Text(text) => seen.push(text.to_string()),
                Message::Close(frame) => {
                    seen.extend(frame.map(|f| format!("{} {}", u16::from(f.code), f.reason)));
                    break;
                }
                _ => {}
            }
        }
        eprintln!("{host}: the client got {seen:?} after its close");
        assert_eq!(seen, expected, "{host}");
    }

    // A message over 1 MiB: 1009 from the router, the benign socket on.
    // (The router may close before it has read the rest: the send can
    // fail, the close frame is still there to read.)
    let (mut big, _) = connect(ingress, "echo.test").await.unwrap();
    let _ = big
        .send(Message::binary(Bytes::from(vec![0u8; (1 << 20) + 1])))
        .await;
    assert_eq!(close_code(&mut big).await.map(|c| c.0), Some(1009));
    assert!(echoes(&mut benign, "after the big message").await);
    // A message at the cap crosses router and node whole, both ways.
    let whole = Message::binary(Bytes::from(vec![8u8; 1 << 20]));
    benign.send(whole.clone()).await.unwrap();
    assert_eq!(next(&mut benign).await, Some(whole));

    // A hostile client floods the benign Worker without reading its echoes;
    // a hostile Worker floods a client that does not read. Each loses its
    // own socket; the benign socket echoes throughout.
    let (mut flooding_client, _) = connect(ingress, "echo.test").await.unwrap();
    let (mut flooded, _) = connect(ingress, "flood.test").await.unwrap();
    flooded.send(Message::text("flood")).await.unwrap();
    let chunk = "y".repeat(64 * 1024);
    let flood = tokio::spawn(async move {
        let mut sent = 0usize;
        for _ in 0..2000 {
            let send = flooding_client.send(Message::text(chunk.as_str()));
            match tokio::time::timeout(Duration::from_secs(5), send).await {
                Ok(Ok(())) => sent += 1,
                _ => break,
            }
        }
        (sent, flooding_client)
    });
    let mut during = 0;
    for i in 0..50 {
        assert!(
            echoes(&mut benign, &format!("during the flood {i}")).await,
            "benign echo {i} during the flood"
        );
        during += 1;
    }
    let (sent, flooding_client) = flood.await.unwrap();
    eprintln!(
        "hostile client sent {sent} × 64 KiB without reading; benign echoed {during} meanwhile"
    );
    // Neither hostile socket is served for ever: the flooded client, once it
    // reads, finds its socket dropped (1011) after at most the buffers. Both
    // are read to their close while the benign socket goes on echoing (it
    // would otherwise idle past the node's 5 s while they close, and be
    // closed 1001 as the idle test below expects).
    let flooded = tokio::spawn(read_to_close(flooded));
    let flooding = tokio::spawn(read_to_close(flooding_client));
    let mut meanwhile = 0;
    while !(flooded.is_finished() && flooding.is_finished()) {
        assert!(
            echoes(
                &mut benign,
                &format!("while the hostile sockets close {meanwhile}")
            )
            .await,
            "benign echo {meanwhile} while the hostile sockets close"
        );
        meanwhile += 1;
        // Pacing, not a wait: the loop's condition is the tasks' end.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (received, flooded_close) = flooded.await.unwrap();
    eprintln!("the flooded client got {received} of 2000 messages, then close {flooded_close:?}");
    assert!(
        received < 2000,
        "a client that did not read was buffered for: {received}"
    );
    assert_eq!(flooded_close, Some(1011));
    let (echoed_back, flooding_close) = flooding.await.unwrap();
    eprintln!(
        "the flooding client read {echoed_back} echoes back, then close {flooding_close:?}; the benign socket echoed {meanwhile} meanwhile"
    );
    assert!(echoes(&mut benign, "after the flood").await);

    // Idle for longer than the node's 5 s: 1001 (the benign socket too,
    // once it idles as long).
    let (mut idle, _) = connect(ingress, "echo.test").await.unwrap();
    let idled = Instant::now();
    assert_eq!(close_code(&mut idle).await.map(|c| c.0), Some(1001));
    eprintln!(
        "an idle socket closed after {:.1}s",
        idled.elapsed().as_secs_f64()
    );

    // Metrics on both sides.
    let router_messages = system
        .cluster
        .router
        .metric_sum(
            "isolane_router_websocket_messages_total",
            "direction=\"to_worker\"",
        )
        .await
        .unwrap_or(0.0);
    let node_messages = system.cluster.nodes[0]
        .metric_sum(
            "isolane_node_websocket_messages_total",
            "direction=\"to_client\"",
        )
        .await
        .unwrap_or(0.0);
    eprintln!(
        "messages counted: router to_worker {router_messages}, node to_client {node_messages}"
    );
    assert!(router_messages >= 1000.0 && node_messages >= 1000.0);
    // The 1,000 round trips alone were 2,500,500 binary bytes each way.
    for direction in ["to_worker", "to_client"] {
        let label = format!("direction=\"{direction}\"");
        let router_bytes = system
            .cluster
            .router
            .metric_sum("isolane_router_websocket_bytes_total", &label)
            .await;
        let node_bytes = system.cluster.nodes[0]
            .metric_sum("isolane_node_websocket_bytes_total", &label)
            .await;
        eprintln!("bytes {direction}: router {router_bytes:?}, node {node_bytes:?}");
        assert!(router_bytes >= Some(2_500_500.0) && node_bytes >= Some(2_500_500.0));
    }
    // Each close above, by code: 4000 and 4001 are `other`, the cap's
    // 1009, the dropped socket's 1011 (1006 on the node: no close frame
    // reached it), the idle timeout's 1001.
    let closes = [
        ("other", 2.0, 2.0),
        ("1009", 1.0, 1.0),
        ("1011", 1.0, 0.0),
        ("1006", 0.0, 1.0),
        ("1001", 1.0, 1.0),
    ];
    wait_until("the closes to be counted", SETTLE, || async {
        for (code, on_router, on_node) in closes {
            let label = format!("code=\"{code}\"");
            let router = system
                .cluster
                .router
                .metric_sum("isolane_router_websocket_closes_total", &label)
                .await
                .unwrap_or(0.0);
            let node = system.cluster.nodes[0]
                .metric_sum("isolane_node_websocket_closes_total", &label)
                .await
                .unwrap_or(0.0);
            eprintln!("closes {code}: router {router}, node {node}");
            (router >= on_router && node >= on_node).then_some(())?;
        }
        Some(())
    })
    .await;
    drop(benign);
    system.cluster.shutdown();
}

/// A WebSocket server on 127.0.0.1 that echoes every text and binary
/// message.
async fn upstream_echo() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut socket) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(message)) = socket.next().await {
                    if (message.is_text() || message.is_binary())
                        && socket.send(message).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    address
}

/// A Worker on a node process opens a WebSocket to a server on loopback
/// (the node's `--egress-allow 127.0.0.1/32`): 50 messages echoed, counted
/// in the node's socket metrics as a socket with a server (`peer="server"`,
/// `to_server` and `to_worker`, its close 1000, none left open); one to
/// 127.0.0.2, which the egress policy refuses, fails with the policy's
/// error and is never counted as opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_a_node_opens_a_websocket_to_a_server() {
    let system = System::start(1, 100).await;
    let upstream = upstream_echo().await;
    let ingress = Ingress::new(system.ingress());
    let path = format!("/?n=50&upstream=ws://{upstream}/");
    // The first answer once the router knows the Worker.
    let reply = wait_until("the dialer answers", SETTLE, || async {
        ingress
            .get("dialer.test", &path)
            .await
            .ok()
            .filter(|r| r.status != 404)
    })
    .await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "echoed 50"));
    let node = &system.cluster.nodes[0];
    wait_until("the outbound socket counted on the node", SETTLE, || async {
        let sum = |label: &'static str| node.metric_sum("isolane_node_websocket_messages_total", label);
        let sent = sum("peer=\"server\",direction=\"to_server\"").await?;
        let received = sum("peer=\"server\",direction=\"to_worker\"").await?;
        let closed = node
            .metric_sum("isolane_node_websocket_closes_total", "peer=\"server\",code=\"1000\"")
            .await?;
        let open = node
            .metric_sum("isolane_node_websockets_open", "peer=\"server\"")
            .await?;
        eprintln!("outbound on the node: {sent} sent (with the close), {received} received, {closed} closed with 1000, {open} open");
        (sent >= 51.0 && received >= 50.0 && closed >= 1.0 && open == 0.0).then_some(())
    })
    .await;
    let refused_port = upstream.port();
    let path = format!("/?upstream=ws://127.0.0.2:{refused_port}/");
    let reply = ingress.get("dialer.test", &path).await.unwrap();
    assert_eq!(reply.status, 200);
    assert!(
        reply.body.starts_with("error ") && reply.body.contains("refused by the egress policy"),
        "{}",
        reply.body
    );
    let closes = node
        .metric_sum("isolane_node_websocket_closes_total", "peer=\"server\"")
        .await;
    assert_eq!(closes, Some(1.0), "a refused socket never opened");
    system.cluster.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_closes_its_sockets() {
    let mut system = System::start(1, 100).await;
    let ingress = system.ingress();
    let (mut socket, node) = connect(ingress, "echo.test").await.unwrap();
    assert!(echoes(&mut socket, "before the kill").await);

    // What one anonymous client can hold: half the Worker's sockets on
    // the thread (128; the first client holds one), after which the Worker
    // is short of them and the client, past its share (16), is refused
    // with 429, while the first client still talks and connects.
    let hostile = [127, 0, 0, 66];
    let mut held = Vec::new();
    let refusal = loop {
        match connect_from(ingress, "echo.test", hostile).await {
            Ok((socket, _)) if held.len() < 200 => held.push(socket),
            Ok(_) => break "none".to_owned(),
            Err(error) => break error,
        }
    };
    eprintln!("one client held {} sockets, then: {refusal}", held.len());
    assert_eq!(
        held.len(),
        63,
        "one address takes at most half of a Worker's 128 sockets per thread"
    );
    assert!(refusal.contains("429"), "{refusal}");
    assert!(echoes(&mut socket, "while the hoarder is at its share").await);
    let (mut second, _) = connect(ingress, "echo.test").await.unwrap();
    assert!(echoes(&mut second, "a second socket of the first client").await);
    for hoarded in &mut held {
        assert!(echoes(hoarded, "hoarded").await);
    }
    // Many clients together still meet the Worker's budget (128): 503.
    let mut crowd = Vec::new();
    let refusal = 'fill: {
        for client in 1..=128u8 {
            for _ in 0..16 {
                match connect_from(ingress, "echo.test", [127, 0, 3, client]).await {
                    Ok((socket, _)) => crowd.push(socket),
                    Err(error) => break 'fill error,
                }
            }
        }
        "none".to_owned()
    };
    let open = 2 + held.len() + crowd.len();
    eprintln!(
        "{open} sockets open from {} clients, then: {refusal}",
        2 + crowd.len().div_ceil(16)
    );
    assert_eq!(open, 128, "the budget is the Worker's 128 per thread");
    assert!(refusal.contains("503"), "{refusal}");
    assert!(echoes(&mut socket, "while the budget is spent").await);
    drop((held, crowd, second));
    let (mut freed, _) = connect_within(ingress, "echo.test", SETTLE).await;
    assert!(echoes(&mut freed, "once the hoarders left").await);
    drop(freed);

    let killed = Instant::now();
    system.cluster.node_mut(&node).process.kill();
    let code = close_code(&mut socket).await.map(|c| c.0);
    let after = killed.elapsed();
    eprintln!(
        "SIGKILL of the node: the client got close {code:?} after {:.0} ms",
        after.as_secs_f64() * 1000.0
    );
    assert_eq!(code, Some(1011));
    system.cluster.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_opens_a_websocket_with_extended_connect() {
    use isolane_testenv::h2_websocket;
    let system = System::start(1, 100).await;
    let ingress = system.ingress();
    let mut h2 = h2_websocket::connect(ingress, "echo.test", "/")
        .await
        .unwrap();
    // The Worker saw the handshake as from HTTP/1.1.
    h2.send(Message::text("handshake")).await.unwrap();
    let seen = tokio::time::timeout(ANSWER, h2.next()).await.unwrap();
    assert!(
        matches!(&seen, Some(Ok(Message::Text(t))) if t.as_str() == "GET websocket Upgrade 13 key:true"),
        "{seen:?}"
    );
    let started = Instant::now();
    let mut echoed = 0;
    for i in 0..200usize {
        let message = if i % 2 == 0 {
            Message::text(format!("over h2 {i}"))
        } else {
            Message::binary(Bytes::from(vec![i as u8; 1 + i * 10]))
        };
        h2.send(message.clone()).await.unwrap();
        let answer = tokio::time::timeout(ANSWER, h2.next()).await.unwrap();
        if matches!(answer, Some(Ok(m)) if m == message) {
            echoed += 1;
        }
    }
    eprintln!(
        "200 round trips over an HTTP/2 extended CONNECT through the router: {echoed} echoed in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(echoed, 200);
    // The Worker's close reaches the h2 client with its code and reason.
    h2.send(Message::text("close-me")).await.unwrap();
    match tokio::time::timeout(ANSWER, h2.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(
                (u16::from(frame.code), frame.reason.as_str()),
                (4000, "bye")
            );
        }
        other => panic!("expected the Worker's close, got {other:?}"),
    }
    // An HTTP/1.1 socket beside it works as before.
    let (mut h1, _) = connect(ingress, "echo.test").await.unwrap();
    assert!(echoes(&mut h1, "over h1").await);
    system.cluster.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_and_router_shutdown_close_sockets_with_1012_after_their_grace() {
    // Graces long enough that "during the grace" holds on a slow machine;
    // the test waits on conditions, never on them.
    let mut system =
        System::start_graced(2, 100, Duration::from_secs(15), Duration::from_secs(10)).await;
    let ingress = system.ingress();
    let (mut socket, node) = connect(ingress, "echo.test").await.unwrap();
    assert!(echoes(&mut socket, "before the drain").await);
    let drained = Instant::now();
    system.cluster.node_mut(&node).drain();
    // New upgrades go to the Worker's next placement at once…
    let (mut again, other) = wait_until("a new socket on the other node", SETTLE, || async {
        let (socket, served_by) = connect(ingress, "echo.test").await.ok()?;
        (served_by != node).then_some((socket, served_by))
    })
    .await;
    eprintln!(
        "SIGTERM of the node: a new socket reached {other} after {:.1}s",
        drained.elapsed().as_secs_f64()
    );
    assert!(echoes(&mut again, "on the next placement").await);
    // …while the draining node's socket works on through its grace…
    assert!(echoes(&mut socket, "during the grace").await);
    // …and then closes with 1012.
    let code = close_code(&mut socket).await;
    eprintln!(
        "the client got close {code:?} {:.1}s after the SIGTERM (grace 15 s)",
        drained.elapsed().as_secs_f64()
    );
    assert_eq!(code.map(|c| c.0), Some(1012));
    let (mut reconnected, served_by) = connect(ingress, "echo.test").await.unwrap();
    assert_eq!(served_by, other);
    assert!(echoes(&mut reconnected, "after the drain").await);
    drop(reconnected);
    let status =
        tokio::task::block_in_place(|| system.cluster.node_mut(&node).process.wait_exit(SETTLE));
    assert!(
        status.is_some_and(|s| s.success()),
        "the drained node exits 0: {status:?}"
    );

    // The router stops: it takes no new connection, its open socket works
    // on through its grace, then gets 1012, and the router exits.
    let stopping = Instant::now();
    system
        .cluster
        .router
        .process
        .signal(nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    wait_until("the router refusing new sockets", SETTLE, || async {
        let attempt = tokio::time::timeout(Duration::from_secs(5), connect(ingress, "echo.test"));
        (!matches!(attempt.await, Ok(Ok(_)))).then_some(())
    })
    .await;
    assert!(echoes(&mut again, "during the router's grace").await);
    let code = close_code(&mut again).await;
    eprintln!(
        "SIGTERM of the router: the client got close {code:?} after {:.1}s (grace 10 s)",
        stopping.elapsed().as_secs_f64()
    );
    assert_eq!(code.map(|c| c.0), Some(1012));
    let status = tokio::task::block_in_place(|| {
        system
            .cluster
            .router
            .process
            .wait_exit(Duration::from_secs(30))
    });
    eprintln!(
        "the router exited after {:.1}s: {status:?}",
        stopping.elapsed().as_secs_f64()
    );
    assert!(status.is_some(), "the router exits within its graces");
    system.cluster.shutdown();
}
