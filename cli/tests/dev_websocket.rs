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
    let mut dev = Dev::start(&["examples/websocket-echo.js", "--port", &port.to_string()]);
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
    let port = free_port();
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
    let port = free_port();
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
