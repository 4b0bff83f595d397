//! The node's Prometheus metrics, `isolane_node_*`, and the engine observer
//! that feeds the engine's share of them.
//!
//! Labels are bounded: `thread` (the node's thread count), `outcome`,
//! `reason`, `result`, `source`, `event` — never a worker id. The handles of
//! each thread are resolved once, at start, so the engine's calls on the
//! request path are an index and an atomic add.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use isolane_engine::{
    EngineObserver, EvictionReason, Outcome, PrewarmOutcome, SocketMessage as EngineMessage,
    SocketTally, TerminationReason,
};
use isolane_proto::socket::{FirstClose, NO_STATUS, SocketMessage, close_label};
use isolane_telemetry::{Exemplars, HistogramExemplars, Metric, TraceId};
use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry};

mod named;
mod queues;
mod storage;
mod workflows;

pub use queues::{QueueMetrics, WakeSource};
pub use storage::StorageMetrics;
pub use workflows::WorkflowMetrics;

/// Isolate creation: 0.1 ms to 1 s.
const CREATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];
/// Requests: 50 µs to 30 s.
const REQUEST_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0,
];
/// CPU time per request: 10 µs to 30 s.
const CPU_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

/// Every metric of the node.
#[derive(Debug)]
pub struct NodeMetrics {
    /// Storage per namespace: the store's observer (`main` gives it to the
    /// store).
    pub storage: Arc<StorageMetrics>,
    /// The instances of the workflows this node owns (`workflows.rs`).
    pub workflows: Arc<WorkflowMetrics>,
    /// The backlog of the queues this node delivers (`queues/runner.rs`).
    pub queues: Arc<QueueMetrics>,
    threads: Vec<ThreadMetrics>,
    /// `isolane_node_request_duration_seconds`'s exemplars: the trace of a
    /// sampled request per bucket.
    engine_exemplars: HistogramExemplars,
    evictions: IntCounterVec,
    /// Evictions of a full warm set (capacity or memory), for the router's
    /// pressure signal (`StatsResponse.warm_set_evictions`).
    warm_set_evictions: AtomicU64,
    terminations: IntCounterVec,
    quarantines: IntCounterVec,
    egress_refused: IntCounterVec,
    kv_operations: IntCounterVec,
    service_calls: IntCounterVec,
    log_lines_dropped: IntCounterVec,
    tail_events_dropped: IntCounter,
    code_cache: IntCounterVec,
    requests: IntCounterVec,
    rejections: IntCounterVec,
    bundles: IntGauge,
    bundle_revisions: IntGauge,
    bundle_events: IntCounterVec,
    bundle_errors: IntCounterVec,
    bundle_watch_errors: IntCounter,
    asset_answers: IntCounter,
    lease_renewals: IntCounterVec,
    draining: IntGauge,
    websockets_open: IntGaugeVec,
    websocket_messages: IntCounterVec,
    websocket_bytes: IntCounterVec,
    websocket_closes: IntCounterVec,
}

/// Who a Worker's WebSocket is with: the `peer` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A client opened it and the Worker accepted it.
    Client,
    /// The Worker opened it to a server (`fetch` with `Upgrade`, `new
    /// WebSocket`).
    Server,
}

impl Peer {
    fn label(self) -> &'static str {
        match self {
            Peer::Client => "client",
            Peer::Server => "server",
        }
    }

    /// The `direction` of the Worker's messages to this peer.
    fn outward(self) -> &'static str {
        match self {
            Peer::Client => "to_client",
            Peer::Server => "to_server",
        }
    }
}

/// One open WebSocket's handles, resolved once when it opens; when they
/// drop, the socket is counted closed with its first close's code.
#[derive(Debug)]
pub struct SocketCounters {
    open: IntGauge,
    to_worker: (IntCounter, IntCounter),
    /// The Worker's messages to its peer.
    outward: (IntCounter, IntCounter),
    first_close: FirstClose,
    /// The closes family: the series is chosen when the socket ends.
    closes: IntCounterVec,
    thread: String,
    peer: Peer,
}

