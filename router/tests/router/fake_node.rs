//! An in-process runtime node: a real tonic `Runtime` server on a loopback
//! socket that echoes, and misbehaves on request.
//!
//! The request header `x-fake` picks the behaviour:
//!
//! | `x-fake` | answer |
//! | --- | --- |
//! | (absent) | 200, echoes each request chunk as it arrives, then ends OK |
//! | `generate:N` | 200 with N bytes of body in 64 KiB chunks |
//! | `overloaded` | head with `OUTCOME_OVERLOADED`, `retry_after_ms` 1500 |
//! | `resource-exhausted` | gRPC `RESOURCE_EXHAUSTED` |
//! | `cpu-limit` | head with `OUTCOME_CPU_LIMIT` and a reason |
//! | `unknown-worker` | head with `OUTCOME_UNKNOWN_WORKER` |
//! | `draining` | head with `OUTCOME_DRAINING` |
//! | `draining-on:NAME` | as `draining` on the node NAME; the others echo |
//! | `fail-midway` | 200, one chunk, then end with `OUTCOME_EXCEPTION` |
//! | `hang` | never answers |
//! | `hold` | waits for [`FakeNode::release`], then answers 200 |
//!
//! A prewarm (the head's `prewarm`) is answered 204 whatever the header, as
//! a node answers one, and counted apart from the calls (`prewarms`).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::channel::mpsc;
use futures::{SinkExt, Stream};
use isolane_membership::NodeMember;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::runtime_server::{Runtime, RuntimeServer};
use isolane_proto::runtime::v1::{
    CallsUp, D1MigrateRequest, D1MigrateResponse, ExecuteRequest, ExecuteResponse, Header,
    RequestHead, ResponseHead, StatsRequest, StatsResponse, TailFrame, TailRequest,
    execute_request,
};
use tokio::sync::{oneshot, watch};
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

/// A running fake node.
pub struct FakeNode {
    pub name: String,
    pub addr: SocketAddr,
    state: Arc<State>,
    _shutdown: oneshot::Sender<()>,
}

struct State {
    name: String,
    heads: Mutex<Vec<RequestHead>>,
    executes: AtomicUsize,
    /// Prewarm heads received.
    prewarms: Mutex<Vec<RequestHead>>,
    /// `Execute` calls and `Calls` streams opened.
    streams: AtomicUsize,
    released: watch::Sender<bool>,
}

impl FakeNode {
    /// Starts a node called `name` on a random loopback port.
    pub async fn start(name: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            name: name.to_owned(),
            heads: Mutex::default(),
            executes: AtomicUsize::new(0),
            prewarms: Mutex::default(),
            streams: AtomicUsize::new(0),
            released: watch::Sender::new(false),
        });
        let (tx, rx) = oneshot::channel();
        let service = RuntimeServer::new(Fake(Arc::clone(&state)));
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(
                    TcpIncoming::from(listener).with_nodelay(Some(true)),
                    async {
                        let _ = rx.await;
                    },
                )
                .await
                .unwrap();
        });
        Self {
            name: name.to_owned(),
            addr,
            state,
            _shutdown: tx,
        }
    }

    /// This node as membership would report it, with `threads` threads.
    pub fn member(&self, threads: u32) -> NodeMember {
        member_at(&self.name, self.addr, threads)
    }

    /// How many `Execute` calls and `Calls` streams were opened to this node.
    pub fn streams(&self) -> usize {
        self.state.streams.load(Ordering::SeqCst)
    }

    /// How many calls reached this node (on `Execute` or `Calls`).
    pub fn executes(&self) -> usize {
        self.state.executes.load(Ordering::SeqCst)
    }

    /// The prewarm heads this node received.
    pub fn prewarms(&self) -> Vec<RequestHead> {
        self.state.prewarms.lock().unwrap().clone()
    }

    /// The request heads this node received.
    pub fn heads(&self) -> Vec<RequestHead> {
        self.state.heads.lock().unwrap().clone()
    }

    /// Lets every `hold` request answer, now and from now on.
    pub fn release(&self) {
        self.state.released.send_replace(true);
    }
}

/// A member whose endpoint refuses connections: a dead node.
pub async fn dead_member(name: &str, threads: u32) -> NodeMember {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    member_at(name, addr, threads)
}

