//! The engine's own end of an outbound WebSocket (`host/ws_connect.rs`):
//! after the server's `101`, moves whole messages between the upgraded
//! connection (tokio-tungstenite, `Role::Client`, so frames are masked) and
//! the Worker's [`SocketEnd`], as the front end does for an accepted socket.
//!
//! Bounded the same way: a server's message over `max_message_bytes` closes
//! the socket with 1009 (checked while frames are read); while the Worker's
//! queue is full the server is not read (back-pressure through TCP); a write
//! the server does not take within the idle timeout ends the connection.

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{self, Role};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::socket::{CloseFrame, SocketEnd, SocketMessage};

/// Read in small chunks: an idle socket keeps its buffer for its life.
const READ_BUFFER: usize = 4096;

/// Runs the socket over `io` until either side closes.
pub(super) async fn run<S>(io: S, end: SocketEnd)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let SocketEnd {
        to_worker,
        mut from_worker,
        config,
    } = end;
    let max = config.max_message_bytes;
    let write_timeout = config.idle_timeout;
    let ws_config = protocol::WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(max.saturating_mul(2).max(READ_BUFFER))
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let mut ws = WebSocketStream::from_raw_socket(io, Role::Client, Some(ws_config)).await;
    let mut reading = true;
    loop {
        let done = tokio::select! {
            message = ws.next(), if reading && to_worker.capacity() > 0 => {
                from_server(&mut ws, &to_worker, message, &mut reading, write_timeout).await
            }
            // The Worker's queue is full: wait for room, then read again.
            permit = to_worker.reserve(), if reading && to_worker.capacity() == 0 => {
                if permit.is_err() {
                    reading = false;
                }
                false
            }
            message = from_worker.recv() => {
                from_worker_message(&mut ws, message, reading, write_timeout).await
            }
        };
        if done {
            return;
        }
    }
}

/// Passes the server's next message to the Worker; true when the socket is
/// done. `reading` goes false when the Worker's end is gone.
async fn from_server<S>(
    ws: &mut WebSocketStream<S>,
    to_worker: &mpsc::Sender<SocketMessage>,
    message: Option<Result<Message, tungstenite::Error>>,
    reading: &mut bool,
    write_timeout: Duration,
) -> bool
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let message = match inbound(message) {
        Inbound::Message(message) => message,
        Inbound::Skip => return false,
        Inbound::TooBig => {
            let frame = CloseFrame {
                code: u16::from(CloseCode::Size),
                reason: "message too big".to_owned(),
            };
            let _ = to_worker.try_send(SocketMessage::Close(Some(frame.clone())));
            let _ = send(ws, close_message(Some(frame)), write_timeout).await;
            return true;
        }
        // The channel ends without a close: 1006 to the Worker.
        Inbound::Gone => return true,
    };
    let close = matches!(message, SocketMessage::Close(_));
    // Room was checked: this sender is the only one.
    if to_worker.try_send(message).is_err() {
        *reading = false;
    }
    if close {
        // tungstenite queued the reply to the server's close.
        let _ = tokio::time::timeout(write_timeout, ws.flush()).await;
    }
    close
}

/// Writes the Worker's next message to the server; true when the socket is
/// done.
async fn from_worker_message<S>(
    ws: &mut WebSocketStream<S>,
    message: Option<SocketMessage>,
    reading: bool,
    write_timeout: Duration,
) -> bool
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Some(message) = message else {
        // The Worker dropped the socket (its request ended, a limit): the
        // server hears 1011.
        let frame = CloseFrame {
            code: u16::from(CloseCode::Error),
            reason: "the Worker dropped the socket".to_owned(),
        };
        let _ = send(ws, close_message(Some(frame)), write_timeout).await;
        return true;
    };
    let closed = matches!(message, SocketMessage::Close(_));
    let message = match message {
        SocketMessage::Text(text) => Message::text(text),
        SocketMessage::Binary(bytes) => Message::binary(bytes),
        SocketMessage::Close(frame) => close_message(frame),
    };
    !send(ws, message, write_timeout).await || (closed && !reading)
}

enum Inbound {
    Message(SocketMessage),
    Skip,
    TooBig,
    Gone,
}

fn inbound(message: Option<Result<Message, tungstenite::Error>>) -> Inbound {
    match message {
        Some(Ok(Message::Text(text))) => Inbound::Message(SocketMessage::Text(text.to_string())),
        Some(Ok(Message::Binary(bytes))) => Inbound::Message(SocketMessage::Binary(bytes)),
        Some(Ok(Message::Close(frame))) => {
            Inbound::Message(SocketMessage::Close(frame.map(|f| CloseFrame {
                code: u16::from(f.code),
                reason: f.reason.to_string(),
            })))
        }
        // Pings are answered by tungstenite itself.
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Inbound::Skip,
        Some(Err(tungstenite::Error::Capacity(_))) => Inbound::TooBig,
        Some(Err(error)) => {
            tracing::debug!(%error, "an outbound WebSocket failed");
            Inbound::Gone
        }
        None => Inbound::Gone,
    }
}

fn close_message(frame: Option<CloseFrame>) -> Message {
    Message::Close(frame.map(|f| protocol::CloseFrame {
        code: CloseCode::from(f.code),
        reason: f.reason.into(),
    }))
}

/// Writes one message; false when the server is gone or did not take it
/// within `timeout`.
async fn send<S>(ws: &mut WebSocketStream<S>, message: Message, timeout: Duration) -> bool
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    matches!(
        tokio::time::timeout(timeout, ws.send(message)).await,
        Ok(Ok(()))
    )
}
