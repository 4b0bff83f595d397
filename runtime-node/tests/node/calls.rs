//! The `Calls` stream against a real node (real V8): bodyless calls share
//! one stream and are answered as `Execute` answers them; a refusal comes
//! as its status; a request with a body is refused there; a cancel ends
//! the call on the node.

use std::time::Duration;

use bytes::Bytes;
use isolane_proto::runtime::v1::{
    CallCancel, CallsDown, CallsUp, ExecuteResponse, RequestHead, WholeAnswer, calls_down,
    calls_up, execute_response,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Streaming;

use crate::support::*;

/// The test's side of one `Calls` stream to `node`'s thread 0 endpoint.
struct Calls {
    up: mpsc::UnboundedSender<CallsUp>,
    down: Streaming<CallsDown>,
}

impl Calls {
    async fn open(node: &TestNode) -> Self {
        let mut client = node.client(0).await;
        let (up, rx) = mpsc::unbounded_channel();
        let down = client
            .calls(UnboundedReceiverStream::new(rx))
            .await
            .expect("the node opens the stream")
            .into_inner();
        Self { up, down }
    }

    fn send(&self, id: u64, frame: calls_up::Frame) {
        self.send_with(id, frame, Bytes::new());
    }

    /// A message whose head carries `body`.
    fn send_with(&self, id: u64, frame: calls_up::Frame, body: Bytes) {
        let message = CallsUp {
            id,
            frame: Some(frame),
            trace: Vec::new(),
            body,
        };
        self.up.send(message).unwrap();
    }

    async fn next(&mut self) -> CallsDown {
        tokio::time::timeout(Duration::from_secs(30), self.down.message())
            .await
            .expect("a message within 30 s")
            .expect("the stream stays healthy")
            .expect("the stream stays open")
    }
}

/// The whole answer `message` carries.
fn whole_answer(message: CallsDown) -> WholeAnswer {
    let Some(calls_down::Frame::Response(ExecuteResponse {
        frame: Some(execute_response::Frame::Whole(answer)),
    })) = message.frame
    else {
        panic!("expected a whole answer, got {message:?}");
    };
    answer
}

fn whole(head: RequestHead) -> calls_up::Frame {
    let mut head = head;
    head.whole_answer = true;
    calls_up::Frame::Head(head)
}

#[tokio::test]
async fn bodyless_calls_share_one_stream_and_each_is_answered_whole() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut calls = Calls::open(&node).await;
    for id in [3, 1, 2] {
        calls.send(id, whole(head("GET", "demo/hello", "r1", 0)));
    }
    let mut answered = Vec::new();
    for _ in 0..3 {
        let message = calls.next().await;
        answered.push(message.id);
        let answer = whole_answer(message);
        assert_eq!(answer.head.unwrap().status, 200);
        assert_eq!(answer.body.as_ref(), b"hello from /path yes");
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3]);
    let metrics = node.metrics_text();
    let line = r#"isolane_node_requests_total{outcome="ok",thread="0"} 3"#;
    assert!(metrics.contains(line), "{line} in\n{metrics}");
}

/// A request's body that comes with its head reaches the Worker.
#[tokio::test]
async fn a_body_with_its_head_reaches_the_worker() {
    let node = start(Shape::default());
    let echo = "export default { async fetch(request) { return new Response(request.method + ' ' + await request.text()); } };";
    node.deploy("demo/echo", "r1", echo);
    let mut calls = Calls::open(&node).await;
    let body = Bytes::from_static(br#"{"order":42}"#);
    let mut post = head("POST", "demo/echo", "r1", 0);
    post.body_length = Some(body.len() as u64);
    calls.send_with(1, whole(post), body);
    let answer = whole_answer(calls.next().await);
    assert_eq!(answer.body.as_ref(), br#"POST {"order":42}"#);
}

/// A refusal comes as its status; so does a head whose body is not the
/// length it announces, or is longer than a call may carry.
#[tokio::test]
async fn a_refusal_comes_as_its_status_and_a_body_not_as_announced_is_refused() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut calls = Calls::open(&node).await;
    calls.send(1, whole(head("GET", "demo/hello", "r1", 99)));
    let mut post = head("POST", "demo/hello", "r1", 0);
    post.body_length = Some(5);
    calls.send(2, whole(post));
    let big = Bytes::from(vec![b'x'; isolane_proto::calls::WHOLE_REQUEST_LIMIT + 1]);
    let mut post = head("POST", "demo/hello", "r1", 0);
    post.body_length = Some(big.len() as u64);
    calls.send_with(4, whole(post), big);
    for _ in 0..3 {
        let message = calls.next().await;
        let Some(calls_down::Frame::Status(status)) = message.frame else {
            panic!("expected a status, got {message:?}");
        };
        assert_eq!(
            status.code,
            tonic::Code::InvalidArgument as i32,
            "{status:?}"
        );
        if message.id != 1 {
            assert!(status.message.contains("body_length"), "{status:?}");
        }
    }
    // The stream still serves.
    calls.send(3, whole(head("GET", "demo/hello", "r1", 0)));
    assert_eq!(calls.next().await.id, 3);
}

#[tokio::test]
async fn a_cancel_ends_the_call_on_the_node() {
    let node = start(Shape::default());
    node.deploy("demo/hangs", "r1", HANGS);
    let calls = Calls::open(&node).await;
    calls.send(1, whole(head("GET", "demo/hangs", "r1", 0)));
    node.wait_in_flight(0, 1, "the hanging call in flight")
        .await;
    calls.send(1, calls_up::Frame::Cancel(CallCancel {}));
    node.wait_in_flight(0, 0, "the cancelled call gone").await;
}
