//! The request path: route, place, call the node, stream the answer back.
//!
//! [`Proxy`] is the HTTP application as a plain async function of a request
//! ([`Proxy::handle`]), so tests drive it without a socket and the server in
//! [`crate::server`] only accepts connections. It reads two snapshots on every
//! request, both without a lock: the [`RouteTable`](crate::routes::RouteTable)
//! (from the Worker watch) and the [`Fleet`] (from the Lease watch), which
//! the watches write in `state.rs`. For each request (`trip.rs` from the
//! placement on) it:
//!
//! 0. drops the client's `x-isolane-*` headers, but for the hop count and a
//!    revision override (`answer.rs`, [`Proxy::handle_from`]);
//! 1. finds the Worker for the host and path (404 with a JSON body if none);
//! 2. reads the body up to the replay limit: a body that ends within it is
//!    kept so the request can be replayed, a longer one is streamed once;
//! 3. picks a node by bounded-load consistent hashing and the thread by jump
//!    hash, opens an `Execute` call on this thread's channel to that node's
//!    endpoint, and streams head, body and end marker;
//! 4. on a node failure before the response head (unreachable, or the node
//!    says the request never started: draining, revision not loaded) tries
//!    the next candidate if the body was kept (at most three calls in all),
//!    otherwise answers 502; when no live node is left (none at all, or
//!    every one refused) it waits up to `--node-wait` for the fleet to
//!    change, as while the only node pod is being replaced, then answers 503;
//! 5. maps the response head's outcome to the HTTP status and streams the
//!    body back, aborting the client's response if the node's body fails.
//!
//! The whole exchange runs under one deadline (`--request-timeout`), which
//! a node reached over gRPC also receives as `deadline_ms` (a node in this
//! process is bounded by the proxy alone).

mod body;
mod builder;
mod client;
mod outgoing;
mod prewarming;
mod request_id;
mod response;
mod socket;
mod span;
mod state;
mod test_tick;
mod trip;
mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::Either;
use http::header::{HOST, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use isolane_proto::Outcome;
use isolane_proto::call::{Answer, Call};
use isolane_proto::runtime::v1::ScheduledTick;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use tracing::{Instrument as _, debug, warn};

pub use body::{CallBody, FrameStream, ResponseFrames};
pub use builder::ProxyBuilder;
pub use client::Client;
pub use outgoing::{MAX_CHUNK, Outgoing};
pub use request_id::RequestId;
pub use response::{BodyError, UpstreamBody};
pub use test_tick::TEST_SCHEDULED_PATH;
pub use upstream::LocalNode;

use crate::Error;
use crate::answer::name;
use crate::channels::{self, ChannelConfig};
use crate::error::BoxError;
use crate::fleet::Fleet;
use crate::losses::{NodeLosses, Verdict};
use crate::metrics::{NO_NODE, RouterMetrics};
use crate::routes::{Backend, normalize_host};
use crate::split::{Revision, Split};
use body::Source;
use isolane_worker::Reservation;
use outgoing::{HeadContext, call_for};
use response::{Completion, strip_hop_by_hop};
use state::State;
use trip::Trip;

pub use crate::answer::{
    DETAIL_HEADER, HOPS_HEADER, MAX_HOPS, NODE_HEADER, REASON_HEADER, REQUEST_ID_HEADER,
    REVISION_HEADER, ResponseBody, full_body,
};

/// Default largest request body kept for a retry.
pub const DEFAULT_REPLAY_LIMIT: usize = 64 * 1024;

/// Default of [`ProxyConfig::node_wait`].
pub const DEFAULT_NODE_WAIT: Duration = Duration::from_secs(10);

/// Calls one request may make to nodes: the first, one retry on the next
/// candidate, and one more after the fleet changed while it waited.
const MAX_ATTEMPTS: u32 = 3;

/// How the proxy treats requests.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Deadline for the whole exchange with the node.
    pub request_timeout: Duration,
    /// Bounded-load factor `c`: a node takes a worker's request while under
    /// `c` × its fair share of in-flight requests.
    pub load_factor: f64,
    /// Largest request body kept in memory so the request can be retried.
    pub replay_limit: usize,
    /// How channels to nodes connect.
    pub channel: ChannelConfig,
    /// How long a request that finds no live node waits for one to join
    /// (a node pod being replaced, a fleet restarting), within its deadline;
    /// zero answers 503 at once.
    pub node_wait: Duration,
    /// Whether `GET /__scheduled` runs the routed Worker's `scheduled`
    /// handler ([`TEST_SCHEDULED_PATH`]; `isolane dev` only: in a cluster a
    /// client must not fire ticks).
    pub test_scheduled: bool,
    /// How clients' WebSockets are held at this edge.
    pub websocket: crate::sockets::SocketLimits,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            load_factor: isolane_placement::DEFAULT_LOAD_FACTOR,
            replay_limit: DEFAULT_REPLAY_LIMIT,
            channel: ChannelConfig::default(),
            node_wait: DEFAULT_NODE_WAIT,
            test_scheduled: false,
            websocket: crate::sockets::SocketLimits::default(),
        }
    }
}