impl SocketCounters {
    /// A client's message went to the Worker.
    pub fn to_worker(&self, message: &SocketMessage) {
        count(&self.to_worker, message.payload_len());
        self.first_close.see(message);
    }

    /// A Worker's message went to the client.
    pub fn to_client(&self, message: &SocketMessage) {
        count(&self.outward, message.payload_len());
        self.first_close.see(message);
    }

    /// A message of an outbound socket, either way.
    fn engine_message(&self, way: &(IntCounter, IntCounter), message: &EngineMessage) {
        match message {
            EngineMessage::Text(text) => count(way, text.len()),
            EngineMessage::Binary(bytes) => count(way, bytes.len()),
            EngineMessage::Close(frame) => {
                count(way, 0);
                self.first_close
                    .closed(frame.as_ref().map_or(NO_STATUS, |f| f.code));
            }
        }
    }

    /// The node closed the socket itself with `code` (its drain), unless a
    /// close went before.
    pub fn closed(&self, code: u16) {
        self.first_close.closed(code);
    }
}

/// Counts one message and its payload bytes.
fn count((messages, bytes): &(IntCounter, IntCounter), payload: usize) {
    messages.inc();
    bytes.inc_by(payload as u64);
}

impl Drop for SocketCounters {
    fn drop(&mut self) {
        self.open.dec();
        let code = close_label(self.first_close.code());
        self.closes
            .with_label_values(&[&self.thread, self.peer.label(), code])
            .inc();
    }
}

// === impl SocketTally for SocketCounters ===

/// A Worker's outbound socket, counted by the engine's frame loop.
impl SocketTally for SocketCounters {
    fn to_worker(&self, message: &EngineMessage) {
        self.engine_message(&self.to_worker, message);
    }

    fn to_server(&self, message: &EngineMessage) {
        self.engine_message(&self.outward, message);
    }

    fn closed(&self, code: u16) {
        self.first_close.closed(code);
    }
}

/// One thread's pre-resolved handles.
#[derive(Debug)]
struct ThreadMetrics {
    label: String,
    cache_hit: IntCounter,
    cache_miss: IntCounter,
    prewarm_warm: IntCounter,
    prewarm_compiled: IntCounter,
    prewarm_no_room: IntCounter,
    created_spare: IntCounter,
    created_new: IntCounter,
    creation_seconds: Histogram,
    live_isolates: IntGauge,
    heap_bytes: IntGauge,
    in_flight: IntGauge,
    /// `isolane_node_requests_total` of this thread, indexed like
    /// `Outcome::ALL`: each series is made on its first request (so only
    /// outcomes that happened are exported) and then counted without a
    /// label lookup.
    requests: Vec<OnceLock<IntCounter>>,
    /// Indexed like `Outcome::ALL`.
    engine_seconds: Vec<Histogram>,
    engine_cpu_seconds: Vec<Histogram>,
}

const CACHE: Metric = Metric::new(
    "isolane_node_isolate_cache_lookups_total",
    "Isolate cache lookups by result (hit or miss).",
    &["thread", "result"],
);

const PREWARMS: Metric = Metric::new(
    "isolane_node_prewarms_total",
    "Prewarms a router sent, before shifting traffic to a revision or (standby) to the node a busy Worker's requests would spill to, by result: the revision was warm already (warm), was compiled (compiled), or a standby found no room to load it without evicting (no_room).",
    &["thread", "result"],
);

const CREATIONS: Metric = Metric::new(
    "isolane_node_isolate_creations_total",
    "Isolates made ready for a worker, from a spare or new.",
    &["thread", "source"],
);

const CREATION_SECONDS: Metric = Metric::new(
    "isolane_node_isolate_creation_seconds",
    "Time to make an isolate ready for a worker.",
    &["thread"],
);

