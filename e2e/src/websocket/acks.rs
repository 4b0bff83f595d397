//! An acknowledgement protocol across a drain (issue 33): clients of the
//! [`WORKER`] send numbered messages, [`WINDOW`] unacknowledged at most;
//! half-way a node drains while they send, each of its sockets should get
//! 1012, and its client reconnects and sends again what was not
//! acknowledged. [`Run::check`] asserts that every message sent ended up
//! acknowledged, each acknowledgement naming a message sent, with its length.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::SinkExt as _;
use isolane_testenv::wait_until;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::{connect_from, next};

/// Acknowledges each message `<number>:<payload>` with
/// `ack:<number>:<payload's length>` once it has it (its clients are all
/// WebSocket clients: it answers nothing else).
pub const WORKER: &str = r#"
export default {
  fetch() {
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

/// Messages each client sends at least.
pub const NUMBERED: u64 = 150;
/// Messages a client has unacknowledged at most.
pub const WINDOW: usize = 4;
/// How long a client tries to reconnect.
const RECONNECT: Duration = Duration::from_secs(60);

/// One client of the acknowledging Worker: what it sent and what came back.
#[derive(Default)]
pub struct Acks {
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
        let n: u64 = parts.next().and_then(|n| n.parse().ok()).expect("a number");
        let len: usize = parts.next().and_then(|n| n.parse().ok()).expect("a length");
        if let Some(payload) = self.unacknowledged.remove(&n) {
            assert_eq!(
                payload.len() - payload.find(':').unwrap_or_default() - 1,
                len
            );
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
    host: String,
    from: [u8; 4],
    client: usize,
    total: Arc<AtomicUsize>,
    mut drained: watch::Receiver<Option<String>>,
) -> Acks {
    let mut acks = Acks::default();
    let (mut socket, node) = connect_from(ingress, &host, from)
        .await
        .unwrap_or_else(|e| panic!("client {client}: {e}"));
    acks.nodes.push(node);
    let (mut gated, mut on_drained, mut target) = (false, false, NUMBERED / 2);
    loop {
        if !gated && acks.next == target && acks.unacknowledged.is_empty() {
            let name = drained
                .wait_for(Option::is_some)
                .await
                .expect("the run goes on")
                .clone();
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
        let (again, node) = wait_until("a reconnect", RECONNECT, || async {
            connect_from(ingress, &host, from).await.ok()
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

/// Clients of the [`WORKER`] under way.
pub struct Run {
    clients: Vec<JoinHandle<Acks>>,
    total: Arc<AtomicUsize>,
    drained: watch::Sender<Option<String>>,
}

impl Run {
    /// `clients` clients of the Worker on `host` through the router at
    /// `ingress`, client `i` from `from(i)`.
    pub fn start(
        ingress: SocketAddr,
        host: &str,
        clients: usize,
        from: fn(usize) -> [u8; 4],
    ) -> Run {
        let total = Arc::new(AtomicUsize::new(0));
        let (drained, watching) = watch::channel(None);
        let clients = (0..clients)
            .map(|client| {
                tokio::spawn(ack_client(
                    ingress,
                    host.to_owned(),
                    from(client),
                    client,
                    Arc::clone(&total),
                    watching.clone(),
                ))
            })
            .collect();
        Run {
            clients,
            total,
            drained,
        }
    }

    /// Waits until every client has had its first half acknowledged (and
    /// waits for [`Run::drained`]).
    pub async fn half_acknowledged(&self, within: Duration) {
        let half = self.clients.len() * (NUMBERED as usize / 2);
        wait_until("half the messages acknowledged", within, || async {
            (self.total.load(Ordering::Relaxed) >= half).then_some(())
        })
        .await;
    }

    /// Tells the clients that `node` drains: its clients send on until
    /// their sockets close.
    pub fn drained(&self, node: &str) {
        let _ = self.drained.send(Some(node.to_owned()));
    }

    /// Waits for every client and asserts that nothing was lost and that
    /// each socket on the `drained` node closed 1012 and reconnected to
    /// another; a summary of the run.
    pub async fn check(self, drained: &str) -> String {
        let clients = self.clients.len();
        let (mut on_drained, mut resent, mut sent) = (0, 0, 0);
        for (client, acks) in self.clients.into_iter().enumerate() {
            let acks = acks.await.expect("a client's task");
            // Every message sent is acknowledged, none lost on the way.
            assert!(acks.next >= NUMBERED, "client {client}");
            assert_eq!(acks.acknowledged.len() as u64, acks.next, "client {client}");
            assert!(acks.unacknowledged.is_empty(), "client {client}");
            sent += acks.next as usize;
            if acks.nodes.first().map(String::as_str) == Some(drained) {
                on_drained += 1;
                assert_eq!(
                    acks.first_close,
                    Some(1012),
                    "client {client}: {:?}",
                    acks.nodes
                );
                assert!(
                    acks.nodes.last().map(String::as_str) != Some(drained),
                    "client {client}: {:?}",
                    acks.nodes
                );
            }
            resent += acks.resent;
        }
        let acknowledged = self.total.load(Ordering::Relaxed);
        assert_eq!(acknowledged, sent);
        assert!(on_drained > 0);
        format!(
            "{acknowledged} of {sent} messages acknowledged; {on_drained} of {clients} sockets \
             closed 1012 by the drain, reconnected and sent {resent} unacknowledged messages again"
        )
    }
}
