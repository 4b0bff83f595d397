//! [`HostState`]: what the host functions of one isolate share — its worker,
//! its in-flight requests, body streams, pending promises and timers.
//!
//! Lifetime: one per isolate, held in the isolate's slot as `Rc<HostState>`
//! (isolates never leave their thread, so `Rc`/`RefCell` suffice). Borrows of
//! its `RefCell`s are never held across a call into JavaScript or an `.await`.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::memory::Memory;
use crate::outcome::{ExecuteError, Outcome};
use crate::service_call::CallOutbound;
use crate::thread_ctx::ThreadCtx;
use isolane_calltree::{CallTree, budget::Budget, queue::TreeQueues};

use super::error::HostError;
use super::handle::Handles;
use super::id_map::IdMap;
use super::rejection::Rejections;
use crate::unit::UnitStates;

/// CPU budget for compiling and evaluating a worker's top-level code (no
/// request yet): Cloudflare's "Worker startup time" (1 s since October
/// 2025, 400 ms before), plus [`STARTUP_CPU_PER_MIB`] for each MiB of the
/// bundle ([`startup_cpu`]).
pub(crate) const STARTUP_CPU: Duration = Duration::from_millis(1000);

/// What each MiB of a bundle adds to its startup budget: V8 parses and
/// compiles about 30–40 MiB of JavaScript a CPU-second here, so a 64 MiB
/// bundle, which took 1.7–2.2 s of CPU, starts within its 3.6 s
/// (docs/benchmarks.md, section 12), where 1 s left it never answering. The
/// time is the Worker's own turn, charged to its namespace like any other.
pub(crate) const STARTUP_CPU_PER_MIB: Duration = Duration::from_millis(40);

/// The startup budget of a bundle of `bytes` (its modules or script).
pub(crate) fn startup_cpu(bytes: usize) -> Duration {
    let mib = u32::try_from(bytes >> 20).unwrap_or(u32::MAX);
    STARTUP_CPU.saturating_add(STARTUP_CPU_PER_MIB.saturating_mul(mib))
}

/// The answer for the head of a request: a response, or why there is none.
pub(crate) type HeadSender = oneshot::Sender<Result<http::Response<Body>, ExecuteError>>;

/// One request in flight in this isolate (`ctxId` in HOST.md).
pub(crate) struct RequestCtx {
    pub(crate) request_id: Arc<str>,
    head: Option<HeadSender>,
    writer: Option<mpsc::UnboundedSender<WriteOp>>,
    done: Option<oneshot::Sender<()>>,
    deadline: Instant,
    /// Its CPU and subrequests, and its tree of calls (`isolane-calltree`).
    budget: Budget,
    /// The outbound Worker its caller gave it (a dispatched call's): its
    /// every `fetch()` goes there (`isolane-web`'s `fetch.rs`).
    outbound: Option<Arc<CallOutbound>>,
    failure: Option<Outcome>,
    /// `x-isolane-hops` of the incoming request: its outbound fetches carry
    /// one more (`HOPS_HEADER`).
    hops: u32,
    /// What keeps the request open past its `requestDone` (its open
    /// WebSockets, `isolane-web`'s `websocket.rs`).
    holds: u32,
    /// `requestDone` came while held: done when the last hold goes.
    done_wanted: bool,
    /// The client's address, kept only for a WebSocket handshake (its
    /// share of the Worker's sockets, `host/socket_count.rs`).
    client: Option<http::HeaderValue>,
    /// The request's trace, when it is traced (its subrequests' parent).
    trace: Option<crate::RequestTrace>,
}

/// A step of a streamed response body, in order, for its writer task.
pub(crate) enum WriteOp {
    Chunk(Bytes, u32),
    End(Option<String>),
}

