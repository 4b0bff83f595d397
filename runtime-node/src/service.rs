//! [`NodeService`]: the `isolane.runtime.v1.Runtime` gRPC service.
//!
//! `Execute` reads the request head, admits the request on the thread the
//! router chose ([`Admission`]), finds the bundle ([`BundleIndex`], waiting
//! briefly for a revision not seen yet), and runs it on that engine thread.
//! The request body streams from the gRPC stream into the engine's [`Body`]
//! as the worker reads it, and the response body streams back chunk by chunk
//! (`service/stream.rs`); neither is buffered whole.
//!
//! Failures before the worker runs are gRPC statuses (`error.rs`). A worker
//! that ran and threw or hit a limit is an OK stream whose head carries the
//! outcome, the status (500, 503, 504) and a reason, followed by the
//! engine's small JSON error page.

mod stream;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use http::{HeaderName, HeaderValue, Method, Uri};
use isolane_engine::{Body, Engine, ExecuteError};
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::runtime_server::{Runtime, RuntimeServer};
use isolane_proto::runtime::v1::{
    ExecuteRequest, ExecuteResponse, LoadedBundle, RequestHead, StatsRequest, StatsResponse,
    ThreadStats, execute_request,
};
use tokio::time::Instant;
use tonic::{Request, Response, Status, Streaming};

use crate::admission::Admission;
use crate::bundles::BundleIndex;
use crate::error::Error;
use crate::metrics::NodeMetrics;

pub use stream::MAX_CHUNK_BYTES;
use stream::{RequestBody, Responder};

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

    /// One `Execute` call: its request frames in, its response frames out,
    /// or the refusal as a gRPC status (counted in the node's metrics). The
    /// gRPC service and an in-process caller (`isolane dev`) both come here.
    pub async fn execute_frames(&self, inbound: InboundFrames) -> Result<ExecuteStream, Status> {
        match self.execute(inbound).await {
            Ok(stream) => Ok(stream),
            Err(error) => {
                let thread = match &error {
                    Error::Overloaded { thread } => *thread,
                    _ => usize::MAX,
                };
                self.inner.metrics.request(thread, error.kind());
                tracing::debug!(%error, kind = error.kind(), "execute refused");
                Err(error.into())
            }
        }
    }

    async fn execute(&self, mut inbound: InboundFrames) -> Result<ExecuteStream, Error> {
        let shared = &self.inner;
        let head = match inbound.next().await {
            Some(Ok(ExecuteRequest {
                frame: Some(execute_request::Frame::Head(head)),
            })) => head,
            Some(Ok(_)) | None => return Err(Error::MissingHead),
            Some(Err(_)) => {
                return Err(Error::Protocol {
                    detail: "the request stream failed before its head",
                });
            }
        };
        let permit = shared.admission.admit(head.thread)?;
        let thread = permit.thread();
        let received = Instant::now();
        let deadline =
            (head.deadline_ms > 0).then(|| received + Duration::from_millis(head.deadline_ms));
        let wait = deadline.map_or(shared.revision_wait, |d| {
            shared
                .revision_wait
                .min(d.saturating_duration_since(received))
        });
        let bundle = shared
            .bundles
            .resolve(&head.worker_id, &head.revision, wait)
            .await?;
        tracing::debug!(worker.id = %head.worker_id, revision = %bundle.revision, thread, request.id = %head.request_id, "execute");
        let (request, idle_inbound) = http_request(&head, inbound)?;
        let execute = shared.engine.execute(thread, bundle, request);
        let result = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, execute)
                .await
                .unwrap_or(Err(ExecuteError::WallTimeout {
                    limit_ms: head.deadline_ms,
                })),
            None => execute.await,
        };
        let mut responder = Responder::new(permit, shared.metrics.clone(), deadline, idle_inbound);
        match result {
            Ok(response) => responder.start(response, Outcome::Ok, String::new()),
            Err(error) => {
                let (outcome, reason) = self.engine_failure(&error)?;
                tracing::debug!(worker.id = %head.worker_id, thread, request.id = %head.request_id, outcome = outcome.label(), "worker failed");
                responder.start(error.to_response(), outcome, reason);
            }
        }
        Ok(responder.into_stream())
    }

    /// How an engine error is answered: a refusal (gRPC status), or the
    /// outcome and reason of a response head for a worker that ran and
    /// failed (its error page follows).
    fn engine_failure(&self, error: &ExecuteError) -> Result<(Outcome, String), Error> {
        match error {
            ExecuteError::Overloaded { thread } => {
                self.inner.metrics.rejection(*thread, "overloaded");
                Err(Error::Overloaded { thread: *thread })
            }
            ExecuteError::UnknownThread { thread, threads } => Err(Error::InvalidThread {
                thread: u32::try_from(*thread).unwrap_or(u32::MAX),
                threads: *threads,
            }),
            ExecuteError::Canceled { .. } if self.inner.admission.is_draining() => {
                Err(Error::Draining)
            }
            ExecuteError::Canceled { reason } => {
                tracing::warn!(%reason, "the engine canceled a request");
                Err(Error::Engine { reason })
            }
            // Details of a script error or exception go to the logs (the
            // engine logged them), never to the client.
            ExecuteError::Script { .. } => Ok((
                error.outcome().into(),
                "the worker script failed".to_owned(),
            )),
            ExecuteError::Exception { .. } => Ok((
                error.outcome().into(),
                "the worker threw an exception".to_owned(),
            )),
            // The engine's outcome, as the Worker vocabulary maps it.
            ExecuteError::CpuLimit { .. }
            | ExecuteError::MemoryLimit { .. }
            | ExecuteError::WallTimeout { .. }
            | ExecuteError::Quarantined { .. } => Ok((error.outcome().into(), error.to_string())),
        }
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
        self.execute_frames(Box::pin(request.into_inner()))
            .await
            .map(Response::new)
    }

    async fn stats(&self, _: Request<StatsRequest>) -> Result<Response<StatsResponse>, Status> {
        Ok(Response::new(self.stats_now()))
    }
}

