//! WebSockets through `isolane dev` with a real WebSocket client: the
//! issue's echo Worker (examples/websocket-echo.js) under 50 concurrent
//! clients, pings, close codes, and the message size cap beside a benign
//! neighbour socket.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use isolane_testenv::wait_until;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port};

type Socket = WebSocketStream<TcpStream>;

const CLIENTS: usize = 50;
const MESSAGES: usize = 20;

async fn connect(port: u16) -> Result<Socket, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let (socket, response) =
        tokio_tungstenite::client_async(format!("ws://127.0.0.1:{port}/"), tcp)
            .await
            .map_err(|e| e.to_string())?;
    assert_eq!(response.status(), 101);
    Ok(socket)
}

async fn started(port: u16) -> (Dev, Socket) {
    started_with("examples/websocket-echo.js", port, &[]).await
}

/// `isolane dev <script> --port <port> <extra…>`, once it accepts a socket.
async fn started_with(script: &str, port: u16, extra: &[&str]) -> (Dev, Socket) {
    let port_arg = port.to_string();
    let mut args = vec![script, "--port", port_arg.as_str()];
    args.extend_from_slice(extra);
    let mut dev = Dev::start(&args);
    let socket = wait_until("isolane dev to accept a WebSocket", DEADLINE, || {
        let exited = dev.process.try_exit();
        async move {
            assert!(exited.is_none(), "isolane dev exited early: {exited:?}");
            connect(port).await
        }
    })
    .await;
    (dev, socket)
}

/// Resident memory of `dev` now, in KiB (Linux).
fn rss_kib(dev: &Dev) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", dev.process.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// The next data message (pongs skipped), within a deadline.
async fn next(socket: &mut Socket) -> Option<Message> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("an answer in time")?;
        match message {
            Ok(Message::Pong(_)) => continue,
            Ok(message) => return Some(message),
            Err(_) => return None,
        }
    }
}

