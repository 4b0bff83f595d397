//! WebSockets between a Worker and its front end: what a `101` response
//! carries out of the engine ([`WebSocketUpgrade`], a response extension),
//! the messages that cross it ([`SocketMessage`]) and the limits that hold it
//! ([`WebSocketConfig`]).
//!
//! The engine never sees frames or the connection: the front end (the
//! router's server, in `isolane dev`'s process or across the node's gRPC
//! call, where the node carries these messages) upgrades the client's
//! connection, reads and writes frames with a WebSocket crate, and
//! moves whole messages over the two bounded channels here. Each message
//! that reaches the Worker runs as a turn of its own with a fresh CPU budget
//! (`isolane-web`'s `websocket.rs`).
//!
//! Data flow:
//!
//! ```text
//! client ─frames─► front end ─SocketMessage─► to_worker (bounded) ─► turn: 'message' event
//! client ◄─frames─ front end ◄─SocketMessage─ from_worker (bounded) ◄─ server.send()
//! ```
//!
//! A channel that ends without a `Close` message means the other side went
//! away abnormally: the front end closes the client with 1011 (or 1009 when
//! the Worker's message was over the cap), the Worker sees `close` with 1006.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

/// Cloudflare's cap on one WebSocket message: 1 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Limits on a Worker's WebSockets. Each is charged to the Worker: it holds
/// the Worker's sockets, never a neighbour's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebSocketConfig {
    /// The largest message either side may send, in bytes. A client's
    /// larger message closes its socket with 1009 (the front end checks it
    /// while reading frames); the Worker's `send` of one throws.
    pub max_message_bytes: usize,
    /// Messages buffered each way per socket. A client that does not read
    /// fills its queue: the Worker's next `send` closes the socket with
    /// 1011 instead of growing memory. A Worker that does not keep up holds
    /// the front end back (it stops reading the client: back-pressure).
    pub buffered_messages: usize,
    /// A socket with no message either way for this long is closed with
    /// 1001 (going away).
    pub idle_timeout: Duration,
    /// Open sockets one Worker may hold on one engine thread; past it the
    /// Worker's `new Response(null, { status: 101, webSocket })` fails the
    /// request (503 at the front end).
    pub max_sockets_per_worker: usize,
    /// Open sockets one client (by the address the front end vouches for)
    /// may hold of one Worker on one engine thread: its share of
    /// `max_sockets_per_worker`, so that one client cannot lock the
    /// Worker's other clients out. Held under contention only (half the
    /// budget taken, `host/socket_count.rs`): past it that client's upgrade
    /// is then answered 429 while others still get sockets.
    pub max_sockets_per_client: usize,
    /// Hibernatable sockets (`ctx.acceptWebSocket`) one Durable Object may
    /// hold (Cloudflare's: 32,768); each also takes a place of
    /// `max_sockets_per_worker`. Past it `acceptWebSocket` throws.
    pub max_sockets_per_object: usize,
}

/// Cloudflare's cap on one Durable Object's hibernatable WebSockets.
pub const DEFAULT_MAX_SOCKETS_PER_OBJECT: usize = 32_768;

impl Default for WebSocketConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            buffered_messages: 16,
            idle_timeout: Duration::from_secs(100),
            max_sockets_per_worker: 128,
            max_sockets_per_client: 16,
            max_sockets_per_object: DEFAULT_MAX_SOCKETS_PER_OBJECT,
        }
    }
}

/// A close frame's status code and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseFrame {
    pub code: u16,
    pub reason: String,
}

/// One whole WebSocket message, as it crosses between engine and front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketMessage {
    Text(String),
    Binary(Bytes),
    /// The sender closed; `None` when no code was given (1005 to the peer).
    Close(Option<CloseFrame>),
}

impl SocketMessage {
    /// Payload bytes, for the size cap.
    pub fn len(&self) -> usize {
        match self {
            SocketMessage::Text(text) => text.len(),
            SocketMessage::Binary(bytes) => bytes.len(),
            SocketMessage::Close(frame) => frame.as_ref().map_or(0, |f| f.reason.len() + 2),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The front end's end of a Worker's WebSocket: what a `101` response from
/// [`crate::Engine::execute`] carries in its extensions. Take it once
/// ([`WebSocketUpgrade::take`]), upgrade the client's connection, and pump.
#[derive(Debug, Clone)]
pub struct WebSocketUpgrade(Arc<Mutex<Option<SocketEnd>>>);

/// The channels of one socket, seen from the front end.
#[derive(Debug)]
pub struct SocketEnd {
    /// Messages from the client to the Worker. Bounded: when it is full,
    /// stop reading the client (back-pressure).
    pub to_worker: mpsc::Sender<SocketMessage>,
    /// Messages from the Worker to the client.
    pub from_worker: mpsc::Receiver<SocketMessage>,
    /// The limits this socket runs under (the front end enforces the
    /// message size cap while reading frames, and closes with 1009).
    pub config: WebSocketConfig,
}

impl WebSocketUpgrade {
    /// The extension of a `101` that hands `end` over (the WebSocket unit's).
    pub fn new(end: SocketEnd) -> Self {
        Self(Arc::new(Mutex::new(Some(end))))
    }

    /// The socket's channels; `None` once taken.
    pub fn take(&self) -> Option<SocketEnd> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A message (or the close) of a Durable Object's hibernatable WebSocket
/// (`ctx.acceptWebSocket`), carried to its object as a
/// [`crate::Work::ObjectSocketEvent`] run on the object's home thread, as
/// an alarm is: the engine
/// delivers `webSocketMessage`/`webSocketClose`/`webSocketError` to the
/// object (made again first if it was evicted) through its input gate,
/// under the Worker's limits. The answer is a bodiless 200 once the handler
/// is done.
/// Made by the WebSocket unit's hibernation (`isolane-web`'s
/// `websocket/hibernation.rs`, [`ObjectSocketEvent::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSocketEvent {
    /// The class as the Worker's binding names it.
    pub(crate) class: String,
    /// The object's id (64 hex digits).
    pub(crate) id: String,
    /// The socket's id in the isolate (`isolane-web`'s `websocket.rs`).
    pub(crate) socket: u32,
    pub(crate) message: SocketMessage,
    /// The socket's tags and serialized attachment, for an object made
    /// again after its eviction (a closed socket is no longer listed).
    pub(crate) tags: Vec<String>,
    pub(crate) attachment: Option<Vec<u8>>,
}

impl ObjectSocketEvent {
    /// `message` of socket `socket` of object `id` of `class`, with the
    /// socket's tags and serialized attachment.
    pub fn new(
        (class, id): (String, String),
        socket: u32,
        message: SocketMessage,
        tags: Vec<String>,
        attachment: Option<Vec<u8>>,
    ) -> Self {
        Self {
            class,
            id,
            socket,
            message,
            tags,
            attachment,
        }
    }
}