/// The engine's request for a head. Bodies of GET and HEAD requests, and of
/// requests that say they have none, are empty without waiting for the
/// stream's end; the stream is returned then, to be held until the response
/// is done (dropping it early could reset the call).
fn http_request(
    head: &RequestHead,
    inbound: InboundFrames,
) -> Result<(http::Request<Body>, Option<InboundFrames>), Error> {
    let method = Method::from_bytes(head.method.as_bytes())
        .map_err(|_| Error::InvalidRequest { field: "method" })?;
    let uri: Uri = head
        .url
        .parse()
        .map_err(|_| Error::InvalidRequest { field: "url" })?;
    if uri.scheme().is_none() || uri.authority().is_none() {
        return Err(Error::InvalidRequest { field: "url" });
    }
    let bodyless = method == Method::GET || method == Method::HEAD || head.body_length == Some(0);
    let mut request = http::Request::new(Body::empty());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.reserve(head.headers.len() + 1);
    for header in &head.headers {
        let name =
            HeaderName::from_bytes(header.name.as_bytes()).map_err(|_| Error::InvalidRequest {
                field: "header name",
            })?;
        let value = HeaderValue::from_maybe_shared(header.value.clone()).map_err(|_| {
            Error::InvalidRequest {
                field: "header value",
            }
        })?;
        headers.append(name, value);
    }
    if !head.request_id.is_empty()
        && !headers.contains_key("x-request-id")
        && let Ok(value) = HeaderValue::from_str(&head.request_id)
    {
        headers.insert("x-request-id", value);
    }
    if let Some(tick) = &head.scheduled {
        request
            .extensions_mut()
            .insert(isolane_engine::ScheduledEvent {
                cron: tick.cron.clone(),
                scheduled_time_ms: tick.scheduled_time_ms,
            });
    }
    if head.prewarm {
        request.extensions_mut().insert(isolane_engine::Prewarm);
    }
    if bodyless {
        Ok((request, Some(inbound)))
    } else {
        *request.body_mut() = Body::wrap(RequestBody::new(inbound));
        Ok((request, None))
    }
}
