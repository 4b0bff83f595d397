//! The node's side of `Calls` (`isolane_proto::calls::serve`) behind a real
//! tonic server on an in-memory pipe, driven by a test that plays the
//! router: it reads every message at once and returns credit only when it
//! says so. A call's body stops at its credit while another call on the
//! same stream is answered; a cancel, the router's end and the node's
//! closing each drop the calls they should; a refusal comes as its status.

#![allow(clippy::unwrap_used)]

mod pipe;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use isolane_proto::Outcome;
use isolane_proto::calls::{CallFrames, INITIAL_CREDIT};
use isolane_proto::runtime::v1::runtime_server::Runtime;
use isolane_proto::runtime::v1::{
    CallCancel, CallsDown, CallsUp, D1MigrateRequest, D1MigrateResponse, ExecuteRequest,
    ExecuteResponse, RequestHead, ResponseHead, StatsRequest, StatsResponse, TailFrame,
    TailRequest, calls_down, calls_up, execute_response,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

/// The size of the `/big` body's chunks, and how many there are.
const CHUNK: usize = 16 * 1024;
const CHUNKS: usize = 64;

/// What the node side saw.
#[derive(Default)]
struct Seen {
    /// `/big` chunks produced so far.
    produced: AtomicUsize,
    /// Calls dropped before they ended (cancelled).
    dropped: AtomicUsize,
    changed: Notify,
}

struct Node {
    seen: Arc<Seen>,
    /// Completed to close every stream (a node's drain).
    closing: std::sync::Mutex<Option<oneshot::Receiver<()>>>,
}

/// Counts a `/hang` call's drop.
struct DropGuard(Arc<Seen>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

fn answer_head() -> ExecuteResponse {
    ExecuteResponse::head(ResponseHead {
        status: 200,
        outcome: Outcome::Ok.into(),
        ..Default::default()
    })
}

/// A call's frames by its URL's path; `/echo` answers its `body`.
fn run(seen: Arc<Seen>, head: RequestHead, body: Bytes) -> Result<CallFrames, Status> {
    let ok_end = || Ok(ExecuteResponse::end(Outcome::Ok, "", 0));
    match head.url.as_str() {
        "/echo" => Ok(Box::pin(tokio_stream::iter([
            Ok(answer_head()),
            Ok(ExecuteResponse::body(body)),
            ok_end(),
        ]))),
        "/hello" => Ok(Box::pin(tokio_stream::iter([
            Ok(answer_head()),
            Ok(ExecuteResponse::body(Bytes::from_static(b"hello"))),
            ok_end(),
        ]))),
        "/big" => {
            let chunks = (0..CHUNKS).map(move |_| {
                seen.produced.fetch_add(1, Ordering::SeqCst);
                Ok(ExecuteResponse::body(Bytes::from(vec![b'x'; CHUNK])))
            });
            let frames = tokio_stream::iter([Ok(answer_head())])
                .chain(tokio_stream::iter(chunks))
                .chain(tokio_stream::iter([ok_end()]));
            Ok(Box::pin(frames))
        }
        "/hang" => {
            let guard = DropGuard(seen);
            let pending = tokio_stream::pending::<Result<ExecuteResponse, Status>>();
            Ok(Box::pin(pending.map(move |frame| {
                let _ = &guard;
                frame
            })))
        }
        _ => Err(Status::resource_exhausted("thread 0 is at its limit")),
    }
}

type Stub<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl Runtime for Node {
    type ExecuteStream = Stub<ExecuteResponse>;

    async fn execute(
        &self,
        _: Request<Streaming<ExecuteRequest>>,
    ) -> Result<Response<Self::ExecuteStream>, Status> {
        Err(Status::unimplemented("only Calls here"))
    }

    type CallsStream = isolane_proto::calls::CallsStream;

    async fn calls(
        &self,
        request: Request<Streaming<CallsUp>>,
    ) -> Result<Response<Self::CallsStream>, Status> {
        let seen = Arc::clone(&self.seen);
        let closing = self.closing.lock().unwrap().take();
        let closing = async move {
            match closing {
                Some(closing) => {
                    let _ = closing.await;
                }
                None => std::future::pending().await,
            }
        };
        let run = move |head, _trace, body| std::future::ready(run(Arc::clone(&seen), head, body));
        let stream = isolane_proto::calls::serve(request.into_inner(), closing, run);
        Ok(Response::new(stream))
    }

    async fn stats(&self, _: Request<StatsRequest>) -> Result<Response<StatsResponse>, Status> {
        Err(Status::unimplemented("no stats here"))
    }

    type TailStream = Stub<TailFrame>;

    async fn tail(&self, _: Request<TailRequest>) -> Result<Response<Self::TailStream>, Status> {
        Err(Status::unimplemented("no tails here"))
    }

    async fn d1_migrate(
        &self,
        _: Request<D1MigrateRequest>,
    ) -> Result<Response<D1MigrateResponse>, Status> {
        Err(Status::unimplemented("no databases here"))
    }
}

/// The test's side of one `Calls` stream.
struct Router {
    up: mpsc::UnboundedSender<CallsUp>,
    down: Streaming<CallsDown>,
    seen: Arc<Seen>,
    close: Option<oneshot::Sender<()>>,
}

impl Router {
    async fn open() -> Self {
        let seen = Arc::new(Seen::default());
        let (close, closing) = oneshot::channel();
        let node = Node {
            seen: Arc::clone(&seen),
            closing: std::sync::Mutex::new(Some(closing)),
        };
        let mut client = pipe::connect(node, 64 * 1024).await;
        let (up, rx) = mpsc::unbounded_channel();
        let down = client
            .calls(UnboundedReceiverStream::new(rx))
            .await
            .expect("the stream opens")
            .into_inner();
        Self {
            up,
            down,
            seen,
            close: Some(close),
        }
    }

    fn send(&self, id: u64, frame: calls_up::Frame) {
        self.send_with(id, frame, Bytes::new());
    }

    fn send_with(&self, id: u64, frame: calls_up::Frame, body: Bytes) {
        let message = CallsUp {
            id,
            frame: Some(frame),
            trace: Vec::new(),
            body,
        };
        self.up.send(message).expect("the stream is open");
    }

    fn call(&self, id: u64, path: &str) {
        self.call_with(id, path, Bytes::new());
    }

    /// A call whose head carries `body`.
    fn call_with(&self, id: u64, path: &str, body: Bytes) {
        let head = RequestHead {
            method: if body.is_empty() { "GET" } else { "POST" }.into(),
            url: path.into(),
            worker_id: "ns/w".into(),
            body_length: (!body.is_empty()).then_some(body.len() as u64),
            ..Default::default()
        };
        self.send_with(id, calls_up::Frame::Head(head), body);
    }

    /// The next message, within a deadline.
    async fn next(&mut self) -> Option<CallsDown> {
        tokio::time::timeout(Duration::from_secs(10), self.down.message())
            .await
            .expect("a message within 10 s")
            .expect("the stream stays healthy")
    }
}

fn body_len(message: &CallsDown) -> usize {
    match &message.frame {
        Some(calls_down::Frame::Response(ExecuteResponse {
            frame: Some(execute_response::Frame::Body(chunk)),
        })) => chunk.len(),
        _ => 0,
    }
}

fn is_end(message: &CallsDown) -> bool {
    matches!(
        &message.frame,
        Some(calls_down::Frame::Response(ExecuteResponse {
            frame: Some(execute_response::Frame::End(_)),
        }))
    )
}

#[tokio::test]
async fn a_body_stops_at_its_credit_while_another_call_is_answered() {
    let mut router = Router::open().await;
    router.call(1, "/big");
    // The body flows until its credit is spent.
    let mut big = 0;
    while big < INITIAL_CREDIT as usize {
        let message = router.next().await.expect("the big body flows");
        assert_eq!(message.id, 1);
        big += body_len(&message);
    }
    // Another call on the same stream is answered whole, and the big body
    // did not go on meanwhile: without credit it would have ended by now.
    router.call(2, "/hello");
    let mut hello_ended = false;
    while !hello_ended {
        let message = router.next().await.expect("hello is answered");
        if message.id == 2 {
            hello_ended = is_end(&message);
        } else {
            big += body_len(&message);
        }
    }
    assert!(
        big < INITIAL_CREDIT as usize + CHUNK,
        "{big} bytes went out on {INITIAL_CREDIT} of credit"
    );
    let produced = router.seen.produced.load(Ordering::SeqCst);
    assert!(produced < CHUNKS / 2, "{produced} chunks were produced");
    // Credit returned: the rest comes, then the end.
    router.send(1, calls_up::Frame::Credit((CHUNK * CHUNKS) as u32));
    loop {
        let message = router.next().await.expect("the rest of the body");
        if is_end(&message) {
            break;
        }
        big += body_len(&message);
    }
    assert_eq!(big, CHUNK * CHUNKS);
}

/// A call's body comes with its head and reaches the call; calls with and
/// without one share the stream.
#[tokio::test]
async fn a_calls_body_comes_with_its_head() {
    let mut router = Router::open().await;
    router.call_with(4, "/echo", Bytes::from_static(b"a small JSON body"));
    router.call(5, "/hello");
    let mut bodies: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    let mut ended = 0;
    while ended < 2 {
        let message = router.next().await.expect("both are answered");
        if let Some(calls_down::Frame::Response(ExecuteResponse {
            frame: Some(execute_response::Frame::Body(chunk)),
        })) = &message.frame
        {
            bodies
                .entry(message.id)
                .or_default()
                .extend_from_slice(chunk);
        }
        ended += usize::from(is_end(&message));
    }
    assert_eq!(bodies[&4], b"a small JSON body");
    assert_eq!(bodies[&5], b"hello");
}

#[tokio::test]
async fn a_refusal_comes_as_its_status() {
    let mut router = Router::open().await;
    router.call(7, "/refuse");
    let message = router.next().await.expect("an answer");
    assert_eq!(message.id, 7);
    let Some(calls_down::Frame::Status(status)) = message.frame else {
        panic!("expected a status, got {message:?}");
    };
    assert_eq!(status.code, tonic::Code::ResourceExhausted as i32);
    assert_eq!(status.message, "thread 0 is at its limit");
}

/// Waits until `count` calls have been dropped on the node.
async fn dropped(seen: &Seen, count: usize) {
    let wait = async {
        loop {
            let changed = seen.changed.notified();
            if seen.dropped.load(Ordering::SeqCst) >= count {
                return;
            }
            changed.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the calls are dropped within 10 s");
}

#[tokio::test]
async fn a_cancel_drops_its_call_and_no_other() {
    let mut router = Router::open().await;
    router.call(1, "/hang");
    router.call(2, "/hang");
    router.send(1, calls_up::Frame::Cancel(CallCancel {}));
    dropped(&router.seen, 1).await;
    // The other is still running: the stream answers a third.
    router.call(3, "/hello");
    let message = router.next().await.expect("hello is answered");
    assert_eq!(message.id, 3);
    assert_eq!(router.seen.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_routers_end_drops_every_call_and_ends_the_stream() {
    let mut router = Router::open().await;
    router.call(1, "/hang");
    router.call(2, "/hang");
    router.call(3, "/hello");
    // The hello's three frames arrive once both hangs are running.
    for _ in 0..3 {
        assert_eq!(router.next().await.expect("hello").id, 3);
    }
    let (up, _) = mpsc::unbounded_channel();
    drop(std::mem::replace(&mut router.up, up));
    dropped(&router.seen, 2).await;
    assert!(router.next().await.is_none(), "the node ends its side");
}

#[tokio::test]
async fn closing_drops_every_call_and_ends_the_stream() {
    let mut router = Router::open().await;
    router.call(1, "/hang");
    router.call(2, "/hello");
    for _ in 0..3 {
        assert_eq!(router.next().await.expect("hello").id, 2);
    }
    let _ = router.close.take().expect("not closed yet").send(());
    dropped(&router.seen, 1).await;
    assert!(router.next().await.is_none(), "the node ends its side");
}
