//! Shared helpers: one engine per test, requests, bodies.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use isolane_engine::{
    Body, EgressConfig, Engine, EngineConfig, EngineObserver, EvictionReason, ExecuteError, Limits,
    LogDropReason, Outcome, PoolMode, PrewarmOutcome, ServiceCallKind, ServicePlace,
    TerminationReason, WorkerBundle,
};

/// An engine with `threads` threads, unpinned (tests share two cores).
pub fn engine(threads: usize, mode: PoolMode) -> (Engine, Arc<Recorder>) {
    engine_with(EngineConfig {
        threads,
        pin_threads: false,
        pool_mode: mode,
        spare_isolates: 1,
        // The tests' servers are on loopback.
        egress: EgressConfig::open(),
        ..EngineConfig::default()
    })
}

/// One pinned-mode engine thread without the engine's default 5 s cap on
/// every request's CPU, for tests whose debug-build work (RSA-4096
/// generation, 200 000 key imports) can take longer on a busy machine.
pub fn uncapped_engine() -> (Engine, Arc<Recorder>) {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        max_cpu_ms: 0,
        egress: EgressConfig::open(),
        ..EngineConfig::default()
    })
}

/// One unpinned thread with 256 request slots (so a namespace's share is
/// 64) and one spare: the engine the slot-share tests fill.
pub fn slots_engine() -> (Engine, Arc<Recorder>) {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        queue_depth: 256,
        ..EngineConfig::default()
    })
}

pub fn engine_with(config: EngineConfig) -> (Engine, Arc<Recorder>) {
    // Every family of units (Node.js compatibility, …), as the binaries run.
    let config = EngineConfig {
        families: isolane_runtime::families(),
        ..config
    };
    let recorder = Arc::new(Recorder::default());
    let engine = Engine::start(config, recorder.clone()).expect("engine starts");
    (engine, recorder)
}

static REVISION: AtomicUsize = AtomicUsize::new(0);

/// A bundle with a fresh revision.
pub fn bundle(id: &str, script: &str) -> Arc<WorkerBundle> {
    Arc::new(bundle_with(id, script, Limits::default(), &[]))
}

pub fn bundle_with(id: &str, script: &str, limits: Limits, env: &[(&str, &str)]) -> WorkerBundle {
    WorkerBundle {
        assets: None,
        id: id.to_owned(),
        revision: format!("r{}", REVISION.fetch_add(1, Ordering::Relaxed)),
        script: script.to_owned(),
        modules: None,
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
        kv: Default::default(),
        durable_objects: Default::default(),
        sqlite_classes: Default::default(),
        hosted_objects: Default::default(),
        services: Default::default(),
        dispatchers: Default::default(),
        queues: Default::default(),
        d1: Default::default(),
        images: Default::default(),
        loaders: Default::default(),
        no_network: false,
        cpu_ms_per_second: None,
        r2: Default::default(),
        workflows: Default::default(),
        queue_consumers: Default::default(),
        limits,
        allowed_hosts: Vec::new(),
        compat: Default::default(),
        json_env: Default::default(),
    }
}

pub fn get(path: &str) -> http::Request<Body> {
    http::Request::builder()
        .uri(format!("http://example.test{path}"))
        .body(Body::empty())
        .unwrap()
}

/// `path` as a WebSocket handshake (`Upgrade: websocket`).
pub fn upgrade(path: &str) -> http::Request<Body> {
    let mut request = get(path);
    request
        .headers_mut()
        .insert("upgrade", http::HeaderValue::from_static("websocket"));
    request
}

/// The socket of the `101` that answers `upgrade(path)` on `thread`, as a
/// front end takes it.
pub async fn open_socket(
    engine: &Engine,
    thread: usize,
    bundle: &Arc<WorkerBundle>,
    path: &str,
) -> isolane_engine::SocketEnd {
    let response = engine
        .execute(thread, bundle.clone(), upgrade(path))
        .await
        .expect("a response");
    assert_eq!(response.status(), 101);
    response
        .extensions()
        .get::<isolane_engine::WebSocketUpgrade>()
        .expect("the socket rides on the response")
        .take()
        .expect("taken once")
}