/// How a pending host promise settles; turned into JS values in a turn.
pub enum Settlement {
    Undefined,
    Null,
    /// A body chunk: `{ chunk: Uint8Array }` (see [`super::holder`]).
    Chunk(Vec<u8>),
    Fetch(FetchHead),
    /// Rejects with a `TypeError` (a [`HostError`] of that class).
    TypeError(String),
    /// An answer of an API's own kind (a Web Crypto job's, a KV read's, a
    /// socket that opened, …): it makes its JS value itself ([`Settle`]),
    /// so the core names no API family.
    Custom(Box<dyn Settle>),
}

/// A pending op's answer of an API's own kind ([`Settlement::Custom`]),
/// turned into the JS value to resolve (`Ok`) or reject (`Err`) with, in
/// the settling turn.
pub trait Settle: 'static {
    /// The JS value: `Ok` resolves the op's promise, `Err` rejects it.
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>>;
}

impl Settlement {
    /// An answer of an API's own kind.
    pub fn custom(answer: impl Settle) -> Self {
        Self::Custom(Box::new(answer))
    }
}

/// The head of an outbound fetch's response.
pub struct FetchHead {
    pub(crate) status: u16,
    pub(crate) status_text: String,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body_id: u32,
    /// The whole body, when it came with the head (`FetchHead::new`).
    pub(crate) bytes: Option<Bytes>,
    /// The URL that answered (after redirects).
    pub(crate) url: String,
    /// Whether a redirect was followed.
    pub(crate) redirected: bool,
    /// The WebSocket of a `101` answer to a handshake (`isolane-web`'s
    /// `websocket/connect.rs`), 0 for none.
    pub web_socket: u32,
}

enum BodySlot {
    Idle(Body),
    Reading,
}

struct Op {
    ctx: u32,
    resolver: v8::Global<v8::PromiseResolver>,
    task: Option<AbortHandle>,
    /// Outlives its request: a Durable Object's storage op, whose promise
    /// other requests' events may await (`isolane-bindings`' `object.rs`).
    detached: bool,
}

struct Timer {
    ctx: u32,
    task: AbortHandle,
}

/// The isolate a [`HostState`] belongs to, as its host tasks see it. Host
/// callbacks never start a turn; a task they spawned gets back into
/// JavaScript, once its I/O is done, only through these. `WorkerIsolate`
/// implements it: the host names its isolate only through this trait, so
/// it does not depend on the isolate that holds it.
pub trait IsolateTurns {
    /// The isolate's host state.
    fn host(&self) -> &HostState;

    /// Charges CPU time spent off this thread for request `ctx` (an
    /// offloaded Web Crypto job, `isolane-web`'s `crypto/offload.rs`). Past the
    /// request's CPU limit the request ends as `cpu_limit`, alone (the
    /// isolate stays: none of its JavaScript was stopped); returns whether
    /// the request may go on.
    fn charge_offloaded_cpu(&self, ctx: u32, cpu: Duration) -> bool;

    /// Settles the promise of a finished op, in a turn charged to its request.
    fn settle(&self, op: u32, settlement: Settlement);

    /// A timer armed with `host.timerStart` is due.
    fn fire_timer(&self, id: u32);

    /// The client went away before the response was complete:
    /// `internal.requestAborted(ctxId)` aborts the request's signal.
    fn request_aborted(&self, ctx: u32);

    /// A message (or the close) of WebSocket `socket` for request `ctx`:
    /// one turn, with the request's budgets topped up.
    fn socket_event(&self, ctx: u32, socket: u32, message: crate::socket::SocketMessage);
}

