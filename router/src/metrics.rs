//! The router's Prometheus metrics, and the bounded per-worker series.
//!
//! Every metric is registered on the registry `main` makes and hands down.
//! Label values are bounded: `status_class` has five values, `node` is the
//! fleet's node names, `reason` and `kind` come from closed enums, and `worker`
//! is one of at most K worker ids (the busiest, see [`WorkerSeries`]) or
//! `"other"`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::worker_load::WorkerLoad;
use http::StatusCode;
use isolane_proto::socket::{CLOSE_LABELS, FirstClose, SocketMessage, close_label};
use isolane_telemetry::{Exemplars, HistogramExemplars, Metric, TraceId};
use prometheus::core::Collector;
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, Registry};

mod open_sockets;

use open_sockets::{OpenCount, OpenSockets, Slots, WORKER_WEBSOCKETS_OPEN};

/// Request latency buckets: 50 µs to 30 s (the project's request domain).
pub const REQUEST_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The `worker` label value shared by every worker without its own series.
pub const OTHER_WORKER: &str = "other";

/// A request that reached a Worker: its id, metrics slot and the revision
/// that ran it.
#[derive(Clone, Copy, Debug)]
pub struct Served<'a> {
    /// `namespace/name`.
    pub worker_id: &'a str,
    /// The Worker's per-worker metrics slot.
    pub slot: &'a WorkerSlot,
    /// The revision that ran the request.
    pub revision: &'a str,
}

/// The `node` label value of requests that never reached a node.
pub const NO_NODE: &str = "none";

const REQUESTS: Metric = Metric::new(
    "isolane_router_requests_total",
    "HTTP requests answered, by status class and the node that served them (none: never reached a node).",
    &["status_class", "node"],
);

const DURATION: Metric = Metric::new(
    "isolane_router_request_duration_seconds",
    "From the request head to the end of the response body, by status class and node.",
    &["status_class", "node"],
);

const WORKER_REQUESTS: Metric = Metric::new(
    "isolane_router_worker_requests_total",
    "HTTP requests routed to a Worker, by the revision that ran them (its traffic split), for the busiest Workers (the rest under worker=\"other\", revision=\"other\").",
    &["worker", "revision", "status_class"],
);

const WORKER_DURATION: Metric = Metric::new(
    "isolane_router_worker_request_duration_seconds",
    "Request latency per Worker, for the busiest Workers (the rest under worker=\"other\").",
    &["worker"],
);

const WEBSOCKETS_OPEN: Metric = Metric::new(
    "isolane_router_websockets_open",
    "WebSockets open between clients and Workers through this router.",
    &[],
);

const WEBSOCKET_MESSAGES: Metric = Metric::new(
    "isolane_router_websocket_messages_total",
    "WebSocket messages by Worker (the busiest, or other) and direction: from the client (to_worker) or to it (to_client).",
    &["worker", "direction"],
);

const WEBSOCKET_BYTES: Metric = Metric::new(
    "isolane_router_websocket_bytes_total",
    "WebSocket payload bytes (text as UTF-8, binary; frame headers and closes not counted) by Worker (the busiest, or other) and direction (to_worker, to_client).",
    &["worker", "direction"],
);

const WEBSOCKET_OPENS: Metric = Metric::new(
    "isolane_router_websocket_opens_total",
    "WebSockets opened, by Worker (the busiest, or other); less isolane_router_websocket_closes_total of the same Worker, the sockets it has open.",
    &["worker"],
);

const WEBSOCKET_CLOSES: Metric = Metric::new(
    "isolane_router_websocket_closes_total",
    "WebSockets ended, by Worker (the busiest, or other) and the code of their first close either way (1000, 1001, 1006: no close frame, 1008, 1009, 1011, 1012, or other).",
    &["worker", "code"],
);

const LIVE_NODES: Metric = Metric::new(
    "isolane_router_live_nodes",
    "Runtime nodes with a live, non-draining Lease.",
    &[],
);

const ROUTABLE_WORKERS: Metric = Metric::new(
    "isolane_router_routable_workers",
    "Workers with a revision and Ready=True in the route table.",
    &[],
);

const ROUTE_CONFLICTS: Metric = Metric::new(
    "isolane_router_route_conflicts",
    "Claimed routes (a Worker's host and path prefix) the ownership rule does not admit: held by an older Worker, another namespace or a reservation.",
    &[],
);

