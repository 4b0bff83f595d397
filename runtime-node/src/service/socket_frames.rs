//! A Worker's WebSocket over the `Execute` call that carried its handshake:
//! after the 101 head, the Worker's messages go out as `socket` frames and
//! the client's come in as them, then the `end` frame follows the Worker's
//! last message (without a close before it, the router closes the client
//! with 1011).
//!
//! Bounded both ways without ever leaving data unread on the HTTP/2
//! connection the call shares with other requests: the client's messages are
//! read off the call at once into a queue, and each one the Worker's queue
//! takes is acknowledged (`socket_ack`); the router sends at most
//! [`UNACKNOWLEDGED`] before an acknowledgement, so a Worker slower than its
//! client holds back only its own client (the router stops reading it). The
//! Worker's messages are pulled by tonic as the router takes them (at once:
//! the router drops a socket whose client does not read).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse, ResponseHead, execute_request};
use isolane_proto::socket::{SocketChannels, SocketMessage, UNACKNOWLEDGED};
use tokio::sync::{Notify, mpsc};

use super::answered::Answered;
use super::{ExecuteStream, InboundFrames};

/// The client's messages the Worker's queue took, not yet acknowledged.
#[derive(Debug, Default)]
struct Taken {
    count: AtomicU32,
    changed: Notify,
}

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
    let taken = Arc::new(Taken::default());
    tokio::spawn(client_messages(inbound, to_worker, Arc::clone(&taken)));
    let outbound = Outbound {
        head: Some(head),
        body: Some(body),
        from_worker,
        taken,
        done: false,
    };
    Box::pin(futures::stream::unfold(outbound, |mut out| async move {
        let frame = out.next_frame().await?;
        Some((Ok(frame), out))
    }))
}

/// Moves the client's messages from the call to the Worker until either
/// ends, counting each the Worker's queue takes in `taken`. Dropping
/// `to_worker` without a close is an abnormal close (1006 to the Worker).
async fn client_messages(
    mut inbound: InboundFrames,
    to_worker: mpsc::Sender<SocketMessage>,
    taken: Arc<Taken>,
) {
    let mut queue: VecDeque<SocketMessage> = VecDeque::new();
    let mut reading = true;
    loop {
        tokio::select! {
            // A router that sends more than it may is read no further
            // until the Worker catches up.
            frame = inbound.next(), if reading && queue.len() < UNACKNOWLEDGED => {
                let Some(Ok(ExecuteRequest { frame })) = frame else {
                    reading = false;
                    continue;
                };
                // The handshake's `end`, and frames this node does not know,
                // are skipped.
                if let Some(execute_request::Frame::Socket(frame)) = frame
                    && let Some(message) = frame.into_message()
                {
                    queue.push_back(message);
                }
            }
            permit = to_worker.reserve(), if !queue.is_empty() => {
                let (Ok(permit), Some(message)) = (permit, queue.pop_front()) else {
                    return;
                };
                permit.send(message);
                taken.count.fetch_add(1, Ordering::Relaxed);
                taken.changed.notify_one();
            }
            else => return,
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
    taken: Arc<Taken>,
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
        loop {
            let taken = self.taken.count.swap(0, Ordering::Relaxed);
            if taken > 0 {
                return Some(ExecuteResponse::socket_ack(taken));
            }
            tokio::select! {
                message = self.from_worker.recv() => {
                    return match message {
                        Some(message) => Some(ExecuteResponse::socket(message)),
                        None => {
                            self.done = true;
                            Some(ExecuteResponse::end(Outcome::Ok, String::new(), 0))
                        }
                    };
                }
                () = self.taken.changed.notified() => {}
            }
        }
    }
}