/// The Worker's next message on `end` (`None`: the socket ended).
pub async fn next_message(
    end: &mut isolane_engine::SocketEnd,
) -> Option<isolane_engine::SocketMessage> {
    tokio::time::timeout(Duration::from_secs(20), end.from_worker.recv())
        .await
        .expect("the worker answers in time")
}

pub fn post(path: &str, body: Body) -> http::Request<Body> {
    http::Request::builder()
        .method("POST")
        .uri(format!("http://example.test{path}"))
        .body(body)
        .unwrap()
}

/// Status and whole body text (tests only; the engine never buffers).
pub async fn text(result: Result<http::Response<Body>, ExecuteError>) -> (u16, String) {
    let response = result.expect("a response");
    let status = response.status().as_u16();
    let bytes: Bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

pub async fn run(
    engine: &Engine,
    thread: usize,
    bundle: &Arc<WorkerBundle>,
    path: &str,
) -> (u16, String) {
    text(engine.execute(thread, bundle.clone(), get(path)).await).await
}

/// Limits where memory, not CPU, must be what stops a script, even in a
/// debug build on a loaded machine.
pub fn memory_limits(memory_mib: u32) -> Limits {
    Limits {
        cpu_ms: 20_000,
        wall_ms: 60_000,
        memory_mib,
        subrequests: 50,
    }
}

/// The benign neighbour (`HELLO`) answers on thread 0.
pub async fn neighbour_ok(engine: &Engine, neighbour: &Arc<WorkerBundle>) {
    assert_eq!(
        run(engine, 0, neighbour, "/").await,
        (200, "hello".to_owned())
    );
}

pub const HELLO: &str = "export default { fetch() { return new Response('hello'); } };";

/// Counts what the engine reports.
#[derive(Default)]
pub struct Recorder {
    pub hits: AtomicUsize,
    pub misses: AtomicUsize,
    pub created: AtomicUsize,
    /// The thread of each isolate made for a worker.
    pub created_on: Mutex<Vec<usize>>,
    pub from_spare: AtomicUsize,
    pub evictions: Mutex<Vec<EvictionReason>>,
    /// Prewarms that found the revision warm / compiled it.
    pub prewarmed_warm: AtomicUsize,
    pub prewarmed_compiled: AtomicUsize,
    /// Standby prewarms that found no room.
    pub prewarmed_no_room: AtomicUsize,
    pub terminations: Mutex<Vec<TerminationReason>>,
    pub outcomes: Mutex<Vec<Outcome>>,
    pub cpu: Mutex<Vec<Duration>>,
    /// Console lines dropped over a log budget, by budget.
    pub log_dropped: Mutex<Vec<(LogDropReason, u64)>>,
    /// Tail events dropped for slow readers.
    pub tail_dropped: AtomicU64,
    /// Isolates alive (warm and spare) on the last thread that reported.
    pub live_isolates: AtomicUsize,
    /// Service calls sent, by where they ran and kind.
    pub service_calls: Mutex<Vec<(ServicePlace, ServiceCallKind)>>,
}

impl EngineObserver for Recorder {
    fn service_call(&self, place: ServicePlace, kind: ServiceCallKind) {
        self.service_calls.lock().unwrap().push((place, kind));
    }
    fn isolate_cache(&self, _thread: usize, hit: bool) {
        if hit { &self.hits } else { &self.misses }.fetch_add(1, Ordering::Relaxed);
    }
    fn isolate_created(&self, thread: usize, _duration: Duration, from_spare: bool) {
        self.created.fetch_add(1, Ordering::Relaxed);
        self.created_on.lock().unwrap().push(thread);
        if from_spare {
            self.from_spare.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn isolate_prewarmed(&self, _thread: usize, outcome: PrewarmOutcome) {
        match outcome {
            PrewarmOutcome::Warm => &self.prewarmed_warm,
            PrewarmOutcome::Compiled => &self.prewarmed_compiled,
            PrewarmOutcome::NoRoom => &self.prewarmed_no_room,
        }
        .fetch_add(1, Ordering::Relaxed);
    }
    fn isolate_evicted(&self, _thread: usize, reason: EvictionReason) {
        self.evictions.lock().unwrap().push(reason);
    }
    fn request_finished(
        &self,
        _thread: usize,
        outcome: Outcome,
        _duration: Duration,
        cpu: Duration,
    ) {
        self.outcomes.lock().unwrap().push(outcome);
        self.cpu.lock().unwrap().push(cpu);
    }
    fn termination(&self, _thread: usize, reason: TerminationReason) {
        self.terminations.lock().unwrap().push(reason);
    }
    fn log_lines_dropped(&self, _thread: usize, reason: LogDropReason, lines: u64) {
        self.log_dropped.lock().unwrap().push((reason, lines));
    }
    fn tail_events_dropped(&self, events: u64) {
        self.tail_dropped.fetch_add(events, Ordering::Relaxed);
    }
    fn thread_isolates(&self, _thread: usize, live_isolates: usize, _heap_bytes: usize) {
        self.live_isolates.store(live_isolates, Ordering::Relaxed);
    }
}

/// A bundle of `modules`, the first one its main.
pub fn modules_bundle(id: &str, modules: Vec<isolane_engine::Module>) -> Arc<WorkerBundle> {
    let main = modules[0].name.clone();
    let modules = isolane_engine::Modules::new(main, modules).expect("a valid bundle");
    let mut bundle = bundle_with(id, "", memory_limits(128), &[]);
    bundle.modules = Some(Arc::new(modules));
    Arc::new(bundle)
}

pub fn es(name: &str, source: &str) -> isolane_engine::Module {
    isolane_engine::Module::new(name, isolane_engine::ModuleKind::ESModule, source)
}

/// An uninterruptible builtin that runs on well past its limit:
/// `JSON.parse` of a 32 MiB array text checks for termination only when it
/// is done (about 0.2–0.5 s here), long after the 20 ms CPU limit.
pub const POISON: &str = "export default { fetch() { const x = JSON.parse('[' + '0,'.repeat(2**24) + '0]'); return new Response(String(x.length)); } };";

/// The limits `POISON` runs under: its wall limit is shorter than any
/// penalty (4 × an overrun of over 100 ms), so a penalized request is
/// refused rather than kept waiting.
pub fn poison_limits() -> Limits {
    Limits {
        cpu_ms: 20,
        wall_ms: 400,
        ..memory_limits(256)
    }
}

/// Workers by id, as a node's bundle index holds them
/// (`Engine::set_workers`: hosted Durable Object classes, service bindings).
#[derive(Default)]
pub struct Served(Mutex<std::collections::HashMap<String, Arc<WorkerBundle>>>);

impl Served {
    pub fn add(&self, bundle: &Arc<WorkerBundle>) {
        let mut served = self.0.lock().unwrap();
        served.insert(bundle.id.clone(), bundle.clone());
    }
}

impl isolane_engine::WorkerLookup for Served {
    fn current(&self, worker_id: &str) -> Option<Arc<WorkerBundle>> {
        self.0.lock().unwrap().get(worker_id).cloned()
    }
}

/// One pinned thread with one spare isolate, KV on a SQLite store in `dir`.
pub fn kv_engine(dir: &std::path::Path) -> (isolane_engine::Engine, Arc<Recorder>) {
    store_engine(isolane_storage::Store::open_sqlite(dir).unwrap())
}

/// One pinned thread with one spare isolate, KV and Durable Objects on
/// `store`.
pub fn store_engine(store: isolane_storage::Store) -> (isolane_engine::Engine, Arc<Recorder>) {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        store: Some(store),
        ..EngineConfig::default()
    })
}

pub fn kv_bundle(id: &str, script: &str, limits: isolane_engine::Limits) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, script, limits, &[]);
    bundle.kv.insert("KV".to_owned(), "shared".to_owned());
    Arc::new(bundle)
}
