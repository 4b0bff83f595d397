//! The generated client and server talk over an in-memory duplex pipe (no
//! socket): an echo Runtime proves bodies stream both ways, chunk by chunk,
//! while the request is still open.

mod pipe;

use std::pin::Pin;

use isolane_proto::Outcome;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::runtime_server::Runtime;
use isolane_proto::runtime::v1::{
    D1MigrateRequest, D1MigrateResponse, ExecuteRequest, ExecuteResponse, Header, RequestHead,
    ResponseHead, StatsRequest, StatsResponse, TailFrame, TailRequest, ThreadStats,
    execute_request::Frame as In, execute_response::Frame as Out,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Channel;
use tonic::{Request, Response, Status, Streaming};

/// Answers every request with its own body, one chunk out per chunk in.
struct Echo;

type ResponseStream = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Runtime for Echo {
    type ExecuteStream = ResponseStream;

    async fn execute(
        &self,
        request: Request<Streaming<ExecuteRequest>>,
    ) -> Result<Response<ResponseStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(2);
        tokio::spawn(async move {
            let head = match inbound.message().await {
                Ok(Some(ExecuteRequest {
                    frame: Some(In::Head(head)),
                })) => head,
                _ => return,
            };
            let (status, outcome) = if head.worker_id == "ns/echo" {
                (200, Outcome::Ok)
            } else {
                (404, Outcome::UnknownWorker)
            };
            let head = ResponseHead {
                status,
                headers: vec![Header::new("x-request-id", head.request_id.clone())],
                outcome: outcome.into(),
                ..Default::default()
            };
            if tx.send(Ok(ExecuteResponse::head(head))).await.is_err() {
                return;
            }
            if outcome != Outcome::Ok {
                let _ = tx
                    .send(Ok(ExecuteResponse::end(outcome, "no such worker", 0)))
                    .await;
                return;
            }
            let end = loop {
                match inbound.message().await {
                    Ok(Some(ExecuteRequest {
                        frame: Some(In::Body(chunk)),
                    })) => {
                        if tx.send(Ok(ExecuteResponse::body(chunk))).await.is_err() {
                            return;
                        }
                    }
                    Ok(Some(ExecuteRequest {
                        frame: Some(In::End(_)),
                    })) => break ExecuteResponse::end(Outcome::Ok, "", 42),
                    _ => break ExecuteResponse::end(Outcome::Canceled, "body truncated", 0),
                }
            };
            let _ = tx.send(Ok(end)).await;
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type CallsStream = isolane_proto::calls::CallsStream;

    async fn calls(
        &self,
        _: Request<Streaming<isolane_proto::runtime::v1::CallsUp>>,
    ) -> Result<Response<Self::CallsStream>, Status> {
        Err(Status::unimplemented("Calls is tested in tests/calls.rs"))
    }

    async fn stats(&self, _: Request<StatsRequest>) -> Result<Response<StatsResponse>, Status> {
        Ok(Response::new(StatsResponse {
            node: "node-a".into(),
            threads: vec![ThreadStats {
                thread: 0,
                live_isolates: 3,
                ..Default::default()
            }],
            ..Default::default()
        }))
    }

    type TailStream = Pin<Box<dyn Stream<Item = Result<TailFrame, Status>> + Send>>;

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

/// A client connected to `Echo` through `tokio::io::duplex`.
async fn connect() -> RuntimeClient<Channel> {
    // A small pipe: larger bodies must flow through it in pieces.
    pipe::connect(Echo, 8 * 1024).await
}

fn head(worker_id: &str) -> RequestHead {
    RequestHead {
        method: "POST".into(),
        url: "https://echo.example/".into(),
        worker_id: worker_id.into(),
        request_id: "req-1".into(),
        ..Default::default()
    }
}

async fn next_frame(responses: &mut Streaming<ExecuteResponse>) -> Out {
    responses
        .message()
        .await
        .expect("the stream stays healthy")
        .expect("another frame follows")
        .frame
        .expect("every frame is set")
}

#[tokio::test]
async fn bodies_stream_both_ways_chunk_by_chunk() {
    let mut client = connect().await;
    let (tx, rx) = mpsc::channel(1);
    tx.send(ExecuteRequest::head(head("ns/echo")))
        .await
        .unwrap();
    let mut responses = client
        .execute(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();

    let Out::Head(response_head) = next_frame(&mut responses).await else {
        panic!("expected the response head first");
    };
    assert_eq!(response_head.status, 200);
    assert_eq!(response_head.outcome(), Outcome::Ok);
    assert_eq!(response_head.headers[0].value.as_ref(), b"req-1");

    // Each chunk comes back before the next is sent: neither side buffers
    // the body whole. 64 KiB chunks through an 8 KiB pipe.
    for i in 0..16u8 {
        let chunk = vec![i; 64 * 1024];
        tx.send(ExecuteRequest::body(chunk.clone())).await.unwrap();
        let Out::Body(echoed) = next_frame(&mut responses).await else {
            panic!("expected body chunk {i}");
        };
        assert_eq!(echoed.as_ref(), chunk.as_slice());
    }
    tx.send(ExecuteRequest::end()).await.unwrap();
    let Out::End(end) = next_frame(&mut responses).await else {
        panic!("expected the end frame");
    };
    assert_eq!(end.outcome(), Outcome::Ok);
    assert_eq!(end.cpu_time_us, 42);
    drop(tx);
    assert!(responses.message().await.unwrap().is_none());
}

#[tokio::test]
async fn a_truncated_body_ends_without_ok() {
    let mut client = connect().await;
    let requests = tokio_stream::iter([
        ExecuteRequest::head(head("ns/echo")),
        ExecuteRequest::body(&b"partial"[..]),
    ]);
    let responses = client.execute(requests).await.unwrap().into_inner();
    let frames: Vec<Out> = responses.map(|r| r.unwrap().frame.unwrap()).collect().await;
    assert!(matches!(&frames[0], Out::Head(h) if h.status == 200));
    assert!(matches!(&frames[1], Out::Body(b) if b.as_ref() == b"partial"));
    assert!(matches!(&frames[2], Out::End(e) if e.outcome() == Outcome::Canceled));
    assert_eq!(frames.len(), 3);
}

#[tokio::test]
async fn the_node_may_refuse_before_the_body() {
    let mut client = connect().await;
    let requests = tokio_stream::iter([ExecuteRequest::head(head("ns/missing"))]);
    let responses = client.execute(requests).await.unwrap().into_inner();
    let frames: Vec<Out> = responses.map(|r| r.unwrap().frame.unwrap()).collect().await;
    let [Out::Head(h), Out::End(e)] = frames.as_slice() else {
        panic!("expected head and end, got {frames:?}");
    };
    assert_eq!(h.outcome(), Outcome::UnknownWorker);
    assert_eq!(Outcome::UnknownWorker.http_status(), Some(h.status as u16));
    assert_eq!(e.reason, "no such worker");
}

#[tokio::test]
async fn stats_is_unary() {
    let mut client = connect().await;
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.node, "node-a");
    assert_eq!(stats.threads[0].live_isolates, 3);
}
