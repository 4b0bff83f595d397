//! [`NodeService`]: the `isolane.runtime.v1.Runtime` gRPC service, and the
//! node's one way of running a call ([`NodeService::call`]).
//!
//! A call (`isolane_proto::call::Call`) is admitted on the thread the router
//! chose ([`Admission`]), finds its bundle ([`BundleIndex`], waiting briefly
//! for a revision not seen yet) and runs on that engine thread; its answer's
//! body ([`Answered`]) counts the call when it ends. `Execute` decodes the
//! call from its frames and encodes the answer as frames
//! (`service/stream.rs`): the request body streams from the gRPC stream into
//! the engine's [`Body`] as the worker reads it, and the response body back
//! chunk by chunk; neither is buffered whole. A router in the same process
//! (`isolane dev`) calls [`NodeService::call`] directly, with no frames.
//!
//! Failures before the worker runs are gRPC statuses (`error.rs`). A worker
//! that ran and threw or hit a limit, or a request the engine refused for
//! its client's or its Worker's doing (a body over the cap, a quarantine),
//! is an OK stream whose head carries the engine's typed outcome: the
//! status (413, 429, 500, 503, 504), the detail a client may see and the
//! `Retry-After` in ms, with no headers and an empty body
//! ([`NodeService::refusal`]). The router renders the error page from it.

mod answered;
mod assets;
mod d1_migrate;
mod socket_frames;
mod span;
mod stream;
mod tail;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::Method;
use isolane_engine::{Body, Engine, ExecuteError, ObjectCall, Prewarm, ScheduledEvent, Work};
use isolane_proto::Outcome;
use isolane_proto::call::{Answer, Call};
use isolane_proto::mtls::PeerRole;
use isolane_proto::runtime::v1::runtime_server::{Runtime, RuntimeServer};
use isolane_proto::runtime::v1::{
    CallsUp, D1MigrateRequest, D1MigrateResponse, ExecuteRequest, ExecuteResponse, Header,
    LoadedBundle, RequestHead, StatsRequest, StatsResponse, TailRequest, ThreadStats,
    execute_request,
};
use tokio::time::Instant;
use tonic::{Request, Response, Status, Streaming};

use crate::admission::Admission;
use crate::bundles::BundleIndex;
use crate::error::Error;
use crate::metrics::{NodeMetrics, Peer};

pub use answered::Answered;
pub use stream::MAX_CHUNK_BYTES;
use stream::{Frames, RequestBody};

/// The response stream of `Execute`.
pub type ExecuteStream = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

/// The request stream of `Execute`: tonic's from the network, or the
/// router's frames handed over in process (`isolane dev`).
pub type InboundFrames = Pin<Box<dyn Stream<Item = Result<ExecuteRequest, Status>> + Send>>;

/// Largest gRPC message the node accepts (a request body chunk).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The Runtime service of one node. Cheap to clone: every listener serves a
/// clone of the same service.
#[derive(Clone, Debug)]
pub struct NodeService {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    node: String,
    engine: Engine,
    bundles: Arc<BundleIndex>,
    admission: Arc<Admission>,
    metrics: Arc<NodeMetrics>,
    revision_wait: Duration,
}

// === impl NodeService ===

impl NodeService {
    pub fn new(
        node: String,
        engine: Engine,
        bundles: Arc<BundleIndex>,
        admission: Arc<Admission>,
        metrics: Arc<NodeMetrics>,
        revision_wait: Duration,
    ) -> Self {
        Self {
            inner: Arc::new(Shared {
                node,
                engine,
                bundles,
                admission,
                metrics,
                revision_wait,
            }),
        }
    }