/// The HTTP application: cheap to clone, one per process shared by every
/// router worker thread.
#[derive(Clone, Debug)]
pub struct Proxy {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ProxyConfig,
    /// What the watches write (`state.rs`).
    state: State,
    metrics: Arc<RouterMetrics>,
    /// Workers whose requests were lost with nodes (`losses.rs`).
    losses: NodeLosses,
    /// Hosts reserved for namespaces (`--reserved-host`).
    reservations: Vec<Reservation>,
    /// Peers whose forwarding headers are kept (`--trusted-proxies`).
    trusted_proxies: Vec<ipnet::IpNet>,
    /// The node in this process, when the proxy has one (`isolane dev`)
    /// instead of a fleet reached over gRPC.
    local: Option<Arc<dyn LocalNode>>,
    /// The clients' open WebSockets (closed with 1012 on shutdown).
    sockets: crate::sockets::Sockets,
}

impl Proxy {
    /// The clients' open WebSockets.
    pub fn sockets(&self) -> &crate::sockets::Sockets {
        &self.inner.sockets
    }

    /// The proxy's settings.
    pub fn config(&self) -> &ProxyConfig {
        &self.inner.config
    }

    /// The metrics the proxy records.
    pub fn metrics(&self) -> &Arc<RouterMetrics> {
        &self.inner.metrics
    }

    /// Whether `peer` is a trusted proxy whose forwarding headers are kept.
    pub fn trusts(&self, peer: std::net::IpAddr) -> bool {
        self.inner
            .trusted_proxies
            .iter()
            .any(|net| net.contains(&peer))
    }

    /// The client at `peer`, as its requests describe it to the Worker:
    /// worked out once, when its connection is accepted.
    pub fn client(&self, peer: SocketAddr) -> Client {
        Client::new(peer.ip(), self.trusts(peer.ip()))
    }

    /// Sends a request the router makes itself (a prewarm, a cron tick) to
    /// `revision` of `worker_id`, through the same placement, node channels
    /// and failover as a client's request (a node that refuses it before
    /// running it, or is lost, means one more try on the next node).
    /// `record`: whether it counts in the request metrics.
    pub async fn send_internal(
        &self,
        worker_id: &str,
        revision: &str,
        host: &str,
        request: Request<http_body_util::Empty<Bytes>>,
        record: bool,
    ) -> Result<Response<ResponseBody>, Error> {
        let backend = Arc::new(Backend {
            worker_id: worker_id.to_owned(),
            split: Split::single(revision),
            slot: self.inner.metrics.workers.slot(worker_id),
        });
        let trip = Trip {
            proxy: self,
            backend,
            revision: Revision::from(revision),
            request_id: RequestId::new(),
            client: None,
            host: host.to_owned(),
            started: Instant::now(),
            deadline: tokio::time::Instant::now() + self.inner.config.request_timeout,
            record,
            trace: None,
            unread_body: AtomicBool::new(false),
        };
        let failed = trip.run(request).await;
        failed.map_err(|(node, error)| {
            // Counted as a client's request is (its page is never made).
            if record {
                let backend = Some((&trip.backend, trip.revision.as_ref()));
                self.count_error(backend, &node, &error, trip.started, None);
            }
            error
        })
    }

