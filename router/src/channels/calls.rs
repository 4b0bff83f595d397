//! A node's `Calls` stream as one router thread holds it: the calls of this
//! thread to one node endpoint whose bodies it holds whole (empty, or at
//! most `calls::WHOLE_REQUEST_LIMIT` bytes) share it (the wire contract is
//! in `runtime.proto`). A call on it costs one message each way for a small
//! answer, without a stream of its own.
//!
//! One task reads the node's messages and hands each to its call's
//! [`CallFrames`], which yield them as an `Execute` call's response stream
//! would, so the proxy reads both the same way. Taking a body chunk from
//! [`CallFrames`] returns its bytes to the node as credit; dropping it
//! before the end cancels the call. When the stream ends, every call still
//! on it fails with the stream's status: a transport error as it came (the
//! node is lost, as with a broken `Execute`), and a clean end as UNAVAILABLE
//! without one (the node never started those calls, so they may go to
//! another node).

// Three lookups a call: foldhash (seeded per process) rather than SipHash.
use foldhash::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{
    CallCancel, CallsDown, CallsUp, ExecuteResponse, Header, RequestHead, calls_down, calls_up,
    execute_response,
};
use tokio::sync::mpsc;
use tonic::Status;

use super::NodeChannel;

/// What a call receives: its response frames, or the status it failed with.
type Received = Result<ExecuteResponse, Status>;

/// One `Calls` stream to a node.
pub struct CallStream {
    up: mpsc::UnboundedSender<CallsUp>,
    pending: Arc<Mutex<Pending>>,
}

#[derive(Default)]
struct Pending {
    next_id: u64,
    calls: HashMap<u64, mpsc::UnboundedSender<Received>>,
    /// Why the stream ended, once it has.
    closed: Option<Status>,
}

impl CallStream {
    /// Opens a stream on `client`'s connection, read by a task on this
    /// thread's runtime.
    pub(super) fn open(client: RuntimeClient<NodeChannel>) -> Arc<Self> {
        let (up, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        tokio::spawn(read(client, Outbound(rx), Arc::clone(&pending)));
        Arc::new(Self { up, pending })
    }

    /// Whether the stream has ended (a new call needs a new one).
    pub fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }

    /// Sends a call's `head` and its whole `body` (empty for a bodyless
    /// request; at most `calls::WHOLE_REQUEST_LIMIT`) with the router's
    /// `trace` context; its frames come from what this returns.
    pub fn call(
        self: &Arc<Self>,
        head: RequestHead,
        trace: Vec<Header>,
        body: Bytes,
    ) -> CallFrames {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = {
            let mut pending = self.lock();
            let id = pending.next_id;
            pending.next_id += 1;
            match &pending.closed {
                Some(status) => {
                    let _ = tx.send(Err(status.clone()));
                }
                None => {
                    pending.calls.insert(id, tx);
                    let frame = Some(calls_up::Frame::Head(head));
                    let _ = self.up.send(CallsUp {
                        id,
                        frame,
                        trace,
                        body,
                    });
                }
            }
            id
        };
        CallFrames {
            id,
            rx,
            stream: Arc::clone(self),
            done: false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        lock(&self.pending)
    }
}

/// The calls' table; a panic elsewhere while it was held leaves it usable.
fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Opens the stream and hands each message to its call until it ends.
async fn read(
    client: RuntimeClient<NodeChannel>,
    outbound: Outbound,
    pending: Arc<Mutex<Pending>>,
) {
    let mut client = client.max_decoding_message_size(super::MAX_NODE_MESSAGE);
    let end = match client.calls(outbound).await {
        Err(status) => status,
        Ok(response) => {
            let mut inbound = response.into_inner();
            loop {
                match inbound.next().await {
                    Some(Ok(message)) => dispatch(&pending, message),
                    Some(Err(status)) => break status,
                    None => break Status::unavailable("the node ended its call stream"),
                }
            }
        }
    };
    let calls = {
        let mut pending = lock(&pending);
        pending.closed = Some(end.clone());
        std::mem::take(&mut pending.calls)
    };
    for (_, call) in calls {
        let _ = call.send(Err(end.clone()));
    }
}

/// Hands one of the node's messages to its call; its last one (an end, a
/// whole answer, a status) also takes the call off the table.
fn dispatch(pending: &Mutex<Pending>, message: CallsDown) {
    let CallsDown { id, frame } = message;
    let (received, last) = match frame {
        Some(calls_down::Frame::Response(response)) => {
            let last = response.ends_call();
            (Ok(response), last)
        }
        Some(calls_down::Frame::Status(status)) => {
            let code = tonic::Code::from_i32(status.code);
            let status = Status::with_details(code, status.message, status.details);
            (Err(status), true)
        }
        None => return,
    };
    let mut pending = lock(pending);
    let Some(call) = pending.calls.get(&id) else {
        // A call this side cancelled.
        return;
    };
    let _ = call.send(received);
    if last {
        pending.calls.remove(&id);
    }
}

/// One call's response frames on a [`CallStream`].
pub struct CallFrames {
    id: u64,
    rx: mpsc::UnboundedReceiver<Received>,
    stream: Arc<CallStream>,
    /// The call's last frame was taken: nothing to cancel.
    done: bool,
}

impl Stream for CallFrames {
    type Item = Received;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        let received = std::task::ready!(self.rx.poll_recv(cx));
        match &received {
            Some(Ok(response)) => {
                if let Some(execute_response::Frame::Body(chunk)) = &response.frame {
                    // Handed on: the node may send as much again.
                    let credit = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
                    let frame = Some(calls_up::Frame::Credit(credit));
                    let _ = self.stream.up.send(CallsUp {
                        id: self.id,
                        frame,
                        trace: Vec::new(),
                        body: Bytes::new(),
                    });
                }
                self.done = response.ends_call();
            }
            // A status, or the stream's end: nothing more comes.
            Some(Err(_)) | None => self.done = true,
        }
        Poll::Ready(received)
    }
}

impl Drop for CallFrames {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let removed = self.stream.lock().calls.remove(&self.id).is_some();
        if removed {
            let frame = Some(calls_up::Frame::Cancel(CallCancel {}));
            let _ = self.stream.up.send(CallsUp {
                id: self.id,
                frame,
                trace: Vec::new(),
                body: Bytes::new(),
            });
        }
    }
}

/// The router's side of the stream, as tonic sends it.
///
/// A named type rather than a boxed stream: see `proxy::body::FrameStream`.
struct Outbound(mpsc::UnboundedReceiver<CallsUp>);

impl Stream for Outbound {
    type Item = CallsUp;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CallsUp>> {
        self.0.poll_recv(cx)
    }
}