    /// The tonic service to add to a server.
    pub fn into_server(self) -> RuntimeServer<Self> {
        RuntimeServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES)
    }

    /// One `Execute` call from the wire: its request frames in, its
    /// response frames out, or the refusal as a gRPC status.
    pub fn execute_frames(
        &self,
        inbound: InboundFrames,
    ) -> impl Future<Output = Result<ExecuteStream, Status>> + '_ {
        // Not an async layer of its own: the call's future is large, and
        // each layer would move it once more per request.
        self.execute_in(inbound, span::execute(), None)
    }

    /// [`Self::execute_frames`] in `span` (the call's `node.execute`);
    /// `object`: a peer node's call to one of this node's Durable Objects.
    async fn execute_in(
        &self,
        mut inbound: InboundFrames,
        span: tracing::Span,
        object: Option<ObjectCall>,
    ) -> Result<ExecuteStream, Status> {
        let head = match inbound.next().await {
            Some(Ok(ExecuteRequest {
                frame: Some(execute_request::Frame::Head(head)),
            })) => head,
            Some(Ok(_)) | None => return Err(self.refused(Error::MissingHead).into()),
            Some(Err(_)) => {
                let error = Error::Protocol {
                    detail: "the request stream failed before its head",
                };
                return Err(self.refused(error).into());
            }
        };
        let call = Call::decode(head).map_err(|invalid| {
            self.refused(Error::InvalidRequest {
                field: invalid.field,
            })
        })?;
        // A bodyless request's stream is held, unread, until the response
        // is done: dropping it early could reset the call.
        let whole = call.whole_answer;
        let (body, idle) = if call.bodyless() {
            (Body::empty(), Some(inbound))
        } else {
            (Body::wrap(RequestBody::new(inbound)), None)
        };
        let (mut answer, body) = self.call_in(call, body, span, object).await?;
        // A WebSocket stays on this call: its messages follow the head.
        let channels = answer.upgrade.take().and_then(|u| u.take());
        match (channels, idle) {
            (Some(channels), Some(inbound)) => Ok(socket_frames::socket_frames(
                answer.encode(),
                body,
                channels,
                inbound,
            )),
            // A socket for a request whose stream carries its body cannot
            // be reached: dropped (1006 to the Worker).
            (_, idle) => Ok(Frames::new(&answer, body, idle, whole).into_stream()),
        }
    }

    /// One call of a `Calls` stream: `head` and its whole `body` (empty, or
    /// at most `calls::WHOLE_REQUEST_LIMIT` bytes, as long as the head
    /// says), in `span`. A WebSocket handshake opens its own `Execute`, so
    /// no socket is kept here.
    async fn execute_whole(
        &self,
        head: RequestHead,
        body: Bytes,
        span: tracing::Span,
    ) -> Result<ExecuteStream, Status> {
        let call = Call::decode(head).map_err(|invalid| {
            self.refused(Error::InvalidRequest {
                field: invalid.field,
            })
        })?;
        let len = body.len();
        let announced = call.body_length.unwrap_or(len as u64);
        let empty = call.bodyless() && len == 0;
        if !empty && (len > isolane_proto::calls::WHOLE_REQUEST_LIMIT || announced != len as u64) {
            let error = Error::InvalidRequest {
                field: "body_length",
            };
            return Err(self.refused(error).into());
        }
        let whole = call.whole_answer;
        let body = match len {
            0 => Body::empty(),
            _ => Body::wrap(http_body_util::Full::new(body)),
        };
        let (answer, body) = self.call_in(call, body, span, None).await?;
        Ok(Frames::new(&answer, body, None, whole).into_stream())
    }

    /// Runs one call: admits it on its thread, finds its bundle, runs it on
    /// the engine and answers with the head and the body (counted in the
    /// node's metrics when it ends), or refuses it (counted now). The gRPC
    /// service and a router in this process (`isolane dev`) both come here.
    pub fn call(
        &self,
        call: Call,
        body: Body,
    ) -> impl Future<Output = Result<(Answer, Answered), Error>> + '_ {
        self.call_in(call, body, span::execute(), None)
    }

    /// [`Self::call`] in `span` (the call's `node.execute`).
    async fn call_in(
        &self,
        call: Call,
        body: Body,
        span: tracing::Span,
        object: Option<ObjectCall>,
    ) -> Result<(Answer, Answered), Error> {
        span::called(&span, &call);
        let result = self.run(call, body, &span, object).await;
        match result {
            Ok((answer, body)) => {
                span::answered(&span, answer.status, answer.outcome.label());
                Ok((answer, body))
            }
            Err(error) => {
                span::refused(&span, error.kind());
                Err(self.refused(error))
            }
        }
    }

    /// Counts and logs a refusal.
    fn refused(&self, error: Error) -> Error {
        let thread = match &error {
            Error::Overloaded { thread } => *thread,
            _ => usize::MAX,
        };
        self.inner.metrics.request(thread, error.kind());
        tracing::debug!(%error, kind = error.kind(), "execute refused");
        error
    }

    /// The call itself; its spans are children of `span` (`node.execute`),
    /// named as parent rather than entered, so that with traces off no
    /// wrapper moves the call's futures.
    async fn run(
        &self,
        call: Call,
        body: Body,
        span: &tracing::Span,
        object: Option<ObjectCall>,
    ) -> Result<(Answer, Answered), Error> {
        let shared = &self.inner;
        let permit = match &object {
            None => span::admission(span, call.thread)
                .in_scope(|| shared.admission.admit(call.thread, &call.worker_id))?,
            Some(object) => self.admit_object_call(&call, object)?,
        };
        let thread = permit.thread();
        // No deadline (a router in this process bounds the call itself):
        // no clock read, no timer.
        let deadline_in = (call.deadline_ms > 0).then(|| Duration::from_millis(call.deadline_ms));
        let deadline = deadline_in.map(|d| Instant::now() + d);
        // A client's request waits at most `revision_wait` for a revision
        // the node has not seen yet. A prewarm waits as long as its deadline
        // allows: the router sends it as soon as a revision is Ready, which
        // may be before this node has pulled its bundle by digest, and a
        // prewarm given up opens the router's gate to a cold start.
        let wait = match deadline_in {
            Some(d) if call.prewarm => d,
            Some(d) => shared.revision_wait.min(d),
            None => shared.revision_wait,
        };
        let resolve = shared
            .bundles
            .resolve(&call.worker_id, &call.revision, wait);
        let waiting = span::bundle(span);
        let bundle = resolve.await;
        drop(waiting);
        let bundle = bundle?;
        let head_only = call.request.method() == Method::HEAD;
        if object.is_none()
            && let Some(answered) = assets::answer(&call, &bundle)
        {
            shared.metrics.asset_answer();
            let (answer, body) = assets::head_and_body(answered);
            let body = Answered::new(
                body,
                Outcome::Ok,
                permit,
                shared.metrics.clone(),
                deadline,
                head_only,
            );
            return Ok((answer, body));
        }
        tracing::debug!(worker.id = %call.worker_id, revision = %bundle.revision, thread, request.id = %call.request_id, "execute");
        let deadline_ms = call.deadline_ms;
        let (mut request, kind, worker_id, request_id) = engine_request(call, body);
        let handler = span::handler(span);
        if let Some(trace) = span::request_trace(&handler) {
            request.extensions_mut().insert(trace);
        }
        // An object's call runs on the object's home thread (the engine's
        // `object_call.rs`).
        let work = kind.work(object, request);
        // The handler's span lasts while the engine runs (it is open until
        // dropped below); the engine's own spans name it as their parent.
        let execute = shared.engine.run(thread, bundle, work);
        let result = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, execute)
                .await
                .unwrap_or(Err(ExecuteError::WallTimeout {
                    limit_ms: deadline_ms,
                })),
            None => execute.await,
        };
        drop(handler);
        let (answer, body) = match result {
            Ok(response) => self.answered(response, thread),
            Err(error) => {
                let answer = self.refusal(&error)?;
                tracing::debug!(worker.id = %worker_id, thread, request.id = %request_id, outcome = answer.outcome.label(), "worker failed");
                (answer, Body::empty())
            }
        };
        let outcome = answer.outcome;
        let body = Answered::new(
            body,
            outcome,
            permit,
            shared.metrics.clone(),
            deadline,
            head_only,
        );
        Ok((answer, body))
    }

    /// The answer of a Worker that responded: its status, headers and
    /// body, and its WebSocket when it accepted one.
    fn answered(&self, response: http::Response<Body>, thread: usize) -> (Answer, Body) {
        let shared = &self.inner;
        let (parts, body) = response.into_parts();
        let answer = Answer {
            status: parts.status,
            headers: parts.headers,
            outcome: Outcome::Ok,
            reason: String::new(),
            retry_after_ms: None,
            body_length: http_body::Body::size_hint(&body).exact(),
            upgrade: parts
                .extensions
                .get::<isolane_engine::WebSocketUpgrade>()
                .and_then(isolane_engine::WebSocketUpgrade::take)
                .map(|end| {
                    crate::socket::bridge(
                        end,
                        shared.admission.sockets_closing(),
                        shared.admission.socket_opened(),
                        shared.metrics.socket_opened(thread, Peer::Client),
                    )
                }),
        };
        (answer, body)
    }

    /// Admits a peer node's call to object `object`: only when this node
    /// owns it by its own ring (and does not drain: a draining node is off
    /// the ring); whatever the load otherwise
    /// ([`Admission::admit_object_call`]).
    fn admit_object_call(
        &self,
        call: &Call,
        object: &ObjectCall,
    ) -> Result<crate::admission::Permit, Error> {
        let key = isolane_engine::object_key(&call.worker_id, &object.class, &object.id);
        let admission = &self.inner.admission;
        let peers = self.inner.engine.config().objects.as_ref();
        if admission.is_draining() || peers.is_some_and(|p| p.owner(&key).is_some()) {
            return Err(Error::NotObjectOwner {
                class: object.class.clone(),
                id: object.id.clone(),
            });
        }
        admission.admit_object_call(call.thread, &call.worker_id)
    }

    /// How an engine error is answered: a refusal of the node's (a gRPC
    /// status), or the engine's typed outcome as a response head — its
    /// status, the detail a client may see and how long to wait — with no
    /// headers and no body: the router renders the error page.
    fn refusal(&self, error: &ExecuteError) -> Result<Answer, Error> {
        match error {
            ExecuteError::Overloaded { thread } => {
                self.inner.metrics.rejection(*thread, "overloaded");
                return Err(Error::Overloaded { thread: *thread });
            }
            ExecuteError::UnknownThread { thread, threads } => {
                return Err(Error::InvalidThread {
                    thread: u32::try_from(*thread).unwrap_or(u32::MAX),
                    threads: *threads,
                });
            }
            ExecuteError::Canceled { .. } if self.inner.admission.is_draining() => {
                return Err(Error::Draining);
            }
            ExecuteError::Canceled { reason } => {
                tracing::warn!(%reason, "the engine canceled a request");
                return Err(Error::Engine { reason });
            }
            // The Worker ran and failed, or the engine refused it for the
            // client's or the Worker's own doing.
            ExecuteError::Script { .. }
            | ExecuteError::Exception { .. }
            | ExecuteError::CpuLimit { .. }
            | ExecuteError::MemoryLimit { .. }
            | ExecuteError::WallTimeout { .. }
            | ExecuteError::Quarantined { .. }
            | ExecuteError::BodyTooLarge { .. }
            | ExecuteError::ClientWebSockets { .. }
            | ExecuteError::QuotaExceeded { .. } => {}
        }
        Ok(Answer {
            status: error.status(),
            headers: http::HeaderMap::new(),
            outcome: error.outcome().into(),
            reason: error.detail(),
            retry_after_ms: error.retry_after().map(|secs| secs.saturating_mul(1000)),
            body_length: Some(0),
            upgrade: None,
        })
    }

    fn stats_now(&self) -> StatsResponse {
        let shared = &self.inner;
        let threads = (0..shared.admission.threads())
            .map(|thread| {
                let (live, heap) = shared.metrics.thread_isolates_now(thread);
                ThreadStats {
                    thread: u32::try_from(thread).unwrap_or(u32::MAX),
                    live_isolates: u32::try_from(live).unwrap_or(u32::MAX),
                    heap_bytes: heap,
                    in_flight: u32::try_from(shared.admission.in_flight(thread))
                        .unwrap_or(u32::MAX),
                    // The engine does not expose its queues; in-flight
                    // requests include those waiting in them.
                    queue_depth: 0,
                }
            })
            .collect();
        let bundles = shared
            .bundles
            .loaded()
            .into_iter()
            .map(|l| LoadedBundle {
                worker_id: l.worker_id,
                revision: l.revision,
            })
            .collect();
        StatsResponse {
            node: shared.node.clone(),
            draining: shared.admission.is_draining(),
            threads,
            bundles,
            warm_set_evictions: shared.metrics.warm_set_evictions(),
        }
    }
}

