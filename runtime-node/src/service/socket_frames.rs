//! A Worker's WebSocket over the `Execute` call that carried its handshake:
//! after the 101 head, the Worker's messages go out as `socket` frames and
//! the client's come in as them, then the `end` frame follows the Worker's
//! last message (without a close before it, the router closes the client
//! with 1011).
//!
//! Bounded both ways: a client's message is read off the call only when the
//! Worker's queue has room (HTTP/2 flow control holds the router back), and
//! the Worker's messages are pulled by tonic as the router takes them (the
//! router takes them at once and drops a socket whose client does not
//! read); the engine's own queues are the buffer.

use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse, ResponseHead, execute_request};
use isolane_proto::socket::{SocketChannels, SocketMessage};
use tokio::sync::mpsc;

use super::answered::Answered;
use super::{ExecuteStream, InboundFrames};

/// The response frames of an answer that opened `channels`; the client's
/// messages are read from `inbound` on a task of their own.
pub fn socket_frames(
    head: ResponseHead,
    body: Answered,
    channels: SocketChannels,
    inbound: InboundFrames,
) -> ExecuteStream {
    let SocketChannels {
        to_worker,
        from_worker,
        ..
    } = channels;
    tokio::spawn(client_messages(inbound, to_worker));
    let outbound = Outbound {
        head: Some(head),
        body: Some(body),
        from_worker,
        done: false,
    };
    Box::pin(futures::stream::unfold(outbound, |mut out| async move {
        let frame = out.next_frame().await?;
        Some((Ok(frame), out))
    }))
}

/// Moves the client's messages from the call to the Worker until either
/// ends. Dropping `to_worker` without a close is an abnormal close (1006 to
/// the Worker).
async fn client_messages(mut inbound: InboundFrames, to_worker: mpsc::Sender<SocketMessage>) {
    while let Some(Ok(ExecuteRequest { frame })) = inbound.next().await {
        let Some(execute_request::Frame::Socket(frame)) = frame else {
            // The handshake's `end`, or a frame this node does not know.
            continue;
        };
        let Some(message) = frame.into_message() else {
            continue;
        };
        if to_worker.send(message).await.is_err() {
            return;
        }
    }
}

struct Outbound {
    head: Option<ResponseHead>,
    /// The 101's (empty) body: read to its end first, so the call is
    /// counted and its admission permit freed (an open socket holds no
    /// request slot).
    body: Option<Answered>,
    from_worker: mpsc::Receiver<SocketMessage>,
    done: bool,
}

impl Outbound {
    async fn next_frame(&mut self) -> Option<ExecuteResponse> {
        if self.done {
            return None;
        }
        if let Some(head) = self.head.take() {
            return Some(ExecuteResponse::head(head));
        }
        if let Some(mut body) = self.body.take() {
            while let Some(Ok(_)) = body.frame().await {}
        }
        match self.from_worker.recv().await {
            Some(message) => Some(ExecuteResponse::socket(message)),
            None => {
                self.done = true;
                Some(ExecuteResponse::end(Outcome::Ok, String::new(), 0))
            }
        }
    }
}