const EVICTIONS: Metric = Metric::new(
    "isolane_node_isolate_evictions_total",
    "Warm isolates evicted, by reason.",
    &["thread", "reason"],
);

const LIVE_ISOLATES: Metric = Metric::new(
    "isolane_node_live_isolates",
    "Isolates alive on the thread (warm and spare).",
    &["thread"],
);

const HEAP_BYTES: Metric = Metric::new(
    "isolane_node_isolate_heap_bytes",
    "Memory held by the thread's isolates: V8 heap, ArrayBuffers and unsent response bytes.",
    &["thread"],
);

const ENGINE_SECONDS: Metric = Metric::new(
    "isolane_node_request_duration_seconds",
    "Wall time of a request on its engine thread, until its body ended.",
    &["thread", "outcome"],
);

const ENGINE_CPU_SECONDS: Metric = Metric::new(
    "isolane_node_request_cpu_seconds",
    "CPU time a request used.",
    &["thread", "outcome"],
);

const TERMINATIONS: Metric = Metric::new(
    "isolane_node_terminations_total",
    "Worker JavaScript stopped by a limit, by reason.",
    &["thread", "reason"],
);

const QUARANTINES: Metric = Metric::new(
    "isolane_node_quarantines_total",
    "Workers refused for a while because they keep exceeding their limits.",
    &["thread"],
);

const KV_OPERATIONS: Metric = Metric::new(
    "isolane_node_kv_operations_total",
    "Workers' KV operations that reached the store, by operation and result (cached: a read answered from the node's hot-key cache).",
    &["op", "result"],
);

const SERVICE_CALLS: Metric = Metric::new(
    "isolane_service_calls_total",
    "Calls through Workers' service bindings, by where they ran (same_thread: on the caller's engine thread) and kind (fetch or rpc).",
    &["where", "kind"],
);

const EGRESS_REFUSED: Metric = Metric::new(
    "isolane_node_egress_refused_total",
    "Workers' fetch calls refused by the egress policy, by reason.",
    &["reason"],
);

const LOG_LINES_DROPPED: Metric = Metric::new(
    "isolane_node_log_lines_dropped_total",
    "Tailed Workers' console lines dropped over a log budget, by budget (invocation or rate).",
    &["reason"],
);

const REQUESTS: Metric = Metric::new(
    "isolane_node_requests_total",
    "Execute calls by how they ended (outcome).",
    &["thread", "outcome"],
);

const REJECTIONS: Metric = Metric::new(
    "isolane_node_rejections_total",
    "Requests refused before running, by reason.",
    &["thread", "reason"],
);

const IN_FLIGHT: Metric = Metric::new(
    "isolane_node_in_flight_requests",
    "Requests in flight on the thread, bodies included.",
    &["thread"],
);

const BUNDLE_EVENTS: Metric = Metric::new(
    "isolane_node_bundle_events_total",
    "Bundle Secrets applied or deleted.",
    &["event"],
);

const BUNDLE_ERRORS: Metric = Metric::new(
    "isolane_node_bundle_errors_total",
    "Bundle Secrets ignored (malformed, or their artifact could not be pulled), by reason.",
    &["reason"],
);

const LEASE_RENEWALS: Metric = Metric::new(
    "isolane_node_lease_renewals_total",
    "Lease writes by result (ok or error).",
    &["result"],
);

const WEBSOCKETS_OPEN: Metric = Metric::new(
    "isolane_node_websockets_open",
    "WebSockets open of Workers on this thread, by peer: their clients (client) or servers they connected to (server).",
    &["thread", "peer"],
);

const WEBSOCKET_MESSAGES: Metric = Metric::new(
    "isolane_node_websocket_messages_total",
    "WebSocket messages by peer (client, server) and direction: from the peer to its Worker (to_worker) or back (to_client, to_server).",
    &["thread", "peer", "direction"],
);

const WEBSOCKET_BYTES: Metric = Metric::new(
    "isolane_node_websocket_bytes_total",
    "WebSocket payload bytes (text as UTF-8, binary; closes not counted) by peer and direction: to_worker, to_client or to_server.",
    &["thread", "peer", "direction"],
);