/// A live, non-draining member `name` at `addr`.
fn member_at(name: &str, addr: SocketAddr, threads: u32) -> NodeMember {
    NodeMember {
        name: name.to_owned(),
        endpoints: vec![format!("http://{addr}")],
        threads,
        draining: false,
        expires_at: None,
        crash: None,
    }
}

/// A member that accepts connections and drops each as soon as the client
/// has sent something: a node that dies under the request it was given.
pub async fn crashing_member(name: &str, threads: u32) -> NodeMember {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                // Dropped: the connection breaks under the call.
            });
        }
    });
    member_at(name, addr, threads)
}

struct Fake(Arc<State>);

type Out = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

fn head(status: u32, outcome: Outcome, reason: &str, headers: Vec<Header>) -> ExecuteResponse {
    ExecuteResponse::head(ResponseHead {
        status,
        headers,
        outcome: outcome.into(),
        reason: reason.to_owned(),
        retry_after_ms: (outcome == Outcome::Overloaded).then_some(1500),
        body_length: None,
    })
}

fn refusal(outcome: Outcome, reason: &str) -> Out {
    let status = u32::from(outcome.http_status().unwrap_or(500));
    Box::pin(futures::stream::iter([
        Ok(head(status, outcome, reason, Vec::new())),
        Ok(ExecuteResponse::end(outcome, reason, 0)),
    ]))
}

#[tonic::async_trait]
impl Runtime for Fake {
    type ExecuteStream = Out;

    async fn execute(
        &self,
        request: Request<Streaming<ExecuteRequest>>,
    ) -> Result<Response<Out>, Status> {
        self.0.streams.fetch_add(1, Ordering::SeqCst);
        let mut inbound = request.into_inner();
        let head_in = match inbound.message().await? {
            Some(ExecuteRequest {
                frame: Some(execute_request::Frame::Head(h)),
            }) => h,
            _ => return Err(Status::invalid_argument("the first frame must be the head")),
        };
        respond(Arc::clone(&self.0), head_in, Some(inbound), Bytes::new())
            .await
            .map(Response::new)
    }

    type CallsStream = isolane_proto::calls::CallsStream;

    /// Each call (with the body its head carries) as `Execute` answers it.
    async fn calls(
        &self,
        request: Request<Streaming<CallsUp>>,
    ) -> Result<Response<Self::CallsStream>, Status> {
        self.0.streams.fetch_add(1, Ordering::SeqCst);
        let state = Arc::clone(&self.0);
        let run = move |head, _trace, body| respond(Arc::clone(&state), head, None, body);
        let closing = std::future::pending();
        Ok(Response::new(isolane_proto::calls::serve(
            request.into_inner(),
            closing,
            run,
        )))
    }