/// One client: MESSAGES messages, text and binary in turn; how many came
/// back as sent.
async fn echo_client(port: u16, client: usize) -> usize {
    let mut socket = connect(port).await.unwrap();
    let mut echoed = 0;
    for i in 0..MESSAGES {
        let message = if i % 2 == 0 {
            Message::text(format!("client {client} message {i}"))
        } else {
            Message::binary(Bytes::from(vec![(client + i) as u8; 1 + i * 100]))
        };
        socket.send(message.clone()).await.unwrap();
        if next(&mut socket).await == Some(message) {
            echoed += 1;
        }
    }
    socket.close(None).await.unwrap();
    echoed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_echo_worker_echoes_every_message_of_50_clients() {
    let port = free_port().unwrap();
    let (dev, mut first) = started(port).await;
    // Pings are answered; close codes are kept.
    first
        .send(Message::Ping(Bytes::from_static(b"hi")))
        .await
        .unwrap();
    let pong = tokio::time::timeout(Duration::from_secs(30), first.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(pong, Message::Pong(Bytes::from_static(b"hi")));
    first
        .send(Message::Close(Some(CloseFrame {
            code: CloseCode::from(4001),
            reason: "done".into(),
        })))
        .await
        .unwrap();
    match next(&mut first).await {
        Some(Message::Close(Some(frame))) => assert_eq!(u16::from(frame.code), 4001),
        other => panic!("expected the close echoed, got {other:?}"),
    }

    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| tokio::spawn(echo_client(port, client)))
        .collect();
    let mut echoed = 0;
    for client in clients {
        echoed += client.await.unwrap();
    }
    println!("echoed {echoed}/{}", CLIENTS * MESSAGES);
    assert_eq!(echoed, CLIENTS * MESSAGES);
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn a_message_over_the_cap_closes_its_socket_with_1009_not_its_neighbour() {
    let port = free_port().unwrap();
    let (dev, mut neighbour) = started(port).await;
    let mut hostile = connect(port).await.unwrap();
    // 1 MiB is the cap; one byte more.
    let huge = Message::binary(Bytes::from(vec![7u8; (1 << 20) + 1]));
    let _ = hostile.send(huge).await;
    match next(&mut hostile).await {
        Some(Message::Close(Some(frame))) => assert_eq!(frame.code, CloseCode::Size),
        other => panic!("expected a 1009 close, got {other:?}"),
    }
    // A message at the cap is echoed, and the neighbour never noticed.
    let mut at_cap = connect(port).await.unwrap();
    let whole = Message::binary(Bytes::from(vec![8u8; 1 << 20]));
    at_cap.send(whole.clone()).await.unwrap();
    assert_eq!(next(&mut at_cap).await, Some(whole));
    neighbour.send(Message::text("still here")).await.unwrap();
    assert_eq!(
        next(&mut neighbour).await,
        Some(Message::text("still here"))
    );
    assert!(dev.interrupt().success());
}

/// A Worker that floods a client that never reads: the process does not
/// grow by what it sent (the Worker's queue is bounded and the socket is
/// dropped, 1011), and a neighbour socket echoes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_grow_memory() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("flood.js");
    std::fs::write(
        &script,
        r#"export default {
  fetch() {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    const chunk = new Uint8Array(64 << 10);
    server.addEventListener('message', (event) => {
      if (event.data !== 'flood') { server.send(event.data); return; }
      // 2,000 x 64 KiB: 125 MiB if it were buffered.
      for (let i = 0; i < 2000; i++) server.send(chunk);
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};"#,
    )
    .unwrap();
    let port = free_port().unwrap();
    let (dev, mut neighbour) = started_with(
        script.to_str().unwrap(),
        port,
        &["--websocket-idle-secs", "2"],
    )
    .await;
    let before = rss_kib(&dev);
    let mut hostile = connect(port).await.unwrap();
    hostile.send(Message::text("flood")).await.unwrap();
    // The neighbour is answered while the hostile client reads nothing.
    neighbour.send(Message::text("hi")).await.unwrap();
    assert_eq!(next(&mut neighbour).await, Some(Message::text("hi")));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = rss_kib(&dev);
    println!("rss before {before} KiB, while flooding {during} KiB");
    assert!(
        during < before + 48 * 1024,
        "grew from {before} to {during} KiB"
    );
    // What reached the hostile client ends with the socket, not 2,000 messages.
    let mut got = 0;
    while let Some(Ok(message)) = tokio::time::timeout(Duration::from_secs(30), hostile.next())
        .await
        .unwrap()
    {
        if message.is_close() {
            break;
        }
        got += 1;
    }
    println!("the flooded client got {got} of 2000 messages");
    assert!(got < 2000);
    // (The first neighbour went idle meanwhile: a new one.)
    let mut neighbour = connect(port).await.unwrap();
    neighbour.send(Message::text("still")).await.unwrap();
    assert_eq!(next(&mut neighbour).await, Some(Message::text("still")));
    assert!(dev.interrupt().success());
}

/// Memory per idle socket, the Worker's share included (printed; bounded
/// loosely here, measured in the report).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_cost_little_memory() {
    const IDLE: usize = 1000;
    let port = free_port().unwrap();
    let (dev, _first) = started_with(
        "examples/websocket-echo.js",
        port,
        &["--websocket-max-sockets", "2000"],
    )
    .await;
    let before = rss_kib(&dev);
    let mut sockets = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        sockets.push(connect(port).await.unwrap());
    }
    // Every one is live: the last answers.
    let last = sockets.last_mut().unwrap();
    last.send(Message::text("ping")).await.unwrap();
    assert_eq!(next(last).await, Some(Message::text("ping")));
    let after = rss_kib(&dev);
    let per_socket = after.saturating_sub(before) as f64 / IDLE as f64;
    println!("{IDLE} idle sockets: rss {before} -> {after} KiB, {per_socket:.1} KiB each");
    assert!(per_socket < 100.0, "{per_socket:.1} KiB per idle socket");
    assert!(dev.interrupt().success());
}
