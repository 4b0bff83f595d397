//! The node's side of `Calls`: many calls on one long-lived stream from a
//! router (the wire contract is in `runtime.proto`), each a head with its
//! whole body (empty, or at most [`WHOLE_REQUEST_LIMIT`] bytes that the
//! router held whole). Each call is run as an `Execute` with that body
//! would be (the server's `run` gives its response frames); only its
//! frames travel tagged with the call's id, so a call costs no HTTP/2
//! stream, no HEADERS, and no per-stream task in the server.
//!
//! One task reads the router's messages: a head starts a task for its
//! call, a credit lets the call's body go on, a cancel aborts the call. A
//! call's task sends its frames to the one response stream, its body only
//! while it has credit, so a client that stops reading holds back its own
//! call and nothing else. The router reads the stream promptly (it keeps
//! each call's frames until that call's reader takes them, which credit
//! bounds), so the stream itself never stops.

// Looked up for every message: foldhash (seeded per process) rather than SipHash.
use foldhash::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::{Notify, mpsc};
use tokio::task::AbortHandle;
use tokio_stream::{Stream, StreamExt};
use tonic::{Status, Streaming};

use crate::runtime::v1::{
    CallStatus, CallsDown, CallsUp, ExecuteResponse, Header, RequestHead, calls_down, calls_up,
    execute_response,
};

/// The response stream of `Calls`.
pub type CallsStream = Pin<Box<dyn Stream<Item = Result<CallsDown, Status>> + Send>>;

/// One call's response frames, as an `Execute` call's response stream.
pub type CallFrames = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

/// A call's response body credit at its start: what one call's unread body
/// may hold, the same as an `Execute` call's HTTP/2 stream window.
pub const INITIAL_CREDIT: u32 = crate::socket::STREAM_WINDOW;

/// The largest request body a call carries with its head: what a router
/// sends on `Calls` when it holds a request's body whole; a longer one
/// opens its own `Execute`. Each call's body is read off the stream at
/// once, so this bounds what one admitted call holds in the node before
/// its Worker reads it (half an `Execute` stream's window).
pub const WHOLE_REQUEST_LIMIT: usize = 64 << 10;

/// Serves one `Calls` stream from `inbound` until the router ends it, it
/// fails, or `closing` completes (a node's drain); the calls still running
/// then are cancelled. `run` starts a call from its head, the router's
/// trace context and its body; each runs in a task of its own.
pub fn serve<R, F>(
    inbound: Streaming<CallsUp>,
    closing: impl Future<Output = ()> + Send + 'static,
    run: R,
) -> CallsStream
where
    R: Fn(RequestHead, Vec<Header>, Bytes) -> F + Send + 'static,
    F: Future<Output = Result<CallFrames, Status>> + Send + 'static,
{
    let (down, rx) = mpsc::unbounded_channel();
    tokio::spawn(read(inbound, down, closing, run));
    Box::pin(Outbound(rx))
}

/// The value of the field `name` in a head's `trace`.
pub fn trace_field<'a>(trace: &'a [Header], name: &str) -> Option<&'a str> {
    let field = trace.iter().find(|field| field.name == name)?;
    std::str::from_utf8(&field.value).ok()
}

/// The node's side of the stream, as tonic sends it.
struct Outbound(mpsc::UnboundedReceiver<CallsDown>);

impl Stream for Outbound {
    type Item = Result<CallsDown, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|message| message.map(Ok))
    }
}

/// A call in flight on the stream.
struct Live {
    credit: Arc<Credit>,
    task: AbortHandle,
}