const WEBSOCKET_CLOSES: Metric = Metric::new(
    "isolane_node_websocket_closes_total",
    "WebSockets ended, by peer and the code of their first close either way (1000, 1001, 1006: no close frame, 1008, 1009, 1011, 1012, or other).",
    &["thread", "peer", "code"],
);

const TAIL_EVENTS_DROPPED: Metric = Metric::new(
    "isolane_node_tail_events_dropped_total",
    "Invocation events dropped for tail readers that read too slowly.",
    &[],
);

const CODE_CACHE: Metric = Metric::new(
    "isolane_node_code_cache_total",
    "Big modules' and scripts' V8 code cache files by event: consumed (compiled from it), rejected (refused by V8), invalid (failed its checks), written, write_failed.",
    &["event"],
);

const BUNDLES: Metric = Metric::new(
    "isolane_node_bundles",
    "Workers the node holds a bundle for.",
    &[],
);

const BUNDLE_REVISIONS: Metric = Metric::new(
    "isolane_node_bundle_revisions",
    "Worker revisions the node holds.",
    &[],
);

const BUNDLE_WATCH_ERRORS: Metric = Metric::new(
    "isolane_node_bundle_watch_errors_total",
    "Errors of the bundle Secret watch (retried).",
    &[],
);

const ASSET_ANSWERS: Metric = Metric::new(
    "isolane_node_asset_answers_total",
    "Requests answered from a Worker's static assets (an asset, a redirect, a 304 or a bare 404), without entering the engine.",
    &[],
);

const DRAINING: Metric = Metric::new(
    "isolane_node_draining",
    "1 while the node drains before exiting.",
    &[],
);

/// Every metric of the node (docs/metrics.md lists each).
pub const ALL: &[Metric] = &[
    CACHE,
    PREWARMS,
    CREATIONS,
    CREATION_SECONDS,
    EVICTIONS,
    LIVE_ISOLATES,
    HEAP_BYTES,
    ENGINE_SECONDS,
    ENGINE_CPU_SECONDS,
    TERMINATIONS,
    QUARANTINES,
    EGRESS_REFUSED,
    KV_OPERATIONS,
    SERVICE_CALLS,
    storage::OPERATIONS,
    storage::BYTES,
    storage::REFUSALS,
    workflows::INSTANCES,
    queues::BACKLOG,
    queues::OLDEST_AGE,
    queues::WAKEUPS,
    LOG_LINES_DROPPED,
    REQUESTS,
    REJECTIONS,
    IN_FLIGHT,
    BUNDLE_EVENTS,
    BUNDLE_ERRORS,
    LEASE_RENEWALS,
    WEBSOCKETS_OPEN,
    WEBSOCKET_MESSAGES,
    WEBSOCKET_BYTES,
    WEBSOCKET_CLOSES,
    TAIL_EVENTS_DROPPED,
    CODE_CACHE,
    BUNDLES,
    BUNDLE_REVISIONS,
    BUNDLE_WATCH_ERRORS,
    ASSET_ANSWERS,
    DRAINING,
];

// === impl ThreadMetrics ===