#[tonic::async_trait]
impl Runtime for NodeService {
    type ExecuteStream = ExecuteStream;

    async fn execute(
        &self,
        request: Request<Streaming<ExecuteRequest>>,
    ) -> Result<Response<ExecuteStream>, Status> {
        let span = span::execute_from(request.metadata());
        let object = crate::peers::object_of(request.metadata()).map_err(|detail| {
            tracing::debug!(%detail, "refused: a bad object entry");
            self.refused(Error::InvalidRequest { field: "object" })
        })?;
        let allowed = match (peer_role(&request), &object) {
            (Some(PeerRole::Node), None) => {
                Err("a node's certificate makes Durable Object calls only")
            }
            (Some(PeerRole::Router), Some(_)) => Err("only a node makes Durable Object calls"),
            _ => Ok(()),
        };
        allowed.map_err(|why| self.refused(Error::NotAllowed(why)))?;
        self.execute_in(Box::pin(request.into_inner()), span, object)
            .await
            .map(Response::new)
    }

    type CallsStream = isolane_proto::calls::CallsStream;

    async fn calls(
        &self,
        request: Request<Streaming<CallsUp>>,
    ) -> Result<Response<Self::CallsStream>, Status> {
        router_only(&request)?;
        // Ends at the drain's end, when no request is left in flight.
        let closing = self.inner.admission.sockets_closing().cancelled_owned();
        let service = self.clone();
        let run = move |head, trace: Vec<Header>, body| {
            let service = service.clone();
            async move {
                let span = span::execute();
                isolane_telemetry::propagation::set_parent_from(&span, |name| {
                    isolane_proto::calls::trace_field(&trace, name)
                });
                service.execute_whole(head, body, span).await
            }
        };
        let stream = isolane_proto::calls::serve(request.into_inner(), closing, run);
        Ok(Response::new(stream))
    }

