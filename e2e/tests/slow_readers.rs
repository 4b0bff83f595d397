//! Slow readers of one namespace cannot stall another namespace's calls
//! (issue 33): every call of a router thread to a node thread shares one
//! HTTP/2 connection, and data a client does not read stays in the router's
//! receive buffer, holding that connection's flow-control window.
//!
//! One router thread and one node thread, so every call shares one
//! connection. A hostile Worker (namespace `hostile`) streams large response
//! bodies to anonymous clients that read the head and then nothing; a
//! benign Worker (namespace `demo`, same node thread) is called before,
//! while the slow readers hold their streams, and after. Then the same with
//! WebSocket clients of a Worker that floods them and that they never read.
//! The router's memory growth during the attack is printed.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use futures::SinkExt as _;
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::websocket::connect_from;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, wait_until};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;

const BENIGN_NAMESPACE: &str = "demo";
const HOSTILE_NAMESPACE: &str = "hostile";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);
/// Slow readers: more than the 16 that filled the connection window of
/// 16 MiB at 1 MiB per stream, fewer than a namespace's request slots on a
/// node thread (64, a quarter of the default 256 in flight).
const SLOW_READERS: u8 = 40;
/// How long a slow reader waits for its response's head.
const HEAD: Duration = Duration::from_secs(30);

/// Streams 64 MiB in 64 KiB chunks as the reader takes them; `/pulled`
/// answers how many chunks this isolate has produced so far. A WebSocket
/// is flooded with 2,000 × 64 KiB once its client says anything.
const HOSTILE: &str = r#"
let pulled = 0;
export default {
  fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === '/pulled') return new Response(String(pulled));
    if (request.headers.get('upgrade') === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair());
      server.accept();
      server.addEventListener('message', () => {
        const chunk = 'x'.repeat(64 * 1024);
        try { for (let i = 0; i < 2000; i++) server.send(chunk); } catch (e) {}
      });
      return new Response(null, { status: 101, webSocket: client });
    }
    const chunk = new Uint8Array(64 * 1024).fill(120);
    let sent = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (sent === 1024) return controller.close();
        sent += 1;
        pulled += 1;
        controller.enqueue(chunk.slice());
      },
    });
    return new Response(body);
  },
};
"#;

const BENIGN: &str = r#"
export default { fetch() { return new Response('benign ok'); } };
"#;

struct System {
    cluster: Cluster,
    _cp: ControlPlane,
    _dir: tempfile::TempDir,
}

impl System {
    async fn start() -> Self {
        let cp = ControlPlane::start().await.expect("control plane starts");
        workers::prepare(&cp, &[BENIGN_NAMESPACE, HOSTILE_NAMESPACE]).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let options = ClusterOptions {
            nodes: 1,
            node: NodeOptions {
                threads: 1,
                // The node's default: a namespace may have a quarter of it
                // (64) in flight on a thread.
                max_inflight_per_thread: 256,
                ..NodeOptions::default()
            },
            router: RouterOptions {
                extra_args: vec![
                    // One router thread: one connection to the node thread.
                    "--workers".to_owned(),
                    "1".to_owned(),
                    // The slow readers hold their streams for the whole
                    // test, not only until the default 30 s deadline.
                    "--request-timeout".to_owned(),
                    "300s".to_owned(),
                ],
                ..RouterOptions::default()
            },
            ..ClusterOptions::default()
        };
        let cluster = Cluster::start(&cp, dir.path(), options).await;
        let benign = dir.path().join("benign.yaml");
        kubectl::apply_workers(
            &cp,
            &benign,
            BENIGN_NAMESPACE,
            &[inline_worker("benign", BENIGN, &["benign.test"])],
        )
        .await;
        let hostile = dir.path().join("hostile.yaml");
        kubectl::apply_workers(
            &cp,
            &hostile,
            HOSTILE_NAMESPACE,
            &[inline_worker("stream", HOSTILE, &["stream.test"])],
        )
        .await;
        let system = Self {
            cluster,
            _cp: cp,
            _dir: dir,
        };
        let ingress = Ingress::new(system.cluster.ingress());
        for host in ["benign.test", "stream.test"] {
            wait_until(&format!("{host} answers"), SETTLE, || async {
                ingress
                    .get(host, "/pulled")
                    .await
                    .ok()?
                    .is_success()
                    .then_some(())
            })
            .await;
        }
        system
    }

    fn ingress(&self) -> Ingress {
        Ingress::new(self.cluster.ingress())
    }