impl ThreadMetrics {
    /// Registers the per-thread families in `registry`, and resolves each
    /// of `threads` threads' handles once.
    fn register(registry: &Registry, threads: usize) -> prometheus::Result<Vec<Self>> {
        let cache = CACHE.counter_vec(registry)?;
        let prewarms = PREWARMS.counter_vec(registry)?;
        let creations = CREATIONS.counter_vec(registry)?;
        let creation_seconds = CREATION_SECONDS.histogram_vec(registry, CREATION_BUCKETS)?;
        let live_isolates = LIVE_ISOLATES.gauge_vec(registry)?;
        let heap_bytes = HEAP_BYTES.gauge_vec(registry)?;
        let engine_seconds = ENGINE_SECONDS.histogram_vec(registry, REQUEST_BUCKETS)?;
        let engine_cpu_seconds = ENGINE_CPU_SECONDS.histogram_vec(registry, CPU_BUCKETS)?;
        let in_flight = IN_FLIGHT.gauge_vec(registry)?;
        Ok((0..threads)
            .map(|thread| {
                let label = thread.to_string();
                let l = label.as_str();
                ThreadMetrics {
                    cache_hit: cache.with_label_values(&[l, "hit"]),
                    cache_miss: cache.with_label_values(&[l, "miss"]),
                    prewarm_warm: prewarms.with_label_values(&[l, "warm"]),
                    prewarm_compiled: prewarms.with_label_values(&[l, "compiled"]),
                    prewarm_no_room: prewarms.with_label_values(&[l, "no_room"]),
                    created_spare: creations.with_label_values(&[l, "spare"]),
                    created_new: creations.with_label_values(&[l, "new"]),
                    creation_seconds: creation_seconds.with_label_values(&[l]),
                    live_isolates: live_isolates.with_label_values(&[l]),
                    heap_bytes: heap_bytes.with_label_values(&[l]),
                    in_flight: in_flight.with_label_values(&[l]),
                    requests: Outcome::ALL.iter().map(|_| OnceLock::new()).collect(),
                    engine_seconds: Outcome::ALL
                        .iter()
                        .map(|o| engine_seconds.with_label_values(&[l, o.label()]))
                        .collect(),
                    engine_cpu_seconds: Outcome::ALL
                        .iter()
                        .map(|o| engine_cpu_seconds.with_label_values(&[l, o.label()]))
                        .collect(),
                    label,
                }
            })
            .collect())
    }
}

// === impl NodeMetrics ===

impl NodeMetrics {
    /// Registers every metric in `registry` (the process's one registry),
    /// with handles for `threads` threads.
    pub fn register(registry: &Registry, threads: usize) -> prometheus::Result<Self> {
        let evictions = EVICTIONS.counter_vec(registry)?;
        let terminations = TERMINATIONS.counter_vec(registry)?;
        let quarantines = QUARANTINES.counter_vec(registry)?;
        let egress_refused = EGRESS_REFUSED.counter_vec(registry)?;
        let kv_operations = KV_OPERATIONS.counter_vec(registry)?;
        let service_calls = SERVICE_CALLS.counter_vec(registry)?;
        let log_lines_dropped = LOG_LINES_DROPPED.counter_vec(registry)?;
        let tail_events_dropped = TAIL_EVENTS_DROPPED.counter(registry)?;
        let code_cache = CODE_CACHE.counter_vec(registry)?;
        let requests = REQUESTS.counter_vec(registry)?;
        let rejections = REJECTIONS.counter_vec(registry)?;
        let bundles = BUNDLES.gauge(registry)?;
        let bundle_revisions = BUNDLE_REVISIONS.gauge(registry)?;
        let bundle_events = BUNDLE_EVENTS.counter_vec(registry)?;
        let bundle_errors = BUNDLE_ERRORS.counter_vec(registry)?;
        let bundle_watch_errors = BUNDLE_WATCH_ERRORS.counter(registry)?;
        let asset_answers = ASSET_ANSWERS.counter(registry)?;
        let lease_renewals = LEASE_RENEWALS.counter_vec(registry)?;
        let draining = DRAINING.gauge(registry)?;
        let websockets_open = WEBSOCKETS_OPEN.gauge_vec(registry)?;
        let websocket_messages = WEBSOCKET_MESSAGES.counter_vec(registry)?;
        let websocket_bytes = WEBSOCKET_BYTES.counter_vec(registry)?;
        let websocket_closes = WEBSOCKET_CLOSES.counter_vec(registry)?;

        Ok(Self {
            storage: Arc::new(StorageMetrics::register(registry)?),
            workflows: Arc::new(WorkflowMetrics::register(registry)?),
            queues: Arc::new(QueueMetrics::register(registry)?),
            threads: ThreadMetrics::register(registry, threads)?,
            engine_exemplars: Exemplars::new().histogram(ENGINE_SECONDS, REQUEST_BUCKETS),
            evictions,
            warm_set_evictions: AtomicU64::new(0),
            terminations,
            quarantines,
            egress_refused,
            kv_operations,
            service_calls,
            log_lines_dropped,
            tail_events_dropped,
            code_cache,
            requests,
            rejections,
            bundles,
            bundle_revisions,
            bundle_events,
            bundle_errors,
            bundle_watch_errors,
            asset_answers,
            lease_renewals,
            draining,
            websockets_open,
            websocket_messages,
            websocket_bytes,
            websocket_closes,
        })
    }