const RETRIES: Metric = Metric::new(
    "isolane_router_retries_total",
    "Requests retried on the next candidate node, by reason.",
    &["reason"],
);

const PLACEMENT_MOVES: Metric = Metric::new(
    "isolane_router_placement_moves_total",
    "Routable Workers whose first-choice node changed when membership changed.",
    &[],
);

const QUARANTINES_LIFTED: Metric = Metric::new(
    "isolane_router_quarantines_lifted_total",
    "Quarantines of Workers lifted because a restarted node's crash record showed the Worker was not in a JavaScript turn when the node died.",
    &[],
);

const NODE_WAITS: Metric = Metric::new(
    "isolane_router_node_waits_total",
    "Requests that found no live node and waited for the fleet to change (--node-wait), by how the wait ended: a node came (node) or the wait ran out (timeout).",
    &["outcome"],
);

const NODE_WAITING: Metric = Metric::new(
    "isolane_router_node_waiting",
    "Requests waiting now for a live node to join (--node-wait).",
    &[],
);

const UPSTREAM_ERRORS: Metric = Metric::new(
    "isolane_router_upstream_errors_total",
    "Requests that failed or were refused, by error kind.",
    &["kind"],
);

const WATCH_ERRORS: Metric = Metric::new(
    "isolane_router_watch_errors_total",
    "Errors from the Kubernetes watches (they retry with backoff), by resource.",
    &["resource"],
);

const TLS_SECRETS: Metric = Metric::new(
    "isolane_router_tls_secrets",
    "Labelled TLS Secrets the HTTPS ingress serves, and those it rejected (bad PEM, a key not the certificate's, no DNS name), by state.",
    &["state"],
);

const CRON_RUNS: Metric = Metric::new(
    "isolane_router_cron_runs_total",
    "Cron ticks this router ran, by outcome (ok, exception, cpu_limit, …; missed: due while this router could not run it, skipped).",
    &["outcome"],
);

const CRON_LEADER: Metric = Metric::new(
    "isolane_router_cron_leader",
    "1 while this router holds the cron Lease and runs every Worker's schedules.",
    &[],
);

const PREWARMS: Metric = Metric::new(
    "isolane_router_prewarms_total",
    "Revisions this router had compiled where they will run before shifting traffic to them, by outcome (ok; failed: the shift went ahead anyway).",
    &["outcome"],
);

const STANDBYS: Metric = Metric::new(
    "isolane_router_standby_prewarms_total",
    "Standby prewarms this router sent, one per Worker the first time it had two requests in flight, to the node its requests would spill to, by outcome (ok: answered, whether or not that node had room to load it; failed).",
    &["outcome"],
);

/// Every metric of the router (docs/metrics.md lists each).
pub const ALL: &[Metric] = &[
    REQUESTS,
    DURATION,
    WORKER_REQUESTS,
    WORKER_DURATION,
    WEBSOCKETS_OPEN,
    WEBSOCKET_MESSAGES,
    WEBSOCKET_BYTES,
    WEBSOCKET_OPENS,
    WORKER_WEBSOCKETS_OPEN,
    WEBSOCKET_CLOSES,
    LIVE_NODES,
    ROUTABLE_WORKERS,
    ROUTE_CONFLICTS,
    RETRIES,
    PLACEMENT_MOVES,
    QUARANTINES_LIFTED,
    NODE_WAITS,
    NODE_WAITING,
    UPSTREAM_ERRORS,
    WATCH_ERRORS,
    TLS_SECRETS,
    CRON_RUNS,
    CRON_LEADER,
    PREWARMS,
];

/// The router's metrics.
#[derive(Debug)]
pub struct RouterMetrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    /// `duration`'s exemplars: the trace of a sampled request per bucket.
    duration_exemplars: HistogramExemplars,
    worker_requests: IntCounterVec,
    worker_duration: HistogramVec,
    pub(crate) live_nodes: IntGauge,
    pub(crate) routable_workers: IntGauge,
    pub(crate) route_conflicts: IntGauge,
    retries: IntCounterVec,
    pub(crate) placement_moves: IntCounter,
    /// Quarantines lifted by crash records (`losses.rs`).
    pub(crate) quarantines_lifted: IntCounter,
    node_waits: IntCounterVec,
    node_waiting: IntGauge,
    upstream_errors: IntCounterVec,
    watch_errors: IntCounterVec,
    tls_secrets: prometheus::IntGaugeVec,
    cron_runs: IntCounterVec,
    pub(crate) cron_leader: IntGauge,
    prewarms: IntCounterVec,
    standbys: IntCounterVec,
    websockets_open: IntGauge,
    /// Which workers have their own series.
    pub workers: WorkerSeries,
}

