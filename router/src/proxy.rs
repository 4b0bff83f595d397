//! The request path: route, place, call the node, stream the answer back.
//!
//! [`Proxy`] is the HTTP application as a plain async function of a request
//! ([`Proxy::handle`]), so tests drive it without a socket and the server in
//! [`crate::server`] only accepts connections. It reads two snapshots on every
//! request, both without a lock: the [`RouteTable`] (from the Worker watch) and
//! the [`Fleet`] (from the Lease watch). For each request it:
//!
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

mod client;
mod outgoing;
mod request_id;
mod response;
mod socket;
mod span;
mod test_tick;
mod trip;
mod upstream;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use futures::future::Either;
use http::header::{HOST, HeaderValue, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use isolane_membership::NodeMember;
use isolane_proto::Outcome;
use isolane_proto::call::{Answer, Call};
use isolane_proto::runtime::v1::ScheduledTick;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use tracing::{Instrument as _, debug, info, warn};

pub use client::Client;
pub use outgoing::{FrameStream, MAX_CHUNK, Outgoing};
pub use request_id::RequestId;
pub use response::{BodyError, UpstreamBody};
pub use test_tick::TEST_SCHEDULED_PATH;
pub use upstream::{CallBody, LocalNode, ResponseFrames};

use crate::Error;
use crate::answer::name;
use crate::channels::{self, ChannelConfig};
use crate::error::BoxError;
use crate::fleet::{Fleet, FleetBuilder, placement_moves};
use crate::losses::{NodeLosses, Verdict};
use crate::metrics::{NO_NODE, RouterMetrics};
use crate::prewarm::{Gate, PrewarmRequest, Target};
use crate::routes::{Backend, RoutableWorker, RouteTable, normalize_host};
use crate::split::{Revision, Split};
use isolane_worker::{Claim, HostOwner, Reservation};
use outgoing::{HeadContext, call_for};
use response::{Completion, strip_hop_by_hop};
use trip::Trip;
use upstream::Source;

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
    routes: ArcSwap<RouteTable>,
    fleet: ArcSwap<Fleet>,
    builder: Mutex<FleetBuilder>,
    /// Bumped after every fleet change, for requests waiting for a node.
    fleet_changes: tokio::sync::watch::Sender<u64>,
    metrics: Arc<RouterMetrics>,
    /// Workers whose requests were lost with nodes (`losses.rs`).
    losses: NodeLosses,
    /// Hosts reserved for namespaces (`--reserved-host`).
    reservations: Vec<Reservation>,
    /// Hosts recorded as namespaces' by the operator (`watch::host_owners`).
    /// Written under the gate's lock.
    owners: ArcSwap<Vec<HostOwner>>,
    /// Peers whose forwarding headers are kept (`--trusted-proxies`).
    trusted_proxies: Vec<ipnet::IpNet>,
    /// The Workers of the route table now (the cron scheduler reads their
    /// schedules).
    published: ArcSwap<Vec<RoutableWorker>>,
    /// The claims of Workers requests cannot go to yet: they hold routes
    /// all the same (`routes.rs`). Written under the gate's lock.
    claimants: ArcSwap<Vec<Claim>>,
    /// New splits wait for their revisions' prewarms (`prewarm.rs`).
    gate: Mutex<Gate>,
    /// The node in this process, when the proxy has one (`isolane dev`)
    /// instead of a fleet reached over gRPC.
    local: Option<Arc<dyn LocalNode>>,
    /// The clients' open WebSockets (closed with 1012 on shutdown).
    sockets: crate::sockets::Sockets,
}

impl Proxy {
    /// A proxy with no routes and no nodes yet.
    pub fn new(config: ProxyConfig, metrics: Arc<RouterMetrics>) -> Self {
        Self::with_reservations(config, metrics, Vec::new())
    }

    /// A proxy that serves hosts reserved for a namespace only to it.
    pub fn with_reservations(
        config: ProxyConfig,
        metrics: Arc<RouterMetrics>,
        reservations: Vec<Reservation>,
    ) -> Self {
        Self::with_policy(config, metrics, reservations, Vec::new())
    }

    /// A proxy with reserved hosts and trusted proxies.
    pub fn with_policy(
        config: ProxyConfig,
        metrics: Arc<RouterMetrics>,
        reservations: Vec<Reservation>,
        trusted_proxies: Vec<ipnet::IpNet>,
    ) -> Self {
        Self::build(config, metrics, reservations, trusted_proxies, None)
    }

    /// A proxy whose only node is `node`, in this process, with `threads`
    /// engine threads (`isolane dev`): requests are matched, split, placed
    /// on a thread, retried, mapped to a status and counted exactly as in
    /// the cluster, and handed to the node without a connection.
    pub fn in_process(
        config: ProxyConfig,
        metrics: Arc<RouterMetrics>,
        node: Arc<dyn LocalNode>,
        name: &str,
        threads: u32,
    ) -> Self {
        let proxy = Self::build(config, metrics, Vec::new(), Vec::new(), Some(node));
        proxy.set_members(vec![NodeMember {
            name: name.to_owned(),
            endpoints: Vec::new(),
            threads,
            draining: false,
            expires_at: None,
            crash: None,
        }]);
        proxy
    }

