//! A Worker's WebSocket over the gRPC service (real V8, real sockets): the
//! handshake's call stays open after the 101 and carries `socket` frames
//! both ways; a Worker that refuses answers as to any request; the node's
//! drain closes open sockets with 1012 both ways.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use isolane_proto::Outcome;
use isolane_proto::runtime::v1::execute_response::Frame as Out;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse, Header, RequestHead};
use isolane_proto::socket::SocketMessage;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::support::*;

/// Echoes; `close-me` closes with 4000 "bye"; `last-close` answers with
/// the last close the Worker saw.
const ECHO: &str = r#"
let lastClose = 'none';
export default {
  fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket', { status: 426 });
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => {
      if (event.data === 'close-me') return server.close(4000, 'bye');
      if (event.data === 'last-close') return server.send(lastClose);
      server.send(event.data);
    });
    server.addEventListener('close', (event) => { lastClose = `${event.code} ${event.reason}`; });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

fn upgrade_head() -> RequestHead {
    let mut head = head("GET", "demo/echo", "r1", 0);
    head.headers.push(Header::new("upgrade", "websocket"));
    head.headers.push(Header::new("connection", "Upgrade"));
    head
}

/// Opens a call with `head` and `end`; the sender carries more frames.
async fn open(
    node: &TestNode,
    head: RequestHead,
) -> (mpsc::Sender<ExecuteRequest>, Streaming<ExecuteResponse>) {
    let (tx, rx) = mpsc::channel(16);
    tx.send(ExecuteRequest::head(head)).await.unwrap();
    tx.send(ExecuteRequest::end()).await.unwrap();
    let mut client = node.client(0).await;
    let responses = client
        .execute(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    (tx, responses)
}

/// The next frame, acknowledgements skipped (counted in `ACKED`).
async fn next(responses: &mut Streaming<ExecuteResponse>) -> Option<Out> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), responses.message())
            .await
            .expect("a frame in time")
            .unwrap()
            .map(|m| m.frame.expect("every frame is set"))?;
        match frame {
            Out::SocketAck(ack) => {
                ACKED.fetch_add(ack.messages, Ordering::Relaxed);
            }
            frame => return Some(frame),
        }
    }
}

/// Client messages the node acknowledged, over every call of this module.
static ACKED: AtomicU32 = AtomicU32::new(0);

async fn next_message(responses: &mut Streaming<ExecuteResponse>) -> Option<SocketMessage> {
    match next(responses).await? {
        Out::Socket(frame) => frame.into_message(),
        other => panic!("a socket frame, not {other:?}"),
    }
}

async fn opened(node: &TestNode) -> (mpsc::Sender<ExecuteRequest>, Streaming<ExecuteResponse>) {
    let (tx, mut responses) = open(node, upgrade_head()).await;
    let Some(Out::Head(head)) = next(&mut responses).await else {
        panic!("a head first");
    };
    assert_eq!(head.status, 101);
    assert_eq!(head.outcome(), Outcome::Ok);
    (tx, responses)
}

async fn send(tx: &mpsc::Sender<ExecuteRequest>, message: SocketMessage) {
    tx.send(ExecuteRequest::socket(message)).await.unwrap();
}

fn text(s: &str) -> SocketMessage {
    SocketMessage::Text(s.to_owned())
}

#[tokio::test]
async fn messages_and_closes_travel_as_socket_frames() {
    let node = start(Shape::default());
    node.deploy("demo/echo", "r1", ECHO);
    let (tx, mut responses) = opened(&node).await;
    for i in 0..100 {
        let message = if i % 2 == 0 {
            text(&format!("message {i}"))
        } else {
            SocketMessage::Binary(vec![i as u8; i * 10].into())
        };
        send(&tx, message.clone()).await;
        assert_eq!(next_message(&mut responses).await, Some(message));
    }
    // Every message was acknowledged (the router's credit comes back).
    assert!(ACKED.load(Ordering::Relaxed) >= 99);
    let metrics = node.metrics_text();
    assert!(
        metrics.contains(r#"isolane_node_websockets_open{peer="client",thread="0"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(
        r#"isolane_node_websocket_messages_total{direction="to_worker",peer="client",thread="0"} 100"#
    ));
    // The Worker closes: its code and reason, then the end.
    send(&tx, text("close-me")).await;
    assert_eq!(
        next_message(&mut responses).await,
        Some(SocketMessage::Close(Some((4000, "bye".to_owned()))))
    );
    drop(tx);
    let Some(Out::End(end)) = next(&mut responses).await else {
        panic!("the end follows the close");
    };
    assert_eq!(end.outcome(), Outcome::Ok);

    // The client closes: the Worker's listener sees its code and reason.
    let (tx, mut responses) = opened(&node).await;
    send(
        &tx,
        SocketMessage::Close(Some((4001, "client bye".to_owned()))),
    )
    .await;
    drop(tx);
    while next(&mut responses).await.is_some() {}
    let (tx, mut responses) = opened(&node).await;
    send(&tx, text("last-close")).await;
    assert_eq!(
        next_message(&mut responses).await,
        Some(text("4001 client bye"))
    );
}

#[tokio::test]
async fn a_refused_upgrade_is_an_ordinary_answer() {
    let node = start(Shape::default());
    node.deploy("demo/echo", "r1", ECHO);
    let mut client = node.client(0).await;
    let answer = call(&mut client, head("GET", "demo/echo", "r1", 0), &[])
        .await
        .unwrap();
    assert_eq!(answer.head.status, 426);
    assert_eq!(answer.text(), "expected a WebSocket");
}

#[tokio::test]
async fn the_drain_closes_open_sockets_with_1012_after_its_grace() {
    let node = start(Shape::default());
    node.deploy("demo/echo", "r1", ECHO);
    let (tx, mut responses) = opened(&node).await;
    send(&tx, text("before")).await;
    assert_eq!(next_message(&mut responses).await, Some(text("before")));
    assert_eq!(node.admission.open_sockets(), 1);
    // The drain refuses new requests, but the open socket works on.
    node.admission.start_draining();
    send(&tx, text("during the grace")).await;
    assert_eq!(
        next_message(&mut responses).await,
        Some(text("during the grace"))
    );
    // The grace is over.
    node.admission.close_sockets();
    assert_eq!(
        next_message(&mut responses).await,
        Some(SocketMessage::restart())
    );
    let Some(Out::End(_)) = next(&mut responses).await else {
        panic!("the end follows the restart");
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    assert_eq!(node.admission.wait_sockets(deadline).await, 0);
}