    async fn stats(
        &self,
        request: Request<StatsRequest>,
    ) -> Result<Response<StatsResponse>, Status> {
        router_only(&request)?;
        Ok(Response::new(self.stats_now()))
    }

    type TailStream = tail::TailStream;

    async fn tail(
        &self,
        request: Request<TailRequest>,
    ) -> Result<Response<Self::TailStream>, Status> {
        router_only(&request)?;
        let worker_id = request.into_inner().worker_id;
        tail::open(&self.inner.engine, &self.inner.node, &worker_id).map(Response::new)
    }

    async fn d1_migrate(
        &self,
        request: Request<D1MigrateRequest>,
    ) -> Result<Response<D1MigrateResponse>, Status> {
        router_only(&request)?;
        let shared = &self.inner;
        let request = request.into_inner();
        d1_migrate::migrate(&shared.engine, &shared.admission, &shared.node, request)
            .await
            .map(Response::new)
    }
}

/// Who made `request`, by its client certificate (`None`: plaintext gRPC,
/// `--insecure-grpc`, or an in-process router).
fn peer_role<T>(request: &Request<T>) -> Option<PeerRole> {
    request
        .extensions()
        .get::<Option<PeerRole>>()
        .copied()
        .flatten()
}

/// Refuses a peer node's certificate: it makes object calls only.
fn router_only<T>(request: &Request<T>) -> Result<(), Status> {
    match peer_role(request) {
        Some(PeerRole::Node) => {
            Err(Error::NotAllowed("a node's certificate makes Durable Object calls only").into())
        }
        _ => Ok(()),
    }
}