impl RouterMetrics {
    /// Creates the metrics and registers them on `registry`, allowing at most
    /// `max_worker_series` workers their own series.
    pub fn register(registry: &Registry, max_worker_series: usize) -> prometheus::Result<Self> {
        let requests = REQUESTS.counter_vec(registry)?;
        let duration = DURATION.histogram_vec(registry, REQUEST_BUCKETS)?;
        let worker_requests = WORKER_REQUESTS.counter_vec(registry)?;
        let worker_duration = WORKER_DURATION.histogram_vec(registry, REQUEST_BUCKETS)?;
        let websockets_open = WEBSOCKETS_OPEN.gauge(registry)?;
        let sockets = SocketVecs {
            opens: WEBSOCKET_OPENS.counter_vec(registry)?,
            messages: WEBSOCKET_MESSAGES.counter_vec(registry)?,
            bytes: WEBSOCKET_BYTES.counter_vec(registry)?,
            closes: WEBSOCKET_CLOSES.counter_vec(registry)?,
        };
        let live_nodes = LIVE_NODES.gauge(registry)?;
        let routable_workers = ROUTABLE_WORKERS.gauge(registry)?;
        let route_conflicts = ROUTE_CONFLICTS.gauge(registry)?;
        let retries = RETRIES.counter_vec(registry)?;
        let placement_moves = PLACEMENT_MOVES.counter(registry)?;
        let quarantines_lifted = QUARANTINES_LIFTED.counter(registry)?;
        let node_waits = NODE_WAITS.counter_vec(registry)?;
        let node_waiting = NODE_WAITING.gauge(registry)?;
        let upstream_errors = UPSTREAM_ERRORS.counter_vec(registry)?;
        let watch_errors = WATCH_ERRORS.counter_vec(registry)?;
        let cron_leader = CRON_LEADER.gauge(registry)?;
        let workers = WorkerSeries::new(
            max_worker_series,
            worker_requests.clone(),
            worker_duration.clone(),
            sockets,
        );
        registry.register(Box::new(OpenSockets::new(
            Arc::clone(&workers.slots),
            max_worker_series,
        )?))?;
        Ok(Self {
            workers,
            websockets_open,
            requests,
            duration,
            duration_exemplars: Exemplars::new().histogram(DURATION, REQUEST_BUCKETS),
            worker_requests,
            worker_duration,
            live_nodes,
            routable_workers,
            route_conflicts,
            retries,
            placement_moves,
            quarantines_lifted,
            node_waits,
            node_waiting,
            upstream_errors,
            watch_errors,
            tls_secrets: TLS_SECRETS.gauge_vec(registry)?,
            cron_runs: CRON_RUNS.counter_vec(registry)?,
            cron_leader,
            prewarms: PREWARMS.counter_vec(registry)?,
            standbys: STANDBYS.counter_vec(registry)?,
        })
    }

    /// The series one WebSocket to `served`'s Worker counts in (its
    /// `worker` label chosen now, as for a request).
    pub fn socket_series(&self, served: Served<'_>) -> SocketSeries {
        let worker = self.workers.label(served.worker_id, served.slot);
        let vecs = &self.workers.sockets;
        let way = |direction| Way {
            messages: vecs.messages.with_label_values(&[worker, direction]),
            bytes: vecs.bytes.with_label_values(&[worker, direction]),
        };
        SocketSeries {
            open: self.websockets_open.clone(),
            worker_open: Arc::clone(&served.slot.open_sockets),
            opens: vecs.opens.with_label_values(&[worker]),
            to_worker: way("to_worker"),
            to_client: way("to_client"),
            closes: vecs.closes.clone(),
            worker: worker.to_owned(),
            first_close: Arc::new(FirstClose::default()),
        }
    }