    async fn stats(&self, _: Request<StatsRequest>) -> Result<Response<StatsResponse>, Status> {
        Ok(Response::new(StatsResponse {
            node: self.0.name.clone(),
            ..StatsResponse::default()
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

/// The answer to `head_in`; `inbound`: the rest of its `Execute` stream
/// (`None` on the `Calls` stream, where the body is `whole`, sent with the
/// head).
async fn respond(
    state: Arc<State>,
    head_in: RequestHead,
    mut inbound: Option<Streaming<ExecuteRequest>>,
    whole: Bytes,
) -> Result<Out, Status> {
    if head_in.prewarm {
        state.prewarms.lock().unwrap().push(head_in);
        return Ok(Box::pin(futures::stream::iter([
            Ok(head(204, Outcome::Ok, "", Vec::new())),
            Ok(ExecuteResponse::end(Outcome::Ok, "", 0)),
        ])));
    }
    {
        state.executes.fetch_add(1, Ordering::SeqCst);
        state.heads.lock().unwrap().push(head_in.clone());
        let bodyless = isolane_proto::call::Call::decode(head_in.clone())
            .map_err(|_| Status::invalid_argument("an invalid head"))?
            .bodyless();
        let mode = head_in
            .headers
            .iter()
            .find(|h| h.name == "x-fake")
            .map(|h| String::from_utf8_lossy(&h.value).into_owned())
            .unwrap_or_default();
        let echo_headers = vec![
            Header::new("content-type", "application/octet-stream"),
            Header::new("x-echo-method", head_in.method.clone()),
            Header::new("x-echo-url", head_in.url.clone()),
            Header::new("x-echo-worker", head_in.worker_id.clone()),
            Header::new("x-echo-revision", head_in.revision.clone()),
            Header::new("x-echo-thread", head_in.thread.to_string()),
            Header::new("x-echo-request-id", head_in.request_id.clone()),
            Header::new("x-echo-deadline-ms", head_in.deadline_ms.to_string()),
            Header::new("x-served-by", state.name.clone()),
            // Hop-by-hop: the router must not pass it on.
            Header::new("connection", "x-served-by-private"),
        ];
        let stream: Out = match mode.as_str() {
            "overloaded" => refusal(Outcome::Overloaded, "thread queue full"),
            "resource-exhausted" => return Err(Status::resource_exhausted("queue full")),
            "cpu-limit" => refusal(Outcome::CpuLimit, "used 51 ms of CPU, limit 50 ms"),
            "unknown-worker" => refusal(Outcome::UnknownWorker, "no bundle"),
            "draining" => refusal(Outcome::Draining, "shutting down"),
            m if m.strip_prefix("draining-on:") == Some(state.name.as_str()) => {
                refusal(Outcome::Draining, "shutting down")
            }
            "hang" => Box::pin(futures::stream::pending()),
            "fail-midway" => Box::pin(futures::stream::iter([
                Ok(head(200, Outcome::Ok, "", echo_headers)),
                Ok(ExecuteResponse::body(Bytes::from_static(b"partial"))),
                Ok(ExecuteResponse::end(Outcome::Exception, "boom", 0)),
            ])),
            "hold" => {
                let mut released = state.released.subscribe();
                let _ = released.wait_for(|r| *r).await;
                Box::pin(futures::stream::iter([
                    Ok(head(200, Outcome::Ok, "", echo_headers)),
                    Ok(ExecuteResponse::end(Outcome::Ok, "", 0)),
                ]))
            }
            generate if generate.starts_with("generate:") => {
                let total: usize = generate["generate:".len()..].parse().unwrap();
                let (mut tx, rx) = mpsc::channel(2);
                tokio::spawn(async move {
                    let _ = tx.send(Ok(head(200, Outcome::Ok, "", echo_headers))).await;
                    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                    let mut left = total;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if tx
                            .send(Ok(ExecuteResponse::body(chunk.slice(..n))))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        left -= n;
                    }
                    let _ = tx.send(Ok(ExecuteResponse::end(Outcome::Ok, "", 0))).await;
                });
                Box::pin(rx)
            }
            _ => {
                // Echo: answer at once and stream each chunk back as it arrives.
                let (mut tx, rx) = mpsc::channel(2);
                tokio::spawn(async move {
                    let _ = tx.send(Ok(head(200, Outcome::Ok, "", echo_headers))).await;
                    if !whole.is_empty() {
                        let _ = tx.send(Ok(ExecuteResponse::body(whole))).await;
                    }
                    loop {
                        let message = match inbound.as_mut() {
                            Some(inbound) => inbound.message().await,
                            // A call on the `Calls` stream: its body came whole.
                            None => Ok(None),
                        };
                        let frame = match message {
                            Ok(Some(m)) => m.frame,
                            // A bodyless request needs no end marker: its
                            // stream may close right after the head.
                            Ok(None) if bodyless || inbound.is_none() => {
                                let _ = tx.send(Ok(ExecuteResponse::end(Outcome::Ok, "", 0))).await;
                                return;
                            }
                            Ok(None) => {
                                let end = ExecuteResponse::end(Outcome::Canceled, "truncated", 0);
                                let _ = tx.send(Ok(end)).await;
                                return;
                            }
                            Err(status) => {
                                let _ = tx.send(Err(status)).await;
                                return;
                            }
                        };
                        let out = match frame {
                            Some(execute_request::Frame::Body(b)) => ExecuteResponse::body(b),
                            Some(execute_request::Frame::End(_)) => {
                                ExecuteResponse::end(Outcome::Ok, "", 0)
                            }
                            _ => ExecuteResponse::end(Outcome::Internal, "bad frame", 0),
                        };
                        let last = !matches!(
                            out.frame,
                            Some(isolane_proto::runtime::v1::execute_response::Frame::Body(_))
                        );
                        if tx.send(Ok(out)).await.is_err() || last {
                            return;
                        }
                    }
                });
                Box::pin(rx)
            }
        };
        Ok(stream)
    }
}
