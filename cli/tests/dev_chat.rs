//! The chat-room example (examples/durable-chat.js) through `isolane dev`
//! with real WebSocket clients: three clients in a room of hibernatable
//! sockets, the room evicted while they are quiet (its constructor runs
//! again, counted in its storage), its auto-response answering meanwhile,
//! and messages still broadcast through `getWebSockets()` after it came
//! back, the names kept in the sockets' attachments.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port};

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn connect(port: u16, url: &str) -> Result<Socket, String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let (socket, response) = tokio_tungstenite::client_async(url, tcp)
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(response.status(), 101);
    Ok(socket)
}

async fn join(port: u16, name: &str) -> Socket {
    let url = format!("ws://127.0.0.1:{port}/rooms/lobby?name={name}");
    let deadline = Instant::now() + DEADLINE;
    loop {
        match connect(port, &url).await {
            Ok(socket) => return socket,
            Err(error) => {
                assert!(Instant::now() < deadline, "{name} never joined: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The next text message (control frames skipped).
async fn line(socket: &mut Socket) -> String {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("a message in time")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = message {
            return text.as_str().to_owned();
        }
    }
}

async fn say(socket: &mut Socket, text: &str) {
    socket.send(Message::text(text)).await.unwrap();
}

async fn who(socket: &mut Socket) -> serde_json::Value {
    say(socket, "/who").await;
    serde_json::from_str(&line(socket).await).unwrap()
}

#[tokio::test]
async fn dev_chat_room_hibernates_and_still_broadcasts_to_its_three_clients() {
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().join("state").to_str().unwrap().to_owned();
    let port = free_port().unwrap();
    let port_arg = port.to_string();
    let _dev = Dev::start(&[
        "examples/durable-chat.js",
        "--durable-object",
        "ROOMS=ChatRoom",
        "--state",
        &state_arg,
        "--port",
        &port_arg,
        "--object-idle-secs",
        "1",
    ]);
    // The room's broadcast on a join reaches the socket it has just
    // accepted too (getWebSockets() lists it in that event, as workerd's).
    let mut ada = join(port, "ada").await;
    assert_eq!(line(&mut ada).await, "ada joined");
    let mut bob = join(port, "bob").await;
    assert_eq!(line(&mut bob).await, "bob joined");
    assert_eq!(line(&mut ada).await, "bob joined");
    let mut cy = join(port, "cy").await;
    assert_eq!(line(&mut cy).await, "cy joined");
    assert_eq!(line(&mut ada).await, "cy joined");
    assert_eq!(line(&mut bob).await, "cy joined");
    say(&mut ada, "hello").await;
    for socket in [&mut ada, &mut bob, &mut cy] {
        assert_eq!(line(socket).await, "ada: hello");
    }
    let seen = who(&mut cy).await;
    assert_eq!(seen["generation"], 1);
    assert_eq!(seen["names"], serde_json::json!(["ada", "bob", "cy"]));

    // Quiet but for pings (answered by the node, not the room): the room
    // leaves memory within two idle periods; the next message makes it
    // again, and its constructor counts a new generation.
    let deadline = Instant::now() + DEADLINE;
    let mut pause = Duration::from_secs(3);
    let woken = loop {
        tokio::time::sleep(pause).await;
        say(&mut bob, "ping").await;
        assert_eq!(line(&mut bob).await, "pong");
        let seen = who(&mut cy).await;
        if seen["generation"] != 1 {
            break seen;
        }
        assert!(Instant::now() < deadline, "the room never left memory");
        pause *= 2;
    };
    assert_eq!(woken["generation"], 2, "the constructor ran again");
    assert_eq!(woken["names"], serde_json::json!(["ada", "bob", "cy"]));
    say(&mut bob, "still here").await;
    for socket in [&mut ada, &mut bob, &mut cy] {
        assert_eq!(line(socket).await, "bob: still here");
    }
    ada.send(Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "bye".into(),
    })))
    .await
    .unwrap();
    for socket in [&mut bob, &mut cy] {
        assert_eq!(line(socket).await, "ada left (1000)");
    }
}