    /// Keeps the exemplars of the latency histogram in `exemplars` (a set
    /// another component's metrics share, as in `isolane dev`), instead of
    /// a set of its own.
    pub fn with_exemplars(mut self, exemplars: &Exemplars) -> Self {
        self.duration_exemplars = exemplars.histogram(DURATION, REQUEST_BUCKETS);
        self
    }

    /// The exemplars of the latency histogram, for the admin server's
    /// OpenMetrics exposition.
    pub fn exemplars(&self) -> &Exemplars {
        self.duration_exemplars.exemplars()
    }

    /// Counts one prewarm by outcome (`ok`, `failed`).
    pub fn prewarm(&self, outcome: &'static str) {
        self.prewarms.with_label_values(&[outcome]).inc();
    }

    /// Counts one standby prewarm by outcome (`ok`, `failed`).
    pub fn standby(&self, outcome: &'static str) {
        self.standbys.with_label_values(&[outcome]).inc();
    }

    /// Counts one cron tick by outcome.
    pub fn cron_run(&self, outcome: &str) {
        self.cron_runs.with_label_values(&[outcome]).inc();
    }

    /// Records one answered request, and the Worker and revision it ran when
    /// it reached one.
    /// `trace` is the request's when it is sampled: the latency bucket's
    /// exemplar.
    pub fn observe(
        &self,
        served: Option<Served<'_>>,
        node: &str,
        status: StatusCode,
        elapsed: Duration,
        trace: Option<TraceId>,
    ) {
        let class = status_class(status);
        let labels = [class, node];
        self.record(
            &self.requests.with_label_values(&labels),
            &self.duration.with_label_values(&labels),
            served,
            class,
            elapsed,
        );
        if let Some(trace) = trace {
            let seconds = elapsed.as_secs_f64();
            self.duration_exemplars.record(&labels, seconds, trace);
        }
    }

    /// [`RouterMetrics::observe`] for a request a node of the fleet
    /// answered, whose series `node` keeps.
    pub fn observe_node(
        &self,
        served: Option<Served<'_>>,
        node: &NodeSeries,
        status: StatusCode,
        elapsed: Duration,
        trace: Option<TraceId>,
    ) {
        let index = class_index(status);
        let (requests, duration) = node.of_class(self, index);
        let class = STATUS_CLASSES[index];
        self.record(requests, duration, served, class, elapsed);
        if let Some(trace) = trace {
            let labels = [class, node.node.as_str()];
            let seconds = elapsed.as_secs_f64();
            self.duration_exemplars.record(&labels, seconds, trace);
        }
    }

    /// Counts a request in the node's series given, and in its Worker's.
    fn record(
        &self,
        requests: &IntCounter,
        duration: &Histogram,
        served: Option<Served<'_>>,
        class: &'static str,
        elapsed: Duration,
    ) {
        let seconds = elapsed.as_secs_f64();
        requests.inc();
        duration.observe(seconds);
        if let Some(Served {
            worker_id,
            slot,
            revision,
        }) = served
        {
            let worker = self.workers.label(worker_id, slot);
            let revision = if worker == OTHER_WORKER {
                OTHER_WORKER
            } else {
                revision
            };
            self.worker_requests
                .with_label_values(&[worker, revision, class])
                .inc();
            self.worker_duration
                .with_label_values(&[worker])
                .observe(seconds);
        }
    }

    /// Counts a retry on the next candidate.
    pub fn retry(&self, reason: &'static str) {
        self.retries.with_label_values(&[reason]).inc();
    }

    /// Counts a request that waited for a node: `node` when one came,
    /// `timeout` when the wait ran out.
    pub fn node_wait(&self, outcome: &'static str) {
        self.node_waits.with_label_values(&[outcome]).inc();
    }

