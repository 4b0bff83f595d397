//! A Worker's WebSocket as router and node hand it to each other: whole
//! messages over two bounded channels ([`SocketChannels`]), found on an
//! [`Answer`](crate::call::Answer) whose status is `101`.
//!
//! In one process (`isolane dev`) the router's front end and the node's
//! service share the channels through [`Upgrade`]. Over the mTLS gRPC
//! channel the same messages travel on the `Execute` call that carried the
//! handshake, each [`SocketMessage`] one `socket` frame ([`SocketFrame`]);
//! the front end does not change.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::runtime::v1::{SocketClose, SocketFrame, socket_frame};

/// Client messages the router may have sent on a call that the node has not
/// acknowledged (`SocketAck`): the node reads them all at once, so the
/// call never leaves data unread on its shared HTTP/2 connection.
pub const UNACKNOWLEDGED: usize = 16;

/// The close code a socket gets when its node or router restarts or
/// drains (RFC 6455 §7.4.1's registry: service restart).
pub const SERVICE_RESTART: u16 = 1012;
/// The close code of a socket dropped for an internal reason (its peer
/// vanished, a limit).
pub const INTERNAL_ERROR: u16 = 1011;

/// The close frame both ends of a socket get when its node or router
/// restarts: 1012 with a short reason.
pub fn restart_frame() -> (u16, String) {
    (SERVICE_RESTART, "service restart".to_owned())
}

impl SocketMessage {
    /// The close both ends of a socket get when its node or router restarts.
    pub fn restart() -> Self {
        SocketMessage::Close(Some(restart_frame()))
    }
}

// === impl SocketFrame ===

impl From<SocketMessage> for SocketFrame {
    fn from(message: SocketMessage) -> Self {
        let message = match message {
            SocketMessage::Text(text) => socket_frame::Message::Text(text),
            SocketMessage::Binary(bytes) => socket_frame::Message::Binary(bytes),
            SocketMessage::Close(frame) => {
                let (code, reason) = match frame {
                    Some((code, reason)) => (Some(u32::from(code)), reason),
                    None => (None, String::new()),
                };
                socket_frame::Message::Close(SocketClose { code, reason })
            }
        };
        SocketFrame {
            message: Some(message),
        }
    }
}

impl SocketFrame {
    /// The message this frame carries; `None` for a frame from a newer peer
    /// that this side does not know. A close code that is not 16 bits is
    /// 1002 (protocol error).
    pub fn into_message(self) -> Option<SocketMessage> {
        Some(match self.message? {
            socket_frame::Message::Text(text) => SocketMessage::Text(text),
            socket_frame::Message::Binary(bytes) => SocketMessage::Binary(bytes),
            socket_frame::Message::Close(SocketClose { code, reason }) => {
                SocketMessage::Close(code.map(|code| (u16::try_from(code).unwrap_or(1002), reason)))
            }
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_frames() {
        for message in [
            SocketMessage::Text("hi".to_owned()),
            SocketMessage::Binary(Bytes::from_static(&[0, 1, 2])),
            SocketMessage::Close(Some((4000, "bye".to_owned()))),
            SocketMessage::Close(None),
            SocketMessage::restart(),
        ] {
            let frame = SocketFrame::from(message.clone());
            assert_eq!(frame.into_message(), Some(message));
        }
        assert_eq!(SocketFrame::default().into_message(), None);
        let odd = SocketFrame {
            message: Some(socket_frame::Message::Close(SocketClose {
                code: Some(70_000),
                reason: String::new(),
            })),
        };
        assert_eq!(
            odd.into_message(),
            Some(SocketMessage::Close(Some((1002, String::new()))))
        );
    }
}