    /// Serves one request from a client whose address is not known, and
    /// so is not trusted: its request id and what it says about where it
    /// came from are not kept.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        self.handle_from(request, None).await
    }

    /// Serves one request from `client` ([`Proxy::client`]), in its
    /// `router.request` span when traces are on. Every client's request
    /// comes this way (the server's, a WebSocket's, [`Proxy::handle`]'s),
    /// and none of the router's own.
    ///
    /// An `async fn` awaiting `serve` in place: returning `serve`'s future
    /// through an `Either` (so as to add no layer) measured ~1,600 more
    /// instructions per `isolane dev` request, in memcpy of the larger
    /// future (`bench/instructions.sh`).
    pub async fn handle_from<B>(
        &self,
        mut request: Request<B>,
        client: Option<&Client>,
    ) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        // First, before anything reads the request: the platform's own
        // headers (`x-isolane-*`) are shed from what a client sent, but for
        // the two that are a client's to send (the hop count, a revision
        // override). A Worker, or the platform, could take any other as set
        // by the platform. Here, not in `call_for`: the router's own requests
        // (prewarms, cron ticks) do not come this way and keep theirs.
        crate::answer::strip_platform_headers(request.headers_mut());
        let host = request_host(&request).to_owned();
        let span = span::request(&request, &host);
        if span.is_disabled() {
            return self.serve(request, host, client, &span).await;
        }
        let response = self
            .serve(request, host, client, &span)
            .instrument(span.clone())
            .await;
        span::answered(&span, response.status());
        response
    }

    async fn serve<B>(
        &self,
        mut request: Request<B>,
        host: String,
        client: Option<&Client>,
        span: &tracing::Span,
    ) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let started = Instant::now();
        let trace = isolane_telemetry::sampled_trace(span);
        // A request id is a trusted proxy's to give (it ties the Worker's
        // logs to the proxy's); anyone else's could be forged to collide
        // with another request's, and a new one is made.
        let request_id = match client {
            Some(client) if client.trusted() => {
                RequestId::from_client(request.headers().get(name::REQUEST_ID))
            }
            _ => RequestId::new(),
        };
        let hops = request
            .headers()
            .get(name::HOPS)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u32>().ok())
            .unwrap_or(0);
        if hops > MAX_HOPS {
            debug!(request.id = %request_id, hops, "request looped through the router");
            return self.answer_error(
                None,
                NO_NODE,
                Error::Loop { hops },
                &request_id,
                started,
                trace,
            );
        }
        let routes = self.inner.state.routes.load();
        let Some(backend) = routes.lookup(&host, request.uri().path()).cloned() else {
            let error = Error::NoRoute {
                host: normalize_host(&host),
                path: request.uri().path().to_owned(),
            };
            debug!(request.id = %request_id, %host, "no route");
            return self.answer_error(None, NO_NODE, error, &request_id, started, trace);
        };
        drop(routes);
        let revision = match backend.split.choose(&backend.worker_id, request.headers()) {
            Ok(revision) => Revision::clone(revision),
            Err(unknown) => {
                let error = Error::UnknownRevision {
                    worker_id: backend.worker_id.clone(),
                    revision: unknown.0,
                };
                return self.answer_error(None, NO_NODE, error, &request_id, started, trace);
            }
        };
        span::routed(span, &backend.worker_id, &revision, &request_id);
        let test_tick =
            self.inner.config.test_scheduled && request.uri().path() == TEST_SCHEDULED_PATH;
        if test_tick {
            let tick = test_tick::tick(request.uri().query());
            request.extensions_mut().insert(tick);
        }
        let trip = Trip {
            proxy: self,
            backend,
            revision,
            record: true,
            request_id,
            client,
            host,
            started,
            deadline: tokio::time::Instant::from_std(started) + self.inner.config.request_timeout,
            trace,
            unread_body: AtomicBool::new(false),
        };
        match trip.run(request).await {
            Ok(response) if test_tick => test_tick::answer(response).await,
            Ok(response) => response,
            Err((node, error)) => {
                let Trip {
                    backend,
                    revision,
                    request_id,
                    unread_body,
                    ..
                } = trip;
                debug!(
                    request.id = %request_id, worker.id = %backend.worker_id,
                    %revision, %node, %error, "request failed"
                );
                let mut page = self.answer_error(
                    Some((&backend, &revision)),
                    &node,
                    error,
                    &request_id,
                    started,
                    trace,
                );
                // The client may still be sending a body nobody reads: the
                // connection ends with the page (RFC 9112, 9.6), whether the
                // body went to a node over gRPC or in this process.
                if unread_body.load(Ordering::Relaxed) {
                    page.headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }
                page
            }
        }
    }

    fn answer_error(
        &self,
        backend: Option<(&Arc<Backend>, &str)>,
        node: &str,
        error: Error,
        request_id: &RequestId,
        started: Instant,
        trace: Option<isolane_telemetry::TraceId>,
    ) -> Response<ResponseBody> {
        self.count_error(backend, node, &error, started, trace);
        let mut response = Response::from(error);
        let headers = response.headers_mut();
        if let Some(id) = request_id.header() {
            headers.insert(name::REQUEST_ID, id.clone());
        }
        if let Some((_, revision)) = backend {
            if let Ok(revision) = HeaderValue::from_str(revision) {
                headers.insert(name::REVISION, revision);
            }
            if node != NO_NODE
                && let Ok(node) = HeaderValue::from_str(node)
            {
                headers.insert(name::NODE, node);
            }
        }
        response
    }

    /// Counts a request that failed with `error`, as its page's status.
    fn count_error(
        &self,
        backend: Option<(&Arc<Backend>, &str)>,
        node: &str,
        error: &Error,
        started: Instant,
        trace: Option<isolane_telemetry::TraceId>,
    ) {
        let metrics = &self.inner.metrics;
        if !matches!(error, Error::NoRoute { .. }) {
            metrics.upstream_error(error.kind());
        }
        let served = backend.map(|(b, revision)| b.served(revision));
        metrics.observe(served, node, error.status(), started.elapsed(), trace);
    }
}

/// The host a request names: its URI's authority, else its `Host` header.
fn request_host<B>(request: &Request<B>) -> &str {
    request
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| request.headers().get(HOST).and_then(|h| h.to_str().ok()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server spawns `handle`'s future on a multi-connection executor.
    #[test]
    fn the_request_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let registry = prometheus::Registry::new();
        let metrics = Arc::new(RouterMetrics::register(&registry, 1).unwrap());
        let proxy = Proxy::builder(ProxyConfig::default(), metrics).build();
        let request = Request::new(http_body_util::Full::new(Bytes::new()));
        assert_send(&proxy.handle(request));
    }
}