    /// The exemplars of the request latency histogram, for the admin
    /// server's OpenMetrics exposition (and for `isolane dev`'s router
    /// metrics to share).
    pub fn exemplars(&self) -> &Exemplars {
        self.engine_exemplars.exemplars()
    }

    /// The `thread` label: the index for threads the node has, else `invalid`.
    fn thread_label(&self, thread: usize) -> &str {
        self.threads
            .get(thread)
            .map_or("invalid", |t| t.label.as_str())
    }

    /// An Execute call ended with `outcome` (a bounded label).
    pub fn request(&self, thread: usize, outcome: &str) {
        let cached = self.threads.get(thread).and_then(|t| {
            let i = Outcome::ALL.iter().position(|o| o.label() == outcome)?;
            Some((t, t.requests.get(i)?))
        });
        match cached {
            Some((t, series)) => series
                .get_or_init(|| self.requests.with_label_values(&[&t.label, outcome]))
                .inc(),
            None => self
                .requests
                .with_label_values(&[self.thread_label(thread), outcome])
                .inc(),
        }
    }

    /// A request refused before it ran (`overloaded`, `draining`, …).
    pub fn rejection(&self, thread: usize, reason: &str) {
        self.rejections
            .with_label_values(&[self.thread_label(thread), reason])
            .inc();
    }

    pub fn in_flight_changed(&self, thread: usize, delta: i64) {
        if let Some(t) = self.threads.get(thread) {
            t.in_flight.add(delta);
        }
    }

    /// Warm isolates evicted so far because a warm set was full (capacity)
    /// or over its heap budget (memory).
    pub fn warm_set_evictions(&self) -> u64 {
        self.warm_set_evictions.load(Ordering::Relaxed)
    }

    /// (live isolates, heap bytes) of `thread`, as last reported by the engine.
    pub fn thread_isolates_now(&self, thread: usize) -> (u64, u64) {
        self.threads.get(thread).map_or((0, 0), |t| {
            (
                u64::try_from(t.live_isolates.get()).unwrap_or(0),
                u64::try_from(t.heap_bytes.get()).unwrap_or(0),
            )
        })
    }

    pub fn bundles_held(&self, workers: usize, revisions: usize) {
        self.bundles.set(i64::try_from(workers).unwrap_or(i64::MAX));
        self.bundle_revisions
            .set(i64::try_from(revisions).unwrap_or(i64::MAX));
    }

    pub fn bundle_event(&self, event: &'static str) {
        self.bundle_events.with_label_values(&[event]).inc();
    }

    pub fn bundle_error(&self, reason: &'static str) {
        self.bundle_errors.with_label_values(&[reason]).inc();
    }

    /// A request answered from a Worker's static assets.
    pub fn asset_answer(&self) {
        self.asset_answers.inc();
    }

    pub fn bundle_watch_error(&self) {
        self.bundle_watch_errors.inc();
    }

    pub fn lease_renewal(&self, ok: bool) {
        self.lease_renewals
            .with_label_values(&[if ok { "ok" } else { "error" }])
            .inc();
    }

    pub fn set_draining(&self, draining: bool) {
        self.draining.set(i64::from(draining));
    }