pub struct HostState {
    pub(crate) thread: Rc<ThreadCtx>,
    pub(crate) worker: OnceCell<Arc<WorkerBundle>>,
    /// Back to the isolate, for tasks that settle promises later.
    pub(crate) me: Weak<dyn IsolateTurns>,
    /// The isolate's memory budget: host-made buffers are charged to it.
    pub(crate) memory: Arc<Memory>,
    now_ms: Cell<f64>,
    current: Cell<u32>,
    next_id: Cell<u32>,
    requests: RefCell<IdMap<RequestCtx>>,
    bodies: RefCell<IdMap<(u32, BodySlot)>>,
    ops: RefCell<IdMap<Op>>,
    timers: RefCell<IdMap<Timer>>,
    /// Promises rejected without a handler in the current turn.
    pub(crate) rejections: Rejections,
    /// Native resources JavaScript holds: keys, hashers, codecs, rewrites
    /// (`host/handle.rs`).
    pub(crate) handles: Rc<Handles>,
    /// The Web API units' own state (`src/unit.rs`).
    units: UnitStates,
}

impl HostState {
    pub(crate) fn new(
        thread: Rc<ThreadCtx>,
        me: Weak<dyn IsolateTurns>,
        memory: Arc<Memory>,
    ) -> Self {
        let handles = Handles::new(memory.clone());
        Self {
            thread,
            worker: OnceCell::new(),
            me,
            memory,
            now_ms: Cell::new(0.0),
            current: Cell::new(0),
            next_id: Cell::new(0),
            requests: RefCell::default(),
            bodies: RefCell::default(),
            ops: RefCell::default(),
            timers: RefCell::default(),
            rejections: Rejections::default(),
            handles,
            units: UnitStates::new(super::units()),
        }
    }

    /// The Worker loaded in this isolate, once it is.
    pub fn worker(&self) -> Option<&Arc<WorkerBundle>> {
        self.worker.get()
    }

    /// The watchdog's tripwire of this isolate's thread (for a [`Stop`]
    /// of work done on the thread).
    ///
    /// [`Stop`]: crate::watchdog::Stop
    pub fn tripwire(&self) -> crate::watchdog::Tripwire {
        self.thread.watchdog.tripwire()
    }

    /// The engine's pool of slots for expensive jobs off the isolate's
    /// thread (Web Crypto's RSA key generation and PBKDF2:
    /// [`crate::api::offload`]).
    pub fn offload_pool(&self) -> &crate::crypto_pool::Pool {
        &self.thread.shared.crypto
    }

    /// The engine's egress policy (what outbound connections may reach).
    pub fn egress(&self) -> &Arc<isolane_egress::EgressPolicy> {
        &self.thread.shared.egress
    }

    /// The node's store for the bindings' data (`EngineConfig::store`);
    /// `None` when the node has none.
    pub fn store(&self) -> Option<&isolane_storage::Store> {
        self.thread.config.store.as_ref()
    }

    /// The engine's observer, for an API's metrics (called on this thread
    /// or a task of it).
    pub fn observer(&self) -> &Arc<dyn crate::observer::EngineObserver> {
        &self.thread.observer
    }

    /// The isolate's memory budget, to charge host-made copies to from a
    /// task ([`crate::api::Reservation`]).
    pub fn memory(&self) -> &Arc<crate::memory::Memory> {
        &self.memory
    }

    /// The roots outbound TLS trusts: the public web PKI and the node's
    /// extra CAs (what `fetch` trusts).
    pub fn tls_roots(&self) -> &rustls::RootCertStore {
        &self.thread.shared.roots
    }

    /// A place for a new outbound socket among the Worker's sockets on
    /// this thread (its `max_sockets_per_worker`, shared with its
    /// WebSockets: `socket_count.rs`); given back when the slot drops.
    pub fn socket_slot(&self) -> Result<super::socket_count::Slot, super::socket_count::Refused> {
        self.client_socket_slot(None)
    }

    /// A place for a new socket of `client` (an accepted WebSocket's, its
    /// share of the Worker's sockets too), as [`Self::socket_slot`].
    pub fn client_socket_slot(
        &self,
        client: Option<&http::HeaderValue>,
    ) -> Result<super::socket_count::Slot, super::socket_count::Refused> {
        let config = &self.thread.config.websocket;
        super::socket_count::open(self.worker_id(), client, config)
    }

