//! The one WebSocket frame loop: moves whole messages between a connection
//! (tokio-tungstenite, as the server of a client's socket at the router and
//! in `isolane dev`, or as the client of a Worker's outbound socket in the
//! engine) and the bounded channels of the local end, until either side
//! closes. Each user says what its messages are and what it counts through
//! a [`Side`].
//!
//! Bounded the same way for both: a peer's message over
//! `max_message_bytes` closes the socket with 1009 (checked while frames
//! are read, never buffered whole); while the local queue is full the peer
//! is not read (back-pressure through TCP); a write the peer does not take
//! within `write_timeout` ends the connection (a peer that never reads is
//! not waited for); the local end dropping its sender closes with 1011.
//! Pings are answered by tungstenite.
//!
//! A peer's close is answered by the local end, never by this loop: the
//! Worker's side sends the reply (at once with the peer's code, or its own
//! `close()`, by the Worker's compatibility settings), and [`reply`] writes
//! it, waiting at most [`CLOSE_REPLY_WAIT`].

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

pub use tokio_tungstenite::tungstenite::protocol::Role;

mod reply;
pub use reply::CLOSE_REPLY_WAIT;

/// The chunk a connection is read in: an idle socket holds its read buffer
/// for its life (tungstenite's default is 128 KiB each way).
const READ_BUFFER: usize = 4 << 10;

/// The close code and reason a pump sends both ways when its `closing`
/// token is cancelled (a node or router stopping): 1012.
pub const SERVICE_RESTART: (u16, &str) = (1012, "service restart");

/// One whole message, as the pump reads and writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whole {
    Text(String),
    Binary(Bytes),
    /// A close frame: `(code, reason)`, `None` when it had no code.
    Close(Option<(u16, String)>),
}

/// What one user of [`pump`] moves and counts.
pub trait Side {
    /// The local channels' message.
    type Message: Send;
    fn to_whole(message: Self::Message) -> Whole;
    fn from_whole(whole: Whole) -> Self::Message;
    /// A peer's message went to the local end.
    fn inbound(&self, _message: &Self::Message) {}
    /// A local message goes to the peer.
    fn outbound(&self, _message: &Self::Message) {}
    /// The pump closed the socket itself with `code` (1009, 1011, 1012).
    fn closed(&self, _code: u16) {}
}

/// The local end of one socket and its bounds.
#[derive(Debug)]
pub struct Ends<M> {
    /// To the local end. Bounded: while it is full the peer is not read.
    pub to_local: mpsc::Sender<M>,
    /// From the local end; its end without a close means 1011 to the peer.
    pub from_local: mpsc::Receiver<M>,
    /// The largest message the peer may send (1009 past it).
    pub max_message_bytes: usize,
    /// How long a write to the peer may wait.
    pub write_timeout: Duration,
}

/// Runs the socket over `io` in `role` until either side closes, or
/// `closing` (when given) is cancelled: 1012 both ways.
pub async fn pump<S, D>(
    io: S,
    role: Role,
    ends: Ends<D::Message>,
    closing: Option<&CancellationToken>,
    side: &D,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    D: Side,
{
    let Ends {
        to_local,
        mut from_local,
        max_message_bytes,
        write_timeout,
    } = ends;
    // A message is written and flushed before the next is taken, so the
    // write buffer holds at most one.
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(max_message_bytes.saturating_mul(2).max(READ_BUFFER))
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes));
    let mut ws = WebSocketStream::from_raw_socket(io, role, Some(config)).await;
    let mut reading = true;
    // The local end sent its close: a close read now is the peer's reply.
    let mut sent_close = false;
    loop {
        tokio::select! {
            () = cancelled(closing) => {
                let (code, reason) = SERVICE_RESTART;
                side.closed(code);
                let close = Whole::Close(Some((code, reason.to_owned())));
                let _ = to_local.try_send(D::from_whole(close.clone()));
                let _ = send(&mut ws, frame(close), write_timeout).await;
                return;
            }
            message = ws.next(), if reading && to_local.capacity() > 0 => {
                let whole = match inbound(message) {
                    Inbound::Message(whole) => whole,
                    Inbound::Skip => continue,
                    Inbound::TooBig => {
                        let close = (u16::from(CloseCode::Size), "message too big".to_owned());
                        side.closed(close.0);
                        let close = Whole::Close(Some(close));
                        let _ = to_local.try_send(D::from_whole(close.clone()));
                        let _ = send(&mut ws, frame(close), write_timeout).await;
                        return;
                    }
                    // The connection ended without a close: the local
                    // channel ends (1006 to the local end).
                    Inbound::Gone => return,
                };
                let close = matches!(whole, Whole::Close(_));
                let message = D::from_whole(whole);
                side.inbound(&message);
                // Room was checked: this sender is the only one.
                if to_local.try_send(message).is_err() {
                    reading = false;
                }
                if close && sent_close {
                    // The peer's reply to ours: the handshake is done.
                    let _ = tokio::time::timeout(write_timeout, ws.flush()).await;
                    return;
                }
                if close {
                    // The peer closed first: the reply is the local end's.
                    reply::await_local(&mut ws, role, &mut from_local, write_timeout, closing, side).await;
                    return;
                }
            }
            // The local queue was full: wait for room, then read again.
            permit = to_local.reserve(), if reading && to_local.capacity() == 0 => {
                if permit.is_err() {
                    reading = false;
                }
            }
            message = from_local.recv() => {
                let Some(message) = message else {
                    // Dropped by the local end (a limit, a peer that did
                    // not read): 1011.
                    let close = (u16::from(CloseCode::Error), "the Worker dropped the socket".to_owned());
                    side.closed(close.0);
                    let _ = send(&mut ws, frame(Whole::Close(Some(close))), write_timeout).await;
                    return;
                };
                side.outbound(&message);
                let whole = D::to_whole(message);
                let closed = matches!(whole, Whole::Close(_));
                sent_close |= closed;
                if !send(&mut ws, frame(whole), write_timeout).await || (closed && !reading) {
                    return;
                }
            }
        }
    }
}

/// Ends when `closing` is cancelled; never without one.
async fn cancelled(closing: Option<&CancellationToken>) {
    match closing {
        Some(closing) => closing.cancelled().await,
        None => std::future::pending().await,
    }
}

enum Inbound {
    Message(Whole),
    Skip,
    TooBig,
    Gone,
}

fn inbound(message: Option<Result<Message, tungstenite::Error>>) -> Inbound {
    match message {
        Some(Ok(Message::Text(text))) => Inbound::Message(Whole::Text(text.to_string())),
        Some(Ok(Message::Binary(bytes))) => Inbound::Message(Whole::Binary(bytes)),
        Some(Ok(Message::Close(frame))) => Inbound::Message(Whole::Close(
            frame.map(|f| (u16::from(f.code), f.reason.to_string())),
        )),
        // Pings are answered by tungstenite itself.
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Inbound::Skip,
        Some(Err(tungstenite::Error::Capacity(_))) => Inbound::TooBig,
        Some(Err(error)) => {
            tracing::debug!(%error, "a WebSocket connection failed");
            Inbound::Gone
        }
        None => Inbound::Gone,
    }
}

fn frame(whole: Whole) -> Message {
    match whole {
        Whole::Text(text) => Message::text(text),
        Whole::Binary(bytes) => Message::binary(bytes),
        Whole::Close(frame) => Message::Close(frame.map(|(code, reason)| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        })),
    }
}

/// Writes one message; false when the peer is gone or did not take it
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