    /// A WebSocket with `peer` opened on `thread`: counted open until the
    /// handles drop.
    pub fn socket_opened(&self, thread: usize, peer: Peer) -> SocketCounters {
        let label = self.thread_label(thread);
        let open = self
            .websockets_open
            .with_label_values(&[label, peer.label()]);
        open.inc();
        let way = |direction| {
            let labels = [label, peer.label(), direction];
            (
                self.websocket_messages.with_label_values(&labels),
                self.websocket_bytes.with_label_values(&labels),
            )
        };
        SocketCounters {
            open,
            to_worker: way("to_worker"),
            outward: way(peer.outward()),
            first_close: FirstClose::default(),
            closes: self.websocket_closes.clone(),
            thread: label.to_owned(),
            peer,
        }
    }
}

fn outcome_index(outcome: Outcome) -> usize {
    Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0)
}

fn saturating_i64(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

// === impl EngineObserver for NodeMetrics ===

impl EngineObserver for NodeMetrics {
    fn outbound_socket_opened(&self, thread: usize) -> Option<Box<dyn SocketTally>> {
        Some(Box::new(self.socket_opened(thread, Peer::Server)))
    }

    fn isolate_cache(&self, thread: usize, hit: bool) {
        match self.threads.get(thread) {
            Some(t) if hit => t.cache_hit.inc(),
            Some(t) => t.cache_miss.inc(),
            None => {}
        }
    }

    fn isolate_prewarmed(&self, thread: usize, outcome: PrewarmOutcome) {
        if let Some(t) = self.threads.get(thread) {
            match outcome {
                PrewarmOutcome::Warm => &t.prewarm_warm,
                PrewarmOutcome::Compiled => &t.prewarm_compiled,
                PrewarmOutcome::NoRoom => &t.prewarm_no_room,
            }
            .inc();
        }
    }

    fn isolate_created(&self, thread: usize, duration: Duration, from_spare: bool) {
        if let Some(t) = self.threads.get(thread) {
            if from_spare {
                t.created_spare.inc();
            } else {
                t.created_new.inc();
            }
            t.creation_seconds.observe(duration.as_secs_f64());
        }
    }

    fn isolate_evicted(&self, thread: usize, reason: EvictionReason) {
        if matches!(reason, EvictionReason::Capacity | EvictionReason::Memory) {
            self.warm_set_evictions.fetch_add(1, Ordering::Relaxed);
        }
        self.evictions
            .with_label_values(&[self.thread_label(thread), reason.as_str()])
            .inc();
    }

    fn thread_isolates(&self, thread: usize, live_isolates: usize, heap_bytes: usize) {
        if let Some(t) = self.threads.get(thread) {
            t.live_isolates.set(saturating_i64(live_isolates));
            t.heap_bytes.set(saturating_i64(heap_bytes));
        }
    }

    fn request_finished(&self, thread: usize, outcome: Outcome, duration: Duration, cpu: Duration) {
        if let Some(t) = self.threads.get(thread) {
            let i = outcome_index(outcome);
            if let Some(h) = t.engine_seconds.get(i) {
                h.observe(duration.as_secs_f64());
            }
            if let Some(h) = t.engine_cpu_seconds.get(i) {
                h.observe(cpu.as_secs_f64());
            }
        }
    }

    fn request_exemplar(
        &self,
        thread: usize,
        outcome: Outcome,
        duration: Duration,
        trace: [u8; 16],
    ) {
        let labels = [self.thread_label(thread), outcome.label()];
        let trace = TraceId::from_bytes(trace);
        self.engine_exemplars
            .record(&labels, duration.as_secs_f64(), trace);
    }

    fn termination(&self, thread: usize, reason: TerminationReason) {
        self.terminations
            .with_label_values(&[self.thread_label(thread), reason.as_str()])
            .inc();
    }

    fn kv_operation(&self, op: isolane_engine::KvOp, result: isolane_engine::KvResult) {
        self.kv_operations
            .with_label_values(&[op.as_str(), result.as_str()])
            .inc();
    }

    fn service_call(
        &self,
        place: isolane_engine::ServicePlace,
        kind: isolane_engine::ServiceCallKind,
    ) {
        self.service_calls
            .with_label_values(&[place.as_str(), kind.as_str()])
            .inc();
    }

    fn egress_refused(&self, _thread: usize, reason: isolane_engine::Refusal) {
        self.egress_refused
            .with_label_values(&[reason.as_str()])
            .inc();
    }

    fn log_lines_dropped(&self, _thread: usize, reason: isolane_engine::LogDropReason, lines: u64) {
        self.log_lines_dropped
            .with_label_values(&[reason.as_str()])
            .inc_by(lines);
    }

    fn tail_events_dropped(&self, events: u64) {
        self.tail_events_dropped.inc_by(events);
    }

    fn code_cache(&self, event: isolane_engine::CodeCacheEvent) {
        self.code_cache.with_label_values(&[event.as_str()]).inc();
    }

    fn quarantined(&self, thread: usize) {
        self.quarantines
            .with_label_values(&[self.thread_label(thread)])
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is what registers, and docs/metrics.md lists all of it.
    #[test]
    fn the_table_registers_and_is_documented() {
        let registry = Registry::new();
        let _metrics = NodeMetrics::register(&registry, 2).unwrap();
        assert_eq!(isolane_telemetry::unregistered(ALL, &registry), [""; 0]);
        let docs = include_str!("../../docs/metrics.md");
        assert_eq!(isolane_telemetry::undocumented(ALL, docs), [""; 0]);
    }

    #[test]
    fn the_observer_feeds_bounded_series() {
        let registry = Registry::new();
        let metrics = NodeMetrics::register(&registry, 2).unwrap();
        metrics.isolate_cache(0, true);
        metrics.isolate_cache(1, false);
        metrics.isolate_created(1, Duration::from_millis(3), false);
        metrics.isolate_evicted(0, EvictionReason::Capacity);
        metrics.isolate_evicted(1, EvictionReason::Memory);
        metrics.isolate_evicted(1, EvictionReason::RevisionReplaced);
        assert_eq!(metrics.warm_set_evictions(), 2, "capacity and memory only");
        metrics.thread_isolates(1, 3, 1 << 20);
        metrics.request_finished(
            0,
            Outcome::CpuLimit,
            Duration::from_millis(60),
            Duration::from_millis(50),
        );
        metrics.termination(0, TerminationReason::CpuLimit);
        metrics.request(7, "invalid_thread");
        metrics.service_call(
            isolane_engine::ServicePlace::SameThread,
            isolane_engine::ServiceCallKind::Rpc,
        );
        assert_eq!(metrics.thread_isolates_now(1), (3, 1 << 20));

        let text = prometheus::TextEncoder::new()
            .encode_to_string(&registry.gather())
            .unwrap();
        for line in [
            r#"isolane_node_isolate_cache_lookups_total{result="hit",thread="0"} 1"#,
            r#"isolane_node_isolate_creations_total{source="new",thread="1"} 1"#,
            r#"isolane_node_isolate_evictions_total{reason="capacity",thread="0"} 1"#,
            r#"isolane_node_live_isolates{thread="1"} 3"#,
            r#"isolane_node_request_cpu_seconds_count{outcome="cpu_limit",thread="0"} 1"#,
            r#"isolane_node_terminations_total{reason="cpu_limit",thread="0"} 1"#,
            r#"isolane_node_requests_total{outcome="invalid_thread",thread="invalid"} 1"#,
            r#"isolane_service_calls_total{kind="rpc",where="same_thread"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        promtool_check(&text);
    }

    /// `promtool check metrics` when promtool is installed (hack/install-deps.sh).
    fn promtool_check(text: &str) {
        use std::io::Write;
        let Ok(mut child) = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("promtool not installed; skipping the lint");
            return;
        };
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