/// Reads the router's messages until the stream ends.
async fn read<R, F>(
    mut inbound: Streaming<CallsUp>,
    down: mpsc::UnboundedSender<CallsDown>,
    closing: impl Future<Output = ()> + Send + 'static,
    run: R,
) where
    R: Fn(RequestHead, Vec<Header>, Bytes) -> F,
    F: Future<Output = Result<CallFrames, Status>> + Send + 'static,
{
    let mut closing = std::pin::pin!(closing);
    let mut live: HashMap<u64, Live> = HashMap::default();
    let (done_tx, mut done) = mpsc::unbounded_channel::<u64>();
    loop {
        let message = tokio::select! {
            message = inbound.next() => message,
            Some(id) = done.recv() => {
                live.remove(&id);
                continue;
            }
            () = &mut closing => break,
        };
        let Some(Ok(up)) = message else {
            break;
        };
        let id = up.id;
        match up.frame {
            Some(calls_up::Frame::Head(head)) => {
                let (credit, down, done) =
                    (Credit::new(INITIAL_CREDIT), down.clone(), done_tx.clone());
                let credit = Arc::new(credit);
                // Boxed where it is made: a node's call future is large,
                // and the task would otherwise copy it on every move (each
                // copy cost ~11,000 instructions per call).
                let started: Pin<Box<dyn Future<Output = _> + Send>> =
                    Box::pin(run(head, up.trace, up.body));
                let call = send_frames(id, started, Arc::clone(&credit), down, done);
                let task = tokio::spawn(call).abort_handle();
                if let Some(old) = live.insert(id, Live { credit, task }) {
                    // A reused id is the router's bug: the old call is dropped.
                    old.task.abort();
                }
            }
            Some(calls_up::Frame::Credit(bytes)) => {
                if let Some(call) = live.get(&id) {
                    call.credit.add(bytes);
                }
            }
            Some(calls_up::Frame::Cancel(_)) => {
                if let Some(call) = live.remove(&id) {
                    call.task.abort();
                }
            }
            None => {}
        }
    }
    for (_, call) in live.drain() {
        call.task.abort();
    }
}

/// Runs one call and sends its frames, tagged `id`; a body chunk waits
/// for credit.
async fn send_frames(
    id: u64,
    call: impl Future<Output = Result<CallFrames, Status>>,
    credit: Arc<Credit>,
    down: mpsc::UnboundedSender<CallsDown>,
    done: mpsc::UnboundedSender<u64>,
) {
    let send = |frame| {
        down.send(CallsDown {
            id,
            frame: Some(frame),
        })
        .is_ok()
    };
    match call.await {
        Err(status) => {
            send(calls_down::Frame::Status(status_message(&status)));
        }
        Ok(mut frames) => {
            while let Some(frame) = frames.next().await {
                let frame = match frame {
                    Ok(response) => {
                        if let Some(execute_response::Frame::Body(chunk)) = &response.frame {
                            credit.take(chunk.len()).await;
                        }
                        calls_down::Frame::Response(response)
                    }
                    Err(status) => calls_down::Frame::Status(status_message(&status)),
                };
                let last = match &frame {
                    calls_down::Frame::Response(response) => response.ends_call(),
                    calls_down::Frame::Status(_) => true,
                };
                if !send(frame) || last {
                    break;
                }
            }
        }
    }
    let _ = done.send(id);
}

/// A status as a `Calls` message.
fn status_message(status: &Status) -> CallStatus {
    CallStatus {
        code: status.code() as i32,
        message: status.message().to_owned(),
        details: status.details().to_vec().into(),
    }
}

/// How many more response body bytes a call may send.
struct Credit {
    bytes: AtomicI64,
    more: Notify,
}

impl Credit {
    fn new(bytes: u32) -> Self {
        Self {
            bytes: AtomicI64::new(i64::from(bytes)),
            more: Notify::new(),
        }
    }

    fn add(&self, bytes: u32) {
        self.bytes.fetch_add(i64::from(bytes), Ordering::AcqRel);
        self.more.notify_one();
    }

    /// Waits until there is credit, then spends `len` of it (a chunk may
    /// take it below zero: the next waits for the router to return it).
    async fn take(&self, len: usize) {
        loop {
            let more = self.more.notified();
            if self.bytes.load(Ordering::Acquire) > 0 {
                let len = i64::try_from(len).unwrap_or(i64::MAX);
                self.bytes.fetch_sub(len, Ordering::AcqRel);
                return;
            }
            more.await;
        }
    }
}
