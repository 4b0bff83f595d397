//! A Worker's WebSocket as router and node hand it to each other: whole
//! messages over two bounded channels ([`SocketChannels`]), found on an
//! [`Answer`](crate::call::Answer) whose status is `101`.
//!
//! In one process (`isolane dev`) the router's front end and the node's
//! service share the channels through [`Upgrade`]. Over the mTLS gRPC
//! channel the same messages travel on the `Execute` call that carried the
//! handshake, each [`SocketMessage`] one `socket` frame ([`SocketFrame`]);
//! the front end does not change.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::runtime::v1::{SocketClose, SocketFrame, socket_frame};

/// Client messages the router may have sent on a call that the node has not
/// acknowledged (`SocketAck`): the node reads them all at once, so the
/// call never leaves data unread on its shared HTTP/2 connection.
pub const UNACKNOWLEDGED: usize = 16;

/// The HTTP/2 connection window of the router↔node channel, both ways:
/// HTTP/2's largest (2^31 − 1 bytes), so that no set of streams can hold it
/// all ([`MAX_STREAMS`]).
///
/// Every call of a router thread to a node thread shares one connection,
/// and data received but not yet read holds its connection's window until
/// it is read: a response body (or a request body) whose reader is slow
/// keeps up to [`STREAM_WINDOW`] of it. With a window of 16 MiB and 1 MiB
/// per stream, 16 anonymous clients that read nothing of a streamed
/// response held it all, and every other call on the connection, any
/// namespace's, waited (`e2e/tests/slow_readers.rs`). The window is a
/// promise, not memory: what is held is at most a stream window per stream.
///
/// It also sets h2's budget for the framing overhead of small DATA frames
/// received and not yet read (half the window), past which h2 sends GOAWAY
/// (ENHANCE_YOUR_CALM, "too_many_data_frames") and every call on the
/// connection fails. Sockets fill the channel with small frames (a message,
/// an acknowledgement): at HTTP/2's default 64 KiB window, 500 sockets
/// echoing at once through one router and one node thread lost their
/// connection.
pub const CONNECTION_WINDOW: u32 = (1 << 31) - 1;
/// The HTTP/2 stream window of one call on that channel (a request or
/// response body, a socket's messages): what one slow reader can hold of
/// the connection's window and of its receiver's memory. 128 KiB streams a
/// body at 128 KiB per round trip (about 1.3 GB/s at loopback's 0.1 ms,
/// 250 MB/s at 0.5 ms between hosts); a message larger than it (up to the
/// 1 MiB cap) crosses in several frames as its receiver reads them.
pub const STREAM_WINDOW: u32 = 128 << 10;
/// The most calls at once on one router↔node connection (the node's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`; the router's next calls wait for a
/// place): 16,382, so that all of them together, each holding its whole
/// stream window, leave at least a stream window of the connection's free
/// for the others. Open WebSockets are calls, so this is also the most
/// sockets one router thread can hold open to one node thread.
pub const MAX_STREAMS: u32 = CONNECTION_WINDOW / STREAM_WINDOW - 1;

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

/// The code of a close frame without one (RFC 6455 §7.4.1: no status).
pub const NO_STATUS: u16 = 1005;
/// The code of a socket that ended without any close frame (RFC 6455
/// §7.4.1: abnormal closure).
pub const ABNORMAL: u16 = 1006;

/// The `code` label values of the closes metrics: the codes an operator
/// acts on, each its own; every other code is `other` (a bounded label).
pub const CLOSE_LABELS: [&str; 8] = [
    "1000", "1001", "1006", "1008", "1009", "1011", "1012", "other",
];

/// The `code` label of a socket that closed with `code`.
pub fn close_label(code: u16) -> &'static str {
    CLOSE_LABELS
        .iter()
        .find(|label| label.parse() == Ok(code))
        .copied()
        .unwrap_or("other")
}

impl SocketMessage {
    /// The close both ends of a socket get when its node or router restarts.
    pub fn restart() -> Self {
        SocketMessage::Close(Some(restart_frame()))
    }

    /// The payload's bytes (a text's UTF-8); 0 for a close.
    pub fn payload_len(&self) -> usize {
        match self {
            SocketMessage::Text(text) => text.len(),
            SocketMessage::Binary(bytes) => bytes.len(),
            SocketMessage::Close(_) => 0,
        }
    }

    /// The code a close carries ([`NO_STATUS`] when none); `None` for data.
    pub fn close_code(&self) -> Option<u16> {
        match self {
            SocketMessage::Close(frame) => Some(frame.as_ref().map_or(NO_STATUS, |f| f.0)),
            _ => None,
        }
    }
}

/// How one socket ended, for its metrics: the code of the first close that
/// went either way (or that this side sent on its own), and [`ABNORMAL`]
/// when none did. Shared by the tasks that move the socket's messages.
#[derive(Debug, Default)]
pub struct FirstClose(AtomicU16);

impl FirstClose {
    /// Keeps `code` if no close was seen before.
    pub fn closed(&self, code: u16) {
        let _ = self
            .0
            .compare_exchange(0, code.max(1), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Keeps `message`'s code when it is the socket's first close.
    pub fn see(&self, message: &SocketMessage) {
        if let Some(code) = message.close_code() {
            self.closed(code);
        }
    }

    /// The socket's close code so far.
    pub fn code(&self) -> u16 {
        match self.0.load(Ordering::Relaxed) {
            0 => ABNORMAL,
            code => code,
        }
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
    fn a_socket_ends_with_its_first_close_labelled_in_a_bounded_set() {
        let first = FirstClose::default();
        assert_eq!(first.code(), ABNORMAL);
        first.see(&SocketMessage::Text("hi".to_owned()));
        assert_eq!(first.code(), ABNORMAL);
        first.see(&SocketMessage::Close(None));
        first.see(&SocketMessage::restart());
        first.closed(1000);
        assert_eq!(first.code(), NO_STATUS);
        assert_eq!(close_label(first.code()), "other");
        for (code, label) in [
            (1000, "1000"),
            (1012, "1012"),
            (4000, "other"),
            (0, "other"),
        ] {
            assert_eq!(close_label(code), label);
        }
        assert_eq!(SocketMessage::Text("héllo".to_owned()).payload_len(), 6);
        assert_eq!(SocketMessage::restart().payload_len(), 0);
    }

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