    /// Counts a request waiting for a node until the guard is dropped (also
    /// when the client leaves and the wait is cancelled).
    pub fn node_waiting(&self) -> NodeWaiting<'_> {
        self.node_waiting.inc();
        NodeWaiting(&self.node_waiting)
    }

    /// Counts an upstream error of `kind`.
    pub fn upstream_error(&self, kind: &'static str) {
        self.upstream_errors.with_label_values(&[kind]).inc();
    }

    /// Counts a watch error on `resource` (`workers`, `leases`,
    /// `host_owners` or `tls_secrets`).
    pub fn watch_error(&self, resource: &'static str) {
        self.watch_errors.with_label_values(&[resource]).inc();
    }

    /// The labelled TLS Secrets now served and rejected.
    pub fn tls_secrets(&self, served: usize, rejected: usize) {
        for (state, count) in [("served", served), ("rejected", rejected)] {
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            self.tls_secrets.with_label_values(&[state]).set(count);
        }
    }

    /// The per-worker request counter, for tests and the series cap.
    pub fn worker_request_series(&self) -> &IntCounterVec {
        &self.worker_requests
    }

    /// The latency histogram of one `(status_class, node)`, for tests.
    pub fn duration_of(&self, status_class: &str, node: &str) -> Histogram {
        self.duration.with_label_values(&[status_class, node])
    }
}

/// The values of the `status_class` label.
const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// `"2xx"` and friends.
pub fn status_class(status: StatusCode) -> &'static str {
    STATUS_CLASSES[class_index(status)]
}

/// The index of `status`'s class in [`STATUS_CLASSES`].
fn class_index(status: StatusCode) -> usize {
    match status.as_u16() {
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        _ => 4,
    }
}

/// One node's `isolane_router_requests_total` counter and latency histogram
/// per status class, each looked up in its vector the first time a request
/// of that class ends there and kept (node series are never removed), so a
/// request is counted without a lookup. Only classes that happened appear.
#[derive(Debug)]
pub struct NodeSeries {
    node: String,
    classes: [OnceLock<(IntCounter, Histogram)>; 5],
}

impl NodeSeries {
    /// The series of node `node`, none resolved yet.
    pub fn new(node: &str) -> Self {
        Self {
            node: node.to_owned(),
            classes: Default::default(),
        }
    }

    /// The series of class `index` ([`class_index`]).
    fn of_class(&self, metrics: &RouterMetrics, index: usize) -> &(IntCounter, Histogram) {
        self.classes[index].get_or_init(|| {
            let labels = [STATUS_CLASSES[index], self.node.as_str()];
            (
                metrics.requests.with_label_values(&labels),
                metrics.duration.with_label_values(&labels),
            )
        })
    }
}

// === impl WorkerSeries ===

/// Per-worker counters the request path touches without a lock.
#[derive(Debug, Default)]
pub struct WorkerSlot {
    /// Requests routed to the worker since the router started.
    hits: AtomicU64,
    /// `hits` at the last re-rank.
    ranked_hits: AtomicU64,
    /// Whether the worker has its own series.
    tracked: AtomicBool,
    /// Its WebSockets open now (each socket holds it too).
    open_sockets: Arc<OpenCount>,
    /// Its requests in flight now, for placement (each request holds it too).
    load: Arc<WorkerLoad>,
}

impl WorkerSlot {
    /// The Worker's requests in flight through this router.
    pub fn load(&self) -> &Arc<WorkerLoad> {
        &self.load
    }

    /// Whether this worker has its own series now.
    pub fn is_tracked(&self) -> bool {
        self.tracked.load(Ordering::Relaxed)
    }
}

/// Chooses which workers get their own `worker` label value: at most `max`.
///
/// A worker seen while fewer than `max` are tracked is admitted at once; every
/// [`WorkerSeries::rerank`] (the router runs one periodically) then keeps the
/// `max` busiest since the previous re-rank (requests, then sockets open),
/// and removes the series of those that dropped out, so the label's values
/// stay bounded however many Workers come and go. Counters of a worker that drops out restart from zero if it
/// comes back, which Prometheus reads as a counter reset.
#[derive(Debug)]
pub struct WorkerSeries {
    max: usize,
    tracked: AtomicUsize,
    slots: Slots,
    requests: IntCounterVec,
    duration: HistogramVec,
    sockets: SocketVecs,
}

/// The per-Worker WebSocket families.
#[derive(Debug)]
struct SocketVecs {
    opens: IntCounterVec,
    messages: IntCounterVec,
    bytes: IntCounterVec,
    closes: IntCounterVec,
}

impl WorkerSeries {
    fn new(
        max: usize,
        requests: IntCounterVec,
        duration: HistogramVec,
        sockets: SocketVecs,
    ) -> Self {
        Self {
            max,
            tracked: AtomicUsize::new(0),
            slots: Arc::new(Mutex::new(HashMap::new())),
            requests,
            duration,
            sockets,
        }
    }