/// The engine's request for a call (its body is `body`, unless the call has
/// none to read), the kind of work it asks for, and the call's worker and
/// request ids, for logs.
fn engine_request(call: Call, body: Body) -> (http::Request<Body>, Kind, String, String) {
    let body = if call.bodyless() { Body::empty() } else { body };
    let Call {
        request,
        worker_id,
        request_id,
        scheduled,
        prewarm,
        standby,
        ..
    } = call;
    let kind = match (prewarm, scheduled) {
        (true, _) if standby => Kind::Prewarm(Prewarm::Standby),
        (true, _) => Kind::Prewarm(Prewarm::Load),
        (false, Some(tick)) => Kind::Scheduled(ScheduledEvent {
            cron: tick.cron,
            scheduled_time_ms: tick.scheduled_time_ms,
        }),
        (false, None) => Kind::Fetch,
    };
    (request.map(|()| body), kind, worker_id, request_id)
}

/// What a call's head asks the engine for, its request aside.
enum Kind {
    Fetch,
    Scheduled(ScheduledEvent),
    Prewarm(Prewarm),
}

impl Kind {
    /// The engine's work: what the head asks for, or a Durable Object
    /// call when a peer node named one (its head asks for a plain request).
    fn work(self, object: Option<ObjectCall>, request: http::Request<Body>) -> Work {
        match (self, object) {
            (Kind::Prewarm(mode), _) => Work::Prewarm { mode, request },
            (Kind::Scheduled(event), _) => Work::Scheduled { event, request },
            (Kind::Fetch, Some(call)) => Work::ObjectCall { call, request },
            (Kind::Fetch, None) => Work::Fetch(request),
        }
    }
}