    /// The engine's WebSocket limits (`EngineConfig::websocket`).
    pub fn websocket_config(&self) -> crate::socket::WebSocketConfig {
        self.thread.config.websocket
    }

    /// The index of this isolate's engine thread (logs, the observer).
    pub fn thread_index(&self) -> usize {
        self.thread.index
    }

    /// Counts a connection the egress policy refused (the observer's
    /// `egress_refused`, for this thread).
    pub fn egress_refused(&self, reason: isolane_egress::Refusal) {
        let thread = &self.thread;
        thread.observer.egress_refused(thread.index, reason);
    }

    /// The isolate, for a task that settles a promise later.
    pub fn turns(&self) -> Weak<dyn IsolateTurns> {
        self.me.clone()
    }

    /// The isolate's native resources JavaScript holds (`host/handle.rs`).
    pub fn handles(&self) -> &super::handle::Handles {
        &self.handles
    }

    /// The state a unit declared (`Unit::state`); `None` if none did.
    pub fn state<T: 'static>(&self) -> Option<&T> {
        self.units.get::<T>()
    }

    /// The engine's `T`, shared by its threads ([`EngineState`]): made
    /// from the engine's config on the first ask, the same one after.
    ///
    /// [`EngineState`]: crate::thread_ctx::EngineState
    pub fn engine_state<T: crate::thread_ctx::EngineState>(&self) -> Arc<T> {
        self.thread
            .shared
            .states
            .get_or_start::<T>(&self.thread.config)
    }

    /// The state of the isolate `scope` belongs to.
    pub fn get(scope: &mut v8::PinScope<'_, '_>) -> Option<Rc<HostState>> {
        scope.get_slot::<Rc<HostState>>().cloned()
    }

    fn next_id(&self) -> u32 {
        let id = self.next_id.get().wrapping_add(1).max(1);
        self.next_id.set(id);
        id
    }

    pub fn worker_id(&self) -> &str {
        self.worker.get().map_or("", |w| w.id.as_str())
    }

    pub fn revision(&self) -> &str {
        self.worker.get().map_or("", |w| w.revision.as_str())
    }

    // --- clock and current request ---

    /// Advances the coarse clock: called only at the start of a turn, i.e. at
    /// an I/O boundary, and truncated to whole milliseconds.
    pub(crate) fn tick_clock(&self) {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        self.now_ms.set(ms as f64);
    }

    pub fn now_ms(&self) -> f64 {
        self.now_ms.get()
    }

    pub(crate) fn set_current(&self, ctx: u32) {
        self.current.set(ctx);
    }

    pub fn current(&self) -> u32 {
        self.current.get()
    }

    pub(crate) fn request_id(&self, ctx: u32) -> Option<Arc<str>> {
        self.requests
            .borrow()
            .get(&ctx)
            .map(|r| r.request_id.clone())
    }

    // --- requests ---

    pub(crate) fn begin_request(
        &self,
        request_id: Arc<str>,
        head: HeadSender,
        done: oneshot::Sender<()>,
        cpu_limit: Duration,
        deadline: Instant,
        hops: u32,
    ) -> u32 {
        let id = self.next_id();
        self.requests.borrow_mut().insert(
            id,
            RequestCtx {
                request_id,
                head: Some(head),
                writer: None,
                done: Some(done),
                deadline,
                budget: Budget::new(cpu_limit),
                outbound: None,
                failure: None,
                hops,
                holds: 0,
                done_wanted: false,
                client: None,
                trace: None,
            },
        );
        id
    }

    /// Traces request `ctx`: its subrequests get spans under `trace`.
    pub(crate) fn set_trace(&self, ctx: u32, trace: crate::RequestTrace) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.trace = Some(trace);
        }
    }

    /// The span of a subrequest of request `ctx`, when it is traced, with
    /// its `traceparent` written into `headers`.
    pub fn subrequest_span(
        &self,
        ctx: u32,
        method: &http::Method,
        url: &url::Url,
        headers: &mut http::HeaderMap,
    ) -> Option<tracing::Span> {
        let requests = self.requests.borrow();
        let trace = requests.get(&ctx)?.trace.as_ref()?;
        Some(trace.subrequest(method, url, headers))
    }

    /// The hop count outbound fetches of request `ctx` carry.
    pub fn outbound_hops(&self, ctx: u32) -> u32 {
        self.requests
            .borrow()
            .get(&ctx)
            .map_or(1, |r| r.hops.saturating_add(1))
    }

    /// Raises request `ctx`'s hop count to at least `hops`: a callback
    /// into it (a call on an RPC stub it passed) made from a request that
    /// deep, so that a chain through callbacks meets the depth bound too.
    pub fn raise_hops(&self, ctx: u32, hops: u32) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.hops = r.hops.max(hops);
        }
    }

    /// Whether request `ctx` is still in flight here.
    pub fn request_live(&self, ctx: u32) -> bool {
        self.requests.borrow().contains_key(&ctx)
    }

    /// CPU time the request may still use (the startup budget outside requests).
    pub fn cpu_remaining(&self, ctx: u32) -> Duration {
        match self.requests.borrow().get(&ctx) {
            Some(r) => r.budget.cpu_remaining(),
            None => self.startup_cpu(),
        }
    }

    /// The CPU budget of this isolate's top-level code: [`startup_cpu`] of
    /// its Worker's bundle ([`STARTUP_CPU`] before one is loaded).
    pub fn startup_cpu(&self) -> Duration {
        self.worker
            .get()
            .map_or(STARTUP_CPU, |w| startup_cpu(w.source_bytes()))
    }

    /// When the request's wall time runs out (`None` outside requests).
    pub fn deadline(&self, ctx: u32) -> Option<Instant> {
        self.requests.borrow().get(&ctx).map(|r| r.deadline)
    }

    pub(crate) fn add_cpu(&self, ctx: u32, cpu: Duration) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.budget.charge(cpu);
        }
    }

    /// Caps request `ctx`'s subrequests at `cap` (its caller's lower
    /// limit for the call): [`HostState::take_subrequest`] counts against
    /// the lower of it and the Worker's own.
    pub(crate) fn cap_subrequests(&self, ctx: u32, cap: u32) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.budget.cap_subrequests(cap);
        }
    }

    /// The CPU limit request `ctx` runs with (its Worker's, or lower when
    /// its caller lowered it), or `None` when it is gone.
    pub(crate) fn cpu_limit(&self, ctx: u32) -> Option<Duration> {
        Some(self.requests.borrow().get(&ctx)?.budget.cpu_limit())
    }

    /// Request `ctx`'s tree of calls, made from what it used so far at its
    /// first call (`isolane-calltree`).
    pub(crate) fn call_tree(&self, ctx: u32) -> Option<Arc<CallTree>> {
        let worker = self.worker.get();
        let ns = worker.map_or("", |w| w.namespace());
        let queue = || TreeQueues::new(&self.thread.shared.call_queues, self.thread.index, ns);
        let mut requests = self.requests.borrow_mut();
        let budget = &mut requests.get_mut(&ctx)?.budget;
        Some(budget.tree(worker.map_or(0, |w| w.limits.subrequests), queue))
    }

    /// `Some(not failed yet)` when request `ctx`'s tree used its CPU.
    pub(crate) fn tree_cpu_spent(&self, ctx: u32) -> Option<bool> {
        let requests = self.requests.borrow();
        let r = requests.get(&ctx)?;
        r.budget.tree_cpu_spent().then_some(r.failure.is_none())
    }

    /// Puts request `ctx` (a service call) in its caller's tree of calls.
    pub(crate) fn join_call_tree(&self, ctx: u32, tree: Arc<CallTree>) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.budget.join(tree);
        }
    }

    /// Sends request `ctx`'s every `fetch()` through `outbound` (a
    /// dispatched call's outbound Worker, `host/service.rs`).
    pub(crate) fn set_call_outbound(&self, ctx: u32, outbound: Arc<CallOutbound>) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.outbound = Some(outbound);
        }
    }

    /// The outbound Worker request `ctx`'s caller gave it, if any.
    pub fn call_outbound(&self, ctx: u32) -> Option<Arc<CallOutbound>> {
        self.requests.borrow().get(&ctx)?.outbound.clone()
    }

    /// Counts one subrequest; `Err(limit)` when the request has used them
    /// all (`limit` the Worker's, or the lower cap its caller set).
    pub fn take_subrequest(&self, ctx: u32, limit: u32) -> Result<(), u32> {
        let mut requests = self.requests.borrow_mut();
        let Some(r) = requests.get_mut(&ctx) else {
            return Err(limit);
        };
        r.budget.take_subrequest(limit)
    }

    /// [`HostState::take_subrequest`] against the Worker's own limit, for
    /// a call (a service or object call, a lookup): a `TypeError` past it.
    pub fn take_call(&self, ctx: u32) -> Result<(), HostError> {
        let limit = self.worker().map_or(0, |w| w.limits.subrequests);
        (self.take_subrequest(ctx, limit))
            .map_err(|limit| HostError::type_error(super::error::too_many(limit)))
    }

    /// [`HostState::take_subrequest`] for a `fetch()`, with the outbound
    /// Worker it goes to when the request has one (one look-up).
    pub fn take_fetch(&self, ctx: u32, limit: u32) -> Result<Option<Arc<CallOutbound>>, u32> {
        let mut requests = self.requests.borrow_mut();
        let Some(r) = requests.get_mut(&ctx) else {
            return Err(limit);
        };
        r.budget.take_subrequest(limit)?;
        Ok(r.outbound.clone())
    }

    /// Sends the response head; false when the request is gone or answered.
    pub fn send_head(&self, ctx: u32, response: http::Response<Body>) -> bool {
        let head = self
            .requests
            .borrow_mut()
            .get_mut(&ctx)
            .and_then(|r| r.head.take());
        match head {
            Some(head) => head.send(Ok(response)).is_ok(),
            None => false,
        }
    }

    pub(crate) fn set_writer(&self, ctx: u32, writer: mpsc::UnboundedSender<WriteOp>) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.writer = Some(writer);
        }
    }

    pub(crate) fn writer(&self, ctx: u32) -> Option<mpsc::UnboundedSender<WriteOp>> {
        self.requests
            .borrow()
            .get(&ctx)
            .and_then(|r| r.writer.clone())
    }

    /// Names the client of request `ctx` (a WebSocket handshake's).
    pub(crate) fn set_client(&self, ctx: u32, client: http::HeaderValue) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.client = Some(client);
        }
    }

    /// The client of request `ctx`, if it was named.
    pub fn client(&self, ctx: u32) -> Option<http::HeaderValue> {
        self.requests
            .borrow()
            .get(&ctx)
            .and_then(|r| r.client.clone())
    }

    /// Ends the request with `error`: as the head if none was sent yet, else
    /// by aborting the streamed body. Then signals it done.
    pub fn fail_request(&self, ctx: u32, error: ExecuteError) {
        let (head, writer, done) = {
            let mut requests = self.requests.borrow_mut();
            let Some(r) = requests.get_mut(&ctx) else {
                return;
            };
            r.failure.get_or_insert(error.outcome());
            (r.head.take(), r.writer.take(), r.done.take())
        };
        let message = error.to_string();
        if let Some(head) = head {
            let _ = head.send(Err(error));
        }
        if let Some(writer) = writer {
            let _ = writer.send(WriteOp::End(Some(message)));
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Fails every request in flight (the isolate is being torn down).
    pub(crate) fn fail_all(&self, error: impl Fn() -> ExecuteError) {
        let ids: Vec<u32> = self.requests.borrow().keys().copied().collect();
        for ctx in ids {
            self.fail_request(ctx, error());
        }
        self.abort_tasks(None);
    }

    /// `requestDone`: the worker finished everything for the request
    /// (done later if something holds it open); `busy`: not after all (a
    /// WebSocket event's `waitUntil` work), until it says so again. False
    /// when held: [`Self::lingered`] then tells it ended.
    pub(crate) fn request_done(&self, ctx: u32, busy: bool) -> bool {
        let mut requests = self.requests.borrow_mut();
        if let Some(r) = requests.get_mut(&ctx).filter(|r| r.holds > 0 || busy) {
            r.done_wanted = !busy;
            return false;
        }
        if let Some(done) = requests.get_mut(&ctx).and_then(|r| r.done.take()) {
            let _ = done.send(());
        }
        true
    }

    /// Whether request `ctx` was held past its `requestDone` (the end of
    /// its WebSocket ended it): its end hooks in JavaScript still wait.
    pub(crate) fn lingered(&self, ctx: u32) -> bool {
        self.requests
            .borrow()
            .get(&ctx)
            .is_some_and(|r| r.done_wanted)
    }

    /// Keeps request `ctx` open past its `requestDone` (an open WebSocket).
    pub fn hold(&self, ctx: u32) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.holds += 1;
        }
    }

    /// Lets go of one hold; the request is done if it said so meanwhile.
    pub fn release_hold(&self, ctx: u32) {
        let done = self.requests.borrow_mut().get_mut(&ctx).and_then(|r| {
            r.holds = r.holds.saturating_sub(1);
            if r.holds == 0 && r.done_wanted {
                return r.done.take();
            }
            None
        });
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Whether something holds request `ctx` open (no wall limit then:
    /// each event gets its own, see [`Self::top_up`]).
    pub(crate) fn held(&self, ctx: u32) -> bool {
        self.requests
            .borrow()
            .get(&ctx)
            .is_some_and(|r| r.holds > 0)
    }

    /// A new event for request `ctx` (a WebSocket message): a fresh CPU
    /// budget and wall time for it, as Cloudflare tops up per event.
    pub(crate) fn top_up(&self, ctx: u32, wall: Duration) {
        if let Some(r) = self.requests.borrow_mut().get_mut(&ctx) {
            r.budget.top_up();
            r.deadline = Instant::now() + wall;
        }
    }

    /// Forgets the request: its pending ops, timers and bodies go with it.
    /// Returns the CPU time it used and how it failed, if it did.
    pub(crate) fn finish_request(&self, ctx: u32) -> (Duration, Option<Outcome>) {
        let finished = self.requests.borrow_mut().remove(&ctx);
        self.abort_tasks(Some(ctx));
        finished.map_or((Duration::ZERO, None), |r| (r.budget.cpu(), r.failure))
    }

    /// Aborts the tasks (and drops the promises, bodies, timers) of one
    /// request, or of all when `ctx` is `None`.
    fn abort_tasks(&self, ctx: Option<u32>) {
        let matches = |owner: u32| ctx.is_none_or(|c| c == owner);
        let ops: Vec<Op> = {
            let mut map = self.ops.borrow_mut();
            let ids: Vec<u32> = map
                .iter()
                .filter(|(_, op)| ctx.is_none() || (matches(op.ctx) && !op.detached))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter().filter_map(|id| map.remove(&id)).collect()
        };
        for op in ops {
            if let Some(task) = op.task {
                task.abort();
            }
        }
        let timers: Vec<Timer> = {
            let mut map = self.timers.borrow_mut();
            let ids: Vec<u32> = map
                .iter()
                .filter(|(_, t)| matches(t.ctx))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter().filter_map(|id| map.remove(&id)).collect()
        };
        for timer in timers {
            timer.task.abort();
        }
        self.handles.drop_for(ctx);
        self.units.drop_for(ctx);
        self.bodies
            .borrow_mut()
            .retain(|_, (owner, _)| !matches(*owner));
    }

    /// Drops everything that refers into the isolate (promise resolvers are
    /// `v8::Global`s), before the isolate itself is disposed.
    pub(crate) fn clear(&self) {
        self.fail_all(|| ExecuteError::Canceled {
            reason: "the isolate was discarded",
        });
        self.requests.borrow_mut().clear();
        self.rejections.clear();
    }

    // --- bodies ---

    /// Registers an incoming body stream for `bodyRead`; returns its id.
    pub(crate) fn register_body(&self, ctx: u32, body: Body) -> u32 {
        let id = self.next_id();
        self.bodies
            .borrow_mut()
            .insert(id, (ctx, BodySlot::Idle(body)));
        id
    }

    /// Takes a body out for one read; `None` if unknown or already reading.
    pub(crate) fn take_body(&self, id: u32) -> Option<Body> {
        let mut bodies = self.bodies.borrow_mut();
        let (_, slot) = bodies.get_mut(&id)?;
        match std::mem::replace(slot, BodySlot::Reading) {
            BodySlot::Idle(body) => Some(body),
            BodySlot::Reading => None,
        }
    }

    /// Puts a body back after a read (unless it was canceled meanwhile).
    pub(crate) fn return_body(&self, id: u32, body: Body) {
        if let Some((_, slot)) = self.bodies.borrow_mut().get_mut(&id) {
            *slot = BodySlot::Idle(body);
        }
    }

    pub(crate) fn drop_body(&self, id: u32) {
        self.bodies.borrow_mut().remove(&id);
    }

    // --- pending promises ---

    pub fn add_op(&self, ctx: u32, resolver: v8::Global<v8::PromiseResolver>) -> u32 {
        self.insert_op(ctx, resolver, false)
    }

    /// An op that is not dropped when its request ends (only with the
    /// isolate): it settles in a turn of `ctx` even after `ctx` is done.
    pub fn add_detached_op(&self, ctx: u32, resolver: v8::Global<v8::PromiseResolver>) -> u32 {
        self.insert_op(ctx, resolver, true)
    }

    fn insert_op(
        &self,
        ctx: u32,
        resolver: v8::Global<v8::PromiseResolver>,
        detached: bool,
    ) -> u32 {
        let id = self.next_id();
        self.ops.borrow_mut().insert(
            id,
            Op {
                ctx,
                resolver,
                task: None,
                detached,
            },
        );
        id
    }

    pub fn set_op_task(&self, op: u32, task: AbortHandle) {
        if let Some(entry) = self.ops.borrow_mut().get_mut(&op) {
            entry.task = Some(task);
        }
    }

    /// The resolver of a pending op and the request it belongs to.
    pub fn take_op(&self, op: u32) -> Option<(u32, v8::Global<v8::PromiseResolver>)> {
        self.ops
            .borrow_mut()
            .remove(&op)
            .map(|o| (o.ctx, o.resolver))
    }

    pub fn op_ctx(&self, op: u32) -> Option<u32> {
        self.ops.borrow().get(&op).map(|o| o.ctx)
    }

    // --- timers ---

    /// Timer `id`'s task (`isolane-web`'s `timerStart`) belongs to
    /// request `ctx`: aborted with it, or when `id` is armed again.
    pub fn add_timer(&self, id: u32, ctx: u32, task: AbortHandle) {
        if let Some(old) = self.timers.borrow_mut().insert(id, Timer { ctx, task }) {
            old.task.abort();
        }
    }

    /// Disarms timer `id`; unknown ids are ignored.
    pub fn cancel_timer(&self, id: u32) {
        let timer = self.timers.borrow_mut().remove(&id);
        if let Some(timer) = timer {
            timer.task.abort();
        }
    }

    /// Removes a due timer; returns the request it belongs to.
    pub(crate) fn fire_timer(&self, id: u32) -> Option<u32> {
        self.timers.borrow_mut().remove(&id).map(|t| t.ctx)
    }
}
