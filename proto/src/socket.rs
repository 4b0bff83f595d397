//! A Worker's WebSocket as router and node hand it to each other: whole
//! messages over two bounded channels ([`SocketChannels`]), found on an
//! [`Answer`](crate::call::Answer) whose status is `101`.
//!
//! Only in one process for now (`isolane dev`: the router's front end and
//! the node's service share it through [`Upgrade`]). Over the mTLS gRPC
//! channel the same messages are to travel as a bidirectional stream, each
//! [`SocketMessage`] one frame; the front end does not change.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

/// One whole message (the front end reads and writes the frames).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketMessage {
    Text(String),
    Binary(Bytes),
    /// A close frame: `(code, reason)`, `None` when it had no code.
    Close(Option<(u16, String)>),
}

/// The front end's side of one socket.
#[derive(Debug)]
pub struct SocketChannels {
    /// To the Worker. Bounded: while it is full the front end stops reading
    /// the client (back-pressure reaches the client's TCP window).
    pub to_worker: mpsc::Sender<SocketMessage>,
    /// From the Worker. It ends without a `Close` when the Worker dropped
    /// the socket (a limit, a client that did not read): close with 1011.
    pub from_worker: mpsc::Receiver<SocketMessage>,
    /// The largest message the client may send (1009 past it).
    pub max_message_bytes: usize,
    /// How long a write to the client may wait before the connection is
    /// given up (a client that never reads).
    pub write_timeout: std::time::Duration,
}

/// The socket an answer carries: taken once by the front end.
#[derive(Debug, Clone)]
pub struct Upgrade(Arc<Mutex<Option<SocketChannels>>>);

impl Upgrade {
    pub fn new(channels: SocketChannels) -> Self {
        Self(Arc::new(Mutex::new(Some(channels))))
    }

    /// The channels; `None` once taken.
    pub fn take(&self) -> Option<SocketChannels> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}