    /// The router's peak resident memory so far, in KiB.
    fn router_rss_kib(&self) -> u64 {
        self.cluster.router.process.peak_rss_kib().unwrap()
    }
}

/// The benign Worker answers (within the ingress client's 15 s).
async fn benign_answers(ingress: &Ingress, when: &str) {
    let reply = ingress.get("benign.test", "/").await;
    assert!(
        matches!(&reply, Ok(r) if r.body == "benign ok"),
        "the benign Worker answers {when}: {reply:?}"
    );
}

/// A client from its own loopback address with a small receive buffer that
/// asks for the hostile stream, reads the start of its head, then reads
/// nothing more; the stream, and whether the head was a 200 (`None` when no
/// head came within [`HEAD`]).
async fn slow_reader(router: SocketAddr, index: u8) -> (TcpStream, Option<bool>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind((Ipv4Addr::new(127, 0, 3, index), 0).into())
        .unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(router).await.unwrap();
    stream
        .write_all(b"GET /stream HTTP/1.1\r\nhost: stream.test\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    let read = tokio::time::timeout(HEAD, stream.read_exact(&mut head)).await;
    let ok = matches!(read, Ok(Ok(_))).then(|| &head == b"HTTP/1.1 200");
    (stream, ok)
}

/// The hostile isolate's count of chunks produced.
async fn pulled(ingress: &Ingress) -> u64 {
    let reply = ingress.get("stream.test", "/pulled").await;
    match reply {
        Ok(reply) => reply.body.parse().unwrap(),
        Err(error) => panic!("the hostile Worker's own count does not answer: {error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_of_one_namespace_do_not_stall_another() {
    let system = System::start().await;
    let ingress = system.ingress();
    let router = system.cluster.ingress();
    benign_answers(&ingress, "before").await;
    let rss_before = system.router_rss_kib();

    // Response bodies nobody reads, all asked for at once.
    let readers: Vec<_> = (1..=SLOW_READERS)
        .map(|index| tokio::spawn(slow_reader(router, index)))
        .collect();
    // Every stream has started and every buffer on the way has filled: the
    // hostile Worker is asked for no more chunks across five benign calls in
    // a row.
    let mut last = pulled(&ingress).await;
    let mut steady = 0;
    let mut rounds = 0;
    while steady < 5 || !readers.iter().all(tokio::task::JoinHandle::is_finished) {
        benign_answers(
            &ingress,
            &format!("while {SLOW_READERS} readers stall (round {rounds})"),
        )
        .await;
        let now = pulled(&ingress).await;
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
        rounds += 1;
        assert!(rounds < 2000, "the hostile streams never stopped growing");
    }
    let mut streams = Vec::new();
    for reader in readers {
        let (stream, head) = reader.await.unwrap();
        assert_eq!(head, Some(true), "each slow reader's stream started");
        streams.push(stream);
    }
    let rss_stalled = system.router_rss_kib();
    eprintln!(
        "{SLOW_READERS} slow readers: the Worker produced {} MiB ({last} chunks of 64 KiB) \
         before every buffer was full; router peak RSS {rss_before} -> {rss_stalled} KiB \
         ({} KiB per slow reader); benign calls answered in {rounds} rounds",
        last / 16,
        rss_stalled.saturating_sub(rss_before) / u64::from(SLOW_READERS),
    );
    for round in 0..20 {
        benign_answers(&ingress, &format!("with every buffer full (call {round})")).await;
    }
    drop(streams);
    benign_answers(&ingress, "after the slow readers left").await;

    // WebSockets flooded by their Worker and never read.
    let mut sockets = Vec::new();
    for index in 1..=SLOW_READERS {
        let (mut socket, _) = connect_from(router, "stream.test", [127, 0, 4, index])
            .await
            .unwrap();
        socket.send(Message::text("flood")).await.unwrap();
        sockets.push(socket);
    }
    for round in 0..20 {
        benign_answers(
            &ingress,
            &format!("while {SLOW_READERS} sockets are flooded (call {round})"),
        )
        .await;
    }
    // The router drops each flooded socket at its queue's 16 messages.
    wait_until("the flooded sockets to be dropped", SETTLE, || async {
        let open = system
            .cluster
            .router
            .metric("isolane_router_websockets_open")
            .await?;
        (open == 0.0).then_some(())
    })
    .await;
    eprintln!(
        "router peak RSS after the flooded sockets: {} KiB",
        system.router_rss_kib()
    );
    drop(sockets);
    benign_answers(&ingress, "after the flooded sockets").await;
}