    fn build(
        config: ProxyConfig,
        metrics: Arc<RouterMetrics>,
        reservations: Vec<Reservation>,
        trusted_proxies: Vec<ipnet::IpNet>,
        local: Option<Arc<dyn LocalNode>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                routes: ArcSwap::from_pointee(RouteTable::default()),
                fleet: ArcSwap::from_pointee(Fleet::empty()),
                builder: Mutex::new(FleetBuilder::default()),
                fleet_changes: tokio::sync::watch::Sender::new(0),
                metrics,
                losses: NodeLosses::default(),
                reservations,
                owners: ArcSwap::from_pointee(Vec::new()),
                trusted_proxies,
                published: ArcSwap::from_pointee(Vec::new()),
                claimants: ArcSwap::from_pointee(Vec::new()),
                gate: Mutex::new(Gate::default()),
                local,
                sockets: crate::sockets::Sockets::default(),
            }),
        }
    }

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

    /// The current route table.
    pub fn routes(&self) -> Arc<RouteTable> {
        self.inner.routes.load_full()
    }

    /// The current fleet.
    pub fn fleet(&self) -> Arc<Fleet> {
        self.inner.fleet.load_full()
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

    /// The Workers of the route table now, as published (new splits only
    /// once prewarmed).
    pub fn published(&self) -> Arc<Vec<RoutableWorker>> {
        self.inner.published.load_full()
    }

    /// Replaces the route table (and the cron table) with one built from
    /// `workers`; a Worker whose split sends traffic to a revision not warm
    /// yet keeps its current shares until that revision is prewarmed
    /// (`prewarm.rs`).
    pub fn set_workers(&self, workers: Vec<RoutableWorker>) {
        self.set_claims(workers, Vec::new());
    }

    /// [`Proxy::set_workers`], with the claims of the Workers requests
    /// cannot go to yet (not Ready, or no revision): routes they hold are
    /// served to nobody.
    pub fn set_claims(&self, workers: Vec<RoutableWorker>, claimants: Vec<Claim>) {
        let gate = !self.fleet().is_empty() && tokio::runtime::Handle::try_current().is_ok();
        let mut state = self.inner.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.claimants.store(Arc::new(claimants));
        let (publish, start) = state.admit(workers, &self.routes(), gate);
        // Published under the gate's lock, so a prewarm ending meanwhile
        // cannot publish an older list after this one.
        self.publish(publish);
        drop(state);
        self.start_prewarms(start);
    }

    /// Replaces the host owners the operator recorded, and the route table
    /// with one that honours them.
    pub fn set_owners(&self, owners: Vec<HostOwner>) {
        let state = self.inner.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.owners.store(Arc::new(owners));
        self.publish(self.published().as_ref().clone());
        drop(state);
    }

    /// Spawns one task per prewarm, each publishing the table again when done.
    fn start_prewarms(&self, targets: Vec<Target>) {
        for target in targets {
            let proxy = self.clone();
            tokio::spawn(async move {
                let more = proxy.prewarm_then_publish(target).await;
                proxy.start_prewarms(more);
            });
        }
    }

    /// One prewarm, then the table again; returns the prewarms that asks for.
    async fn prewarm_then_publish(&self, target: Target) -> Vec<Target> {
        let (worker_id, revision) = &target;
        let started = Instant::now();
        let outcome = match self.prewarm(worker_id, revision).await {
            Ok(()) => {
                info!(worker.id = %worker_id, %revision, took_ms = started.elapsed().as_millis(), "revision prewarmed; it takes traffic now");
                "ok"
            }
            Err(error) => {
                warn!(worker.id = %worker_id, %revision, %error, "prewarm failed; the revision takes traffic anyway");
                "failed"
            }
        };
        self.inner.metrics.prewarm(outcome);
        let mut state = self.inner.gate.lock().unwrap_or_else(|e| e.into_inner());
        let latest = state.done(target);
        let gate = !self.fleet().is_empty();
        let (publish, start) = state.admit(latest, &self.routes(), gate);
        self.publish(publish);
        start
    }

    /// Compiles `revision` of `worker_id` on the node and thread its
    /// requests go to now, through the same placement, channels and
    /// failover as a request.
    pub async fn prewarm(&self, worker_id: &str, revision: &str) -> Result<(), Error> {
        let request = Request::builder()
            .method(http::Method::GET)
            .uri("https://prewarm.invalid/")
            .extension(PrewarmRequest)
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|_| Error::Protocol {
                node: NO_NODE.to_owned(),
                detail: "the prewarm request could not be built",
            })?;
        let response = self
            .send_internal(worker_id, revision, "prewarm.invalid", request, false)
            .await?;
        let status = response.status();
        let _ = response.into_body().collect().await;
        if status == StatusCode::NO_CONTENT {
            Ok(())
        } else {
            Err(Error::Protocol {
                node: NO_NODE.to_owned(),
                detail: "the node did not prewarm the revision",
            })
        }
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
        };
        trip.run(request).await.map_err(|(_, error)| error)
    }

    fn publish(&self, workers: Vec<RoutableWorker>) {
        self.inner.published.store(Arc::new(workers.clone()));
        let metrics = &self.inner.metrics;
        let claimants = self.inner.claimants.load();
        let owners = self.inner.owners.load();
        let (table, conflicts) = RouteTable::build_with(
            workers,
            &claimants,
            &self.inner.reservations,
            &owners,
            |id| metrics.workers.slot(id),
        );
        for c in &conflicts {
            debug!(
                worker.id = %c.worker, route = %c.route, holder = %c.holder,
                "route not admitted; not served for this worker"
            );
        }
        metrics.route_conflicts.set(conflicts.len() as i64);
        metrics.routable_workers.set(table.len() as i64);
        let routable = table
            .backends()
            .iter()
            .map(|b| b.worker_id.as_str())
            .collect();
        metrics.workers.retain(&routable);
        metrics.workers.retain_revisions(|worker, revision| {
            table
                .backend(worker)
                .is_some_and(|backend| backend.split.keeps(revision))
        });
        self.inner.routes.store(Arc::new(table));
    }

    /// Replaces the fleet with `members` (live, non-draining); returns whether
    /// the nodes changed.
    pub fn set_members(&self, members: Vec<NodeMember>) -> bool {
        // A restarted node's crash record judges the losses on it.
        for member in &members {
            if let Some(crash) = &member.crash {
                let lifted =
                    self.inner
                        .losses
                        .crash(&member.name, crash, std::time::Instant::now());
                if !lifted.is_empty() {
                    self.inner
                        .metrics
                        .quarantines_lifted
                        .inc_by(lifted.len() as u64);
                    info!(
                        node = %member.name, workers = ?lifted,
                        "a crash record shows these workers were not in a turn; quarantine lifted"
                    );
                }
            }
        }
        let mut builder = self.inner.builder.lock().unwrap_or_else(|e| e.into_inner());
        let Some(fleet) = builder.update(members) else {
            return false;
        };
        let before = self.inner.fleet.load_full();
        let routes = self.inner.routes.load();
        let moved = placement_moves(
            &before,
            &fleet,
            routes.backends().iter().map(|b| b.worker_id.as_str()),
        );
        let metrics = &self.inner.metrics;
        metrics.placement_moves.inc_by(moved);
        metrics.live_nodes.set(fleet.len() as i64);
        info!(
            nodes = ?fleet.nodes().iter().map(|n| n.member.name.as_str()).collect::<Vec<_>>(),
            moved_workers = moved,
            "fleet changed"
        );
        self.inner.fleet.store(Arc::new(fleet));
        self.inner
            .fleet_changes
            .send_modify(|n| *n = n.wrapping_add(1));
        true
    }

    /// Waits until the fleet is no longer `seen`, or until `until`; returns
    /// whether it changed. Only a request that found no node subscribes to
    /// changes, so the others touch nothing shared for it.
    async fn fleet_changed(&self, seen: &Fleet, until: tokio::time::Instant) -> bool {
        if until <= tokio::time::Instant::now() {
            return false;
        }
        // Subscribe before comparing, so a change in between wakes the wait
        // (`set_members` stores the fleet, then bumps the counter).
        let mut changes = self.inner.fleet_changes.subscribe();
        let metrics = &self.inner.metrics;
        let _waiting = metrics.node_waiting();
        let changed = self.inner.fleet.load().generation() != seen.generation()
            || matches!(
                tokio::time::timeout_at(until, changes.changed()).await,
                Ok(Ok(()))
            );
        metrics.node_wait(if changed { "node" } else { "timeout" });
        changed
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
    /// `router.request` span when traces are on.
    ///
    /// An `async fn` awaiting `serve` in place: returning `serve`'s future
    /// through an `Either` (so as to add no layer) measured ~1,600 more
    /// instructions per `isolane dev` request, in memcpy of the larger
    /// future (`bench/instructions.sh`).
    pub async fn handle_from<B>(
        &self,
        request: Request<B>,
        client: Option<&Client>,
    ) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
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
        let routes = self.inner.routes.load();
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
        };
        match trip.run(request).await {
            Ok(response) if test_tick => test_tick::answer(response).await,
            Ok(response) => response,
            Err((node, error)) => {
                let Trip {
                    backend,
                    revision,
                    request_id,
                    ..
                } = trip;
                debug!(
                    request.id = %request_id, worker.id = %backend.worker_id,
                    %revision, %node, %error, "request failed"
                );
                self.answer_error(
                    Some((&backend, &revision)),
                    &node,
                    error,
                    &request_id,
                    started,
                    trace,
                )
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
        if !matches!(error, Error::NoRoute { .. }) {
            self.inner.metrics.upstream_error(error.kind());
        }
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
        self.inner.metrics.observe(
            backend.map(|(b, revision)| b.served(revision)),
            node,
            response.status(),
            started.elapsed(),
            trace,
        );
        response
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
        let proxy = Proxy::new(ProxyConfig::default(), metrics);
        let request = Request::new(http_body_util::Full::new(Bytes::new()));
        assert_send(&proxy.handle(request));
    }
}
