//! WebSocket clients through the router, for the WebSocket e2e tests: one
//! socket ([`connect_from`]), many opened at once ([`open_all`]) and the
//! echo round trips of many clients at once ([`echo_all`]).

pub mod acks;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// A client's socket.
pub type Socket = WebSocketStream<TcpStream>;

/// How long a client waits for any one answer or close.
pub const ANSWER: Duration = Duration::from_secs(60);

/// Handshakes in flight at once when opening many sockets (a handshake is a
/// request: the node admits 64 in flight per thread).
pub const HANDSHAKES: usize = 16;

/// Any local address: for a router that is not on loopback (a Service).
pub const ANY: [u8; 4] = [0, 0, 0, 0];

/// A socket to `host`'s Worker through the router at `ingress`, from the
/// local address `from` (a loopback address is a client of its own), and
/// the node that serves it (`x-isolane-node`).
pub async fn connect_from(
    ingress: SocketAddr,
    host: &str,
    from: [u8; 4],
) -> Result<(Socket, String), String> {
    let tcp = TcpSocket::new_v4().map_err(|e| e.to_string())?;
    tcp.bind((Ipv4Addr::from(from), 0).into())
        .map_err(|e| e.to_string())?;
    let tcp = tcp.connect(ingress).await.map_err(|e| e.to_string())?;
    let (socket, response) = tokio_tungstenite::client_async(format!("ws://{host}/"), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let node = response
        .headers()
        .get("x-isolane-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Ok((socket, node))
}

/// `clients` sockets to `host`'s Worker, client `i` from `from(i)`, all
/// open at once ([`HANDSHAKES`] handshakes at a time), in client order.
pub async fn open_all(
    ingress: SocketAddr,
    host: &str,
    clients: usize,
    from: fn(usize) -> [u8; 4],
) -> Vec<Result<(Socket, String), String>> {
    let handshakes = Arc::new(Semaphore::new(HANDSHAKES));
    let opening: Vec<_> = (0..clients)
        .map(|i| {
            let handshakes = Arc::clone(&handshakes);
            let host = host.to_owned();
            tokio::spawn(async move {
                let _permit = handshakes.acquire().await.map_err(|e| e.to_string())?;
                connect_from(ingress, &host, from(i)).await
            })
        })
        .collect();
    let mut sockets = Vec::with_capacity(clients);
    for opened in opening {
        sockets.push(opened.await.map_err(|e| e.to_string()).and_then(|r| r));
    }
    sockets
}

/// The next data or close message (pings and pongs skipped); `None` when
/// the connection ended without one. Panics past [`ANSWER`].
pub async fn next(socket: &mut Socket) -> Option<Message> {
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

/// Client `i`'s `m`th message: text and binary in turn.
pub fn message(i: usize, m: usize) -> Message {
    if m.is_multiple_of(2) {
        Message::text(format!("client {i} message {m}"))
    } else {
        Message::binary(Bytes::from(vec![(i + m) as u8; 1 + i % 700]))
    }
}

/// What one client's echoes came to.
pub enum Echoed {
    /// Every message came back as sent; the socket is still open.
    All(Box<Socket>),
    /// The socket closed first, with this code (`None`: no close frame).
    Closed(Option<u16>),
    /// Something else came back.
    Wrong(String),
}

/// Sends client `i`'s messages `from..to`, each after the echo of the one
/// before; the round trips of those echoed as sent, then how it ended.
pub async fn echo(
    i: usize,
    mut socket: Socket,
    messages: std::ops::Range<usize>,
) -> (Vec<Duration>, Echoed) {
    let mut trips = Vec::new();
    for m in messages {
        let sent = message(i, m);
        let started = Instant::now();
        // A failed send is told by what comes next (its close, or nothing).
        let _ = socket.send(sent.clone()).await;
        match next(&mut socket).await {
            Some(echo) if echo == sent => trips.push(started.elapsed()),
            Some(Message::Close(frame)) => {
                return (trips, Echoed::Closed(frame.map(|f| u16::from(f.code))));
            }
            None => return (trips, Echoed::Closed(None)),
            other => return (trips, Echoed::Wrong(format!("message {m}: {other:?}"))),
        }
    }
    (trips, Echoed::All(Box::new(socket)))
}

/// Every client echoes `per_client` messages at once, each on its socket;
/// the round trips of those echoed as sent (fewer than all when some were
/// not: each such client is printed) and the sockets of the clients that
/// had all theirs echoed, still open, in client order.
pub async fn echo_all(sockets: Vec<Socket>, per_client: usize) -> (Vec<Duration>, Vec<Socket>) {
    let clients: Vec<_> = sockets
        .into_iter()
        .enumerate()
        .map(|(i, socket)| tokio::spawn(echo(i, socket, 0..per_client)))
        .collect();
    let (mut trips, mut open) = (Vec::new(), Vec::new());
    for (i, client) in clients.into_iter().enumerate() {
        let Ok((echoed, ended)) = client.await else {
            eprintln!("client {i}: its task failed");
            continue;
        };
        trips.extend(echoed);
        match ended {
            Echoed::All(socket) => open.push(*socket),
            Echoed::Closed(code) => eprintln!("client {i}: closed ({code:?})"),
            Echoed::Wrong(what) => eprintln!("client {i}: {what}"),
        }
    }
    (trips, open)
}

/// Closes every socket (a close frame each), all at once.
pub async fn close_all(sockets: Vec<Socket>) {
    futures::future::join_all(sockets.into_iter().map(|mut socket| async move {
        let _ = socket.close(None).await;
    }))
    .await;
}

/// `p50 … ms, p99 … ms` of `trips`.
pub fn percentiles(trips: &mut [Duration]) -> String {
    trips.sort();
    let quantile = |q: f64| {
        trips
            .get(((trips.len().saturating_sub(1)) as f64 * q) as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    format!("p50 {:.1} ms, p99 {:.1} ms", quantile(0.5), quantile(0.99))
}

/// The soft limit on open files of this process (its children inherit it).
pub fn open_files_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(3)?.parse().ok())
        })
        .unwrap_or(u64::MAX)
}
