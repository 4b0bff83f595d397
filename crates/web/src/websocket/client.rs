//! The engine's own end of an outbound WebSocket (`websocket/connect.rs`):
//! after the server's `101`, the edge's one frame loop
//! ([`isolane_edge::websocket::pump`], as the client: frames are masked)
//! moves whole messages between the upgraded connection and the Worker's
//! [`SocketEnd`], as the front end does for an accepted socket, with the
//! same bounds (1009 past the message cap, back-pressure while the Worker's
//! queue is full, a write the server does not take within the idle timeout
//! ends the connection, 1011 when the Worker drops the socket). The
//! observer's tally ([`SocketTally`]) counts it.

use isolane_edge::websocket::{self, Ends, Role, Side, Whole};

use isolane_engine::{CloseFrame, SocketEnd, SocketMessage, SocketTally};

/// Runs the socket over `io` until either side closes.
pub(crate) async fn run<S>(io: S, end: SocketEnd, tally: Option<Box<dyn SocketTally>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let SocketEnd {
        to_worker,
        from_worker,
        config,
    } = end;
    let ends = Ends {
        to_local: to_worker,
        from_local: from_worker,
        max_message_bytes: config.max_message_bytes,
        write_timeout: config.idle_timeout,
    };
    // No closing of its own: the Worker's request ending drops the socket
    // (1011 to the server).
    websocket::pump(io, Role::Client, ends, None, &ServerSide(tally)).await;
}

/// A Worker's outbound socket as the frame loop sees it.
struct ServerSide(Option<Box<dyn SocketTally>>);

impl Side for ServerSide {
    type Message = SocketMessage;

    fn to_whole(message: SocketMessage) -> Whole {
        match message {
            SocketMessage::Text(text) => Whole::Text(text),
            SocketMessage::Binary(bytes) => Whole::Binary(bytes),
            SocketMessage::Close(frame) => Whole::Close(frame.map(|f| (f.code, f.reason))),
        }
    }

    fn from_whole(whole: Whole) -> SocketMessage {
        match whole {
            Whole::Text(text) => SocketMessage::Text(text),
            Whole::Binary(bytes) => SocketMessage::Binary(bytes),
            Whole::Close(frame) => {
                SocketMessage::Close(frame.map(|(code, reason)| CloseFrame { code, reason }))
            }
        }
    }

    fn inbound(&self, message: &SocketMessage) {
        if let Some(tally) = &self.0 {
            tally.to_worker(message);
        }
    }

    fn outbound(&self, message: &SocketMessage) {
        if let Some(tally) = &self.0 {
            tally.to_server(message);
        }
    }

    fn closed(&self, code: u16) {
        if let Some(tally) = &self.0 {
            tally.closed(code);
        }
    }
}