    /// The slot of `worker_id`, created on first use (when the route table is built).
    pub fn slot(&self, worker_id: &str) -> Arc<WorkerSlot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(slots.entry(worker_id.to_owned()).or_default())
    }

    /// Forgets workers that are no longer routable, and their series; a
    /// Worker with WebSockets still open is kept until they close, so its
    /// open count stays exported.
    ///
    /// The busiest ranking is left alone: a route table rebuilt (a rollout,
    /// a burst of them) does not shorten the window a Worker's activity is
    /// counted over, or a busy Worker would drop out between two rebuilds.
    pub fn retain(&self, routable: &HashSet<&str>) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut gone = Vec::new();
        slots.retain(|id, slot| {
            let keep = routable.contains(id.as_str()) || slot.open_sockets.get() > 0;
            if !keep && slot.tracked.swap(false, Ordering::Relaxed) {
                gone.push(id.clone());
            }
            keep
        });
        drop(slots);
        for worker in gone {
            // Never below zero, whatever a concurrent re-rank stored.
            let _ = self
                .tracked
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            self.remove(&worker);
        }
    }

    /// The `worker` label value for a request to `worker_id` (whose slot is
    /// `slot`), counting the request.
    fn label<'a>(&self, worker_id: &'a str, slot: &WorkerSlot) -> &'a str {
        slot.hits.fetch_add(1, Ordering::Relaxed);
        if slot.is_tracked() || self.admit(slot) {
            worker_id
        } else {
            OTHER_WORKER
        }
    }

    /// Tracks `slot` if fewer than `max` workers are tracked.
    fn admit(&self, slot: &WorkerSlot) -> bool {
        let tracked = self.tracked.load(Ordering::Relaxed);
        if tracked >= self.max {
            return false;
        }
        if self
            .tracked
            .compare_exchange(tracked, tracked + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            // Another request took that place; this one counts as "other".
            return false;
        }
        if slot.tracked.swap(true, Ordering::Relaxed) {
            // Already tracked (a concurrent admission): give the place back.
            self.tracked.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    /// Keeps the `max` workers with the most requests since the last re-rank,
    /// then the most WebSockets open (ties by worker id), and removes every
    /// other worker's series. A Worker whose sockets are open is active
    /// though it opens none: its messages and bytes count in its series,
    /// which dropping it would leave counting unexported.
    pub fn rerank(&self) {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut ranked: Vec<((u64, u64), &str)> = slots
            .iter()
            .map(|(id, slot)| {
                let hits = slot.hits.load(Ordering::Relaxed);
                let previous = slot.ranked_hits.swap(hits, Ordering::Relaxed);
                let recent = hits.saturating_sub(previous);
                ((recent, slot.open_sockets.get()), id.as_str())
            })
            .filter(|(activity, _)| *activity != (0, 0))
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let keep: HashSet<&str> = ranked.iter().take(self.max).map(|(_, id)| *id).collect();
        for (id, slot) in slots.iter() {
            slot.tracked
                .store(keep.contains(id.as_str()), Ordering::Relaxed);
        }
        self.tracked.store(keep.len(), Ordering::Relaxed);
        for series in [
            labelled_workers(&self.requests),
            labelled_workers(&self.duration),
            labelled_workers(&self.sockets.opens),
            labelled_workers(&self.sockets.messages),
            labelled_workers(&self.sockets.bytes),
            labelled_workers(&self.sockets.closes),
        ] {
            for worker in series {
                if worker != OTHER_WORKER && !keep.contains(worker.as_str()) {
                    self.remove(&worker);
                }
            }
        }
    }

    /// How many workers have their own series.
    pub fn tracked(&self) -> usize {
        self.tracked.load(Ordering::Relaxed)
    }

    fn remove(&self, worker: &str) {
        self.remove_requests(|w, _| w == worker);
        let _ = self.duration.remove_label_values(&[worker]);
        let _ = self.sockets.opens.remove_label_values(&[worker]);
        for direction in ["to_worker", "to_client"] {
            let _ = self
                .sockets
                .messages
                .remove_label_values(&[worker, direction]);
            let _ = self.sockets.bytes.remove_label_values(&[worker, direction]);
        }
        for code in CLOSE_LABELS {
            let _ = self.sockets.closes.remove_label_values(&[worker, code]);
        }
    }

    /// Drops the request series of revisions `keep` says no longer run
    /// (after a rollout, the revisions it left behind).
    pub fn retain_revisions(&self, keep: impl Fn(&str, &str) -> bool) {
        self.remove_requests(|worker, revision| worker != OTHER_WORKER && !keep(worker, revision));
    }

    /// Removes the `worker_requests` series whose worker and revision match.
    fn remove_requests(&self, matches: impl Fn(&str, &str) -> bool) {
        for family in self.requests.collect() {
            for metric in family.get_metric() {
                let labels: HashMap<&str, &str> = metric
                    .get_label()
                    .iter()
                    .map(|l| (l.name(), l.value()))
                    .collect();
                let label = |name: &str| labels.get(name).copied().unwrap_or_default();
                let (worker, revision) = (label("worker"), label("revision"));
                if matches(worker, revision) {
                    // Absent already is fine: nothing to remove.
                    let _ = self.requests.remove_label_values(&[
                        worker,
                        revision,
                        label("status_class"),
                    ]);
                }
            }
        }
    }
}

/// The distinct `worker` label values a vector currently has.
fn labelled_workers(vec: &impl Collector) -> HashSet<String> {
    vec.collect()
        .iter()
        .flat_map(|family| family.get_metric())
        .flat_map(|metric| metric.get_label())
        .filter(|label| label.name() == "worker")
        .map(|label| label.value().to_owned())
        .collect()
}

/// The series of one WebSocket: the open gauge (raised while its pump
/// runs) and its Worker's message and byte counters, resolved once, and
/// its close counted when it ends ([`SocketSeries::ended`]). Its Worker
/// stays among the busiest while it is open unless `max` Workers are
/// busier; if it drops out, the socket keeps counting in series no longer
/// exported.
#[derive(Clone, Debug)]
pub struct SocketSeries {
    pub open: IntGauge,
    /// Its Worker's count in `isolane_router_worker_websockets_open`.
    worker_open: Arc<OpenCount>,
    opens: IntCounter,
    to_worker: Way,
    to_client: Way,
    closes: IntCounterVec,
    worker: String,
    first_close: Arc<FirstClose>,
}

/// One direction's counters.
#[derive(Clone, Debug)]
struct Way {
    messages: IntCounter,
    bytes: IntCounter,
}

impl Way {
    fn count(&self, message: &SocketMessage) {
        self.messages.inc();
        self.bytes.inc_by(message.payload_len() as u64);
    }
}

impl SocketSeries {
    /// The socket is open: counted in the gauge and in its Worker's opens.
    pub fn opened(&self) {
        self.open.inc();
        self.worker_open.opened();
        self.opens.inc();
    }

    /// A message from the client went to the Worker.
    pub fn to_worker(&self, message: &SocketMessage) {
        self.to_worker.count(message);
        self.first_close.see(message);
    }

    /// A message from the Worker went to the client.
    pub fn to_client(&self, message: &SocketMessage) {
        self.to_client.count(message);
        self.first_close.see(message);
    }

    /// The front end closed the socket itself with `code` (a limit, a
    /// shutdown, a Worker that dropped it), unless a close went before.
    pub fn closed(&self, code: u16) {
        self.first_close.closed(code);
    }

    /// The socket ended: counts its close by code (1006 when no close
    /// frame went either way).
    pub fn ended(&self) {
        let code = close_label(self.first_close.code());
        self.closes.with_label_values(&[&self.worker, code]).inc();
        self.worker_open.closed();
    }
}

/// A request waiting for a node, counted in `isolane_router_node_waiting`
/// while it lives.
pub struct NodeWaiting<'a>(&'a IntGauge);

impl Drop for NodeWaiting<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is what registers, and docs/metrics.md lists all of it.
    #[test]
    fn the_table_registers_and_is_documented() {
        let registry = Registry::new();
        let _metrics = RouterMetrics::register(&registry, 4).unwrap();
        assert_eq!(isolane_telemetry::unregistered(ALL, &registry), [""; 0]);
        let docs = include_str!("../../docs/metrics.md");
        assert_eq!(isolane_telemetry::undocumented(ALL, docs), [""; 0]);
    }
}
