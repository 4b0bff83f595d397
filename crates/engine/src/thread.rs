//! One engine thread: pinned to a core, with its own current-thread tokio
//! runtime and `LocalSet`, its own isolate pool and its own watchdog.
//!
//! Requests arrive over a bounded channel (filled with `try_send`, so a full
//! thread fails fast with `Overloaded`), and each runs as a local task. No
//! lock is taken on the request path in `pinned` and `legacy` modes.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::config::{EngineConfig, PoolMode};
use crate::host::IsolateTurns;
use crate::invocation::Watch;
use crate::isolate::{TurnError, WorkerIsolate};
use crate::job::Job;
use crate::limits::CpuClock;
use crate::object_call::ObjectCall;
use crate::observer::{EngineObserver, EvictionReason, TerminationReason};
use crate::outcome::{ExecuteError, Outcome};
use crate::pool::{Evicted, Pool};
use crate::schedule::{Refusal, Schedule, Start};
use crate::thread_ctx::{EngineShared, ThreadCtx};
use crate::watchdog::Watchdog;

/// How long a shutting-down thread waits for requests in flight.
const DRAIN: Duration = Duration::from_secs(10);

/// How long a thread with spares left must see no request arrive or end
/// before it makes another spare (~4 ms of CPU that a request arriving
/// meanwhile would wait behind).
const REFILL_QUIET: Duration = Duration::from_millis(2);

struct ThreadState {
    ctx: Rc<ThreadCtx>,
    pool: RefCell<Pool>,
    shared: Arc<EngineShared>,
    seq: Cell<u64>,
    in_flight: Cell<usize>,
    idle: Notify,
    /// A request took a spare: the job loop refills when the thread is idle.
    spare_taken: Notify,
    /// Making a spare failed (a broken snapshot, out of memory): stop trying.
    refill_failed: Cell<bool>,
    /// When a request last arrived or ended.
    last_activity: Cell<Instant>,
    /// Requests a namespace may always have in flight, beyond the thread's
    /// `queue_depth` slots if others hold them (`schedule.rs`).
    guarantee: usize,
    /// A namespace with requests waiting fell under its guarantee.
    under_guarantee: Notify,
}

/// Everything a thread is started with.
pub(crate) struct ThreadStart {
    pub(crate) index: usize,
    pub(crate) core: Option<core_affinity::CoreId>,
    pub(crate) config: EngineConfig,
    pub(crate) observer: Arc<dyn EngineObserver>,
    pub(crate) snapshot: &'static [u8],
    pub(crate) jobs: mpsc::Receiver<Job>,
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) shared: Arc<EngineShared>,
    pub(crate) ready: std::sync::mpsc::SyncSender<Result<(), String>>,
}

/// The body of an engine thread. Thread affinity: spawned by `Engine::start`
/// after `platform::init`, so it may run JavaScript (see `platform.rs`).
pub(crate) fn run(start: ThreadStart) {
    let ThreadStart {
        index,
        core,
        config,
        observer,
        snapshot,
        jobs,
        shutdown,
        shared,
        ready,
    } = start;
    if let Some(core) = core
        && !core_affinity::set_for_current(core)
    {
        tracing::warn!(
            thread = index,
            core = core.id,
            "could not pin engine thread"
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = ready.send(Err(format!("tokio runtime: {error}")));
            return;
        }
    };
    if let Some(slot) = shared.runtimes.get(index) {
        let _ = slot.set(runtime.handle().clone());
    }
    let Some(clock) = CpuClock::current_thread() else {
        let _ = ready.send(Err("no thread CPU clock".to_owned()));
        return;
    };
    let watchdog = match Watchdog::start(index, clock) {
        Ok(watchdog) => watchdog,
        Err(error) => {
            let _ = ready.send(Err(format!("watchdog: {error}")));
            return;
        }
    };
    let ctx = Rc::new(ThreadCtx {
        index,
        shared: shared.clone(),
        observer,
        client: crate::egress::client(
            shared.egress.clone(),
            shared.roots.clone(),
            crate::egress::Versions::All,
        ),
        upgrade_client: crate::egress::client(
            shared.egress.clone(),
            shared.roots.clone(),
            crate::egress::Versions::Http1,
        ),
        watchdog,
        snapshot,
        config: config.clone(),
        schedule: RefCell::new(Schedule::default()),
        node_log: Default::default(),
        turn_slot: config.turn_map.as_ref().and_then(|map| map.slot(index)),
    });
    let state = Rc::new(ThreadState {
        pool: RefCell::new(Pool::new(
            config.isolates_per_thread,
            config.heap_budget_bytes,
        )),
        ctx,
        shared,
        seq: Cell::new(0),
        in_flight: Cell::new(0),
        idle: Notify::new(),
        spare_taken: Notify::new(),
        refill_failed: Cell::new(false),
        last_activity: Cell::new(Instant::now()),
        guarantee: crate::schedule::guaranteed(config.queue_depth),
        under_guarantee: Notify::new(),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve_jobs(state.clone(), jobs, shutdown, ready));
    // Isolates go before the LocalSet and runtime that their tasks live on.
    let isolates = state.pool.borrow_mut().drain();
    for _ in &isolates {
        state
            .ctx
            .observer
            .isolate_evicted(index, EvictionReason::Shutdown);
    }
    drop(isolates);
    state.ctx.observer.thread_isolates(index, 0, 0);
    drop(local);
    tracing::debug!(thread = index, "engine thread stopped");
}

async fn serve_jobs(
    state: Rc<ThreadState>,
    mut jobs: mpsc::Receiver<Job>,
    mut shutdown: watch::Receiver<bool>,
    ready: std::sync::mpsc::SyncSender<Result<(), String>>,
) {
    // One spare before the thread says it is ready: the first new worker
    // finds it. The others are made once the thread is idle (the loop
    // below), not before the process can answer: each costs an isolate
    // creation (`isolane dev` with 2 threads × 2 spares made 4 of them before
    // its first answer).
    if spares_short(&state) {
        refill_one(&state);
    }
    let _ = ready.send(Ok(()));
    let permits = Arc::new(Semaphore::new(state.ctx.config.queue_depth.max(1)));
    loop {
        // Every request that arrived goes to its namespace's queue (or is
        // refused) before the next one to start is chosen (`schedule.rs`).
        while let Ok(job) = jobs.try_recv() {
            let alone = jobs.is_empty();
            receive(&state, job, &permits, alone);
        }
        // Bound requests in flight too: while they are all busy, new ones
        // wait in their queues (but a namespace under its guarantee starts
        // beyond them, `schedule.rs`), and once a namespace's share is
        // full, or the channel is, `execute` fails fast.
        let permit = permits.clone().try_acquire_owned().ok();
        let job = {
            let mut schedule = state.ctx.schedule.borrow_mut();
            match permit {
                Some(_) => schedule.next(Instant::now()),
                None => schedule.next_under(Instant::now(), state.guarantee),
            }
        };
        if let Some(job) = job {
            start(&state, job, permit);
            // Others wait: let this one's first turn, and the turns
            // already due, run before choosing again.
            if !state.ctx.schedule.borrow().is_empty() {
                tokio::task::yield_now().await;
            }
            continue;
        }
        let waiting = !state.ctx.schedule.borrow().is_empty();
        let release_at = state
            .ctx
            .schedule
            .borrow()
            .next_release()
            .map(tokio::time::Instant::from_std);
        // Spares are refilled here, off every request's critical path: one
        // isolate at a time, only once the tasks already runnable had their
        // turn, no request waits in the queue, none is in flight (its timers
        // and I/O would wait for the refill) and none arrived or ended for
        // `REFILL_QUIET` (a burst's next request is likely close behind) —
        // unless no spare is left, when the next new worker would pay for
        // one anyway.
        let mut refill_at = None;
        if spares_short(&state) && jobs.is_empty() && !waiting && refill_now(&state) {
            let due = refill_due(&state);
            if due > Instant::now() {
                refill_at = Some(tokio::time::Instant::from_std(due));
            } else {
                tokio::task::yield_now().await;
                if *shutdown.borrow() {
                    break;
                }
                if jobs.is_empty() && refill_now(&state) && refill_due(&state) <= Instant::now() {
                    refill_one(&state);
                }
                continue;
            }
        }
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            // A slot came free for a request that waits.
            permit = permits.clone().acquire_owned(), if waiting && permits.available_permits() == 0 => {
                if permit.is_err() {
                    break;
                }
            }
            // A namespace with requests waiting fell under its guarantee.
            () = state.under_guarantee.notified(), if waiting => {}
            job = jobs.recv() => match job {
                Some(job) => receive(&state, job, &permits, jobs.is_empty()),
                None => break,
            },
            // A penalty ended (`schedule.rs`).
            () = sleep_until(release_at) => {}
            // A request used a spare, or the last request in flight ended,
            // or the thread has been quiet long enough: back to the top to
            // refill when idle.
            () = state.spare_taken.notified() => {}
            () = state.idle.notified(), if spares_short(&state) => {}
            () = sleep_until(refill_at) => {}
        }
    }
    jobs.close();
    let deadline = tokio::time::Instant::now() + DRAIN;
    while state.in_flight.get() > 0 {
        if tokio::time::timeout_at(deadline, state.idle.notified())
            .await
            .is_err()
        {
            tracing::warn!(
                thread = state.ctx.index,
                in_flight = state.in_flight.get(),
                "shutdown: abandoning requests in flight"
            );
            break;
        }
    }
}

/// A request arrived: queued for its namespace, or refused at once when
/// the namespace has used its share of the thread's slots or is penalized
/// for longer than the request may wait (`schedule.rs`). When `alone` (no
/// other request arrived with it), started at once when nothing is queued
/// and a slot is free: it is the one the schedule would choose. When every
/// slot is taken, started at once beyond them if its namespace is under
/// its guarantee.
fn receive(state: &Rc<ThreadState>, job: Job, permits: &Arc<Semaphore>, alone: bool) {
    if job
        .request
        .extensions()
        .get::<crate::retire::Retire>()
        .is_some()
    {
        retire(state, &job.bundle.id);
        return;
    }
    let now = Instant::now();
    state.last_activity.set(now);
    let Some(job) = forward_if_shared(state, job) else {
        return;
    };
    // A Durable Object call is not refused for its namespace's share: its
    // caller holds a slot of its own (on another thread or node), which
    // bounds such calls, and refusing it would fail a request already
    // admitted (`object_call.rs`). It waits in its namespace's queue.
    let share = if job.request.extensions().get::<ObjectCall>().is_some() {
        usize::MAX
    } else {
        worker_slots(&state.ctx.config)
    };
    let permit = if alone {
        permits.clone().try_acquire_owned().ok()
    } else {
        None
    };
    let how = match (&permit, permits.available_permits()) {
        (Some(_), _) => Start::Slot,
        (None, 0) => Start::Full {
            guarantee: state.guarantee,
        },
        (None, _) => Start::Later,
    };
    let admitted = state.ctx.schedule.borrow_mut().admit(job, share, now, how);
    let (job, refusal) = match admitted {
        Ok(Some(job)) => {
            // With its slot, or beyond the slots on its guarantee.
            start(state, job, permit);
            return;
        }
        Ok(None) => return,
        Err(refused) => refused,
    };
    let ctx = &state.ctx;
    let error = match refusal {
        Refusal::Full => ExecuteError::Overloaded { thread: ctx.index },
        Refusal::Held { remaining } => ExecuteError::Quarantined {
            retry_after_secs: u32::try_from(remaining.as_millis().div_ceil(1000).max(1))
                .unwrap_or(u32::MAX),
        },
    };
    tracing::debug!(worker.id = %job.bundle.id, thread = ctx.index, reason = error.reason(), "refused: the namespace has used its share of the thread");
    ctx.observer
        .request_finished(ctx.index, error.outcome(), Duration::ZERO, Duration::ZERO);
    let _ = job.reply.send(Err(error));
}

/// Shared mode: consult the engine-wide directory (the global lock) and hand
/// the job to the thread that holds the worker's isolate. Returns the job
/// when it runs here.
fn forward_if_shared(state: &ThreadState, mut job: Job) -> Option<Job> {
    if state.ctx.config.pool_mode != PoolMode::Shared || job.forwarded {
        return Some(job);
    }
    let me = state.ctx.index;
    let owner = {
        let mut directory = state
            .shared
            .directory
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *directory.entry(job.bundle.id.clone()).or_insert(me)
    };
    if owner == me {
        return Some(job);
    }
    job.forwarded = true;
    let Some(sender) = state.shared.senders.get(owner) else {
        return Some(job);
    };
    if let Err(error) = sender.try_send(job) {
        let (job, failure) = match error {
            mpsc::error::TrySendError::Full(job) => {
                (job, ExecuteError::Overloaded { thread: owner })
            }
            mpsc::error::TrySendError::Closed(job) => (
                job,
                ExecuteError::Canceled {
                    reason: "the engine is shutting down",
                },
            ),
        };
        state
            .ctx
            .observer
            .request_finished(me, failure.outcome(), Duration::ZERO, Duration::ZERO);
        let _ = job.reply.send(Err(failure));
    }
    None
}

/// Waits until `at`, or forever when there is nothing to wait for.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// When the next refill may run: at once when no spare is left, otherwise
/// once the thread has been quiet for `REFILL_QUIET`.
fn refill_due(state: &ThreadState) -> Instant {
    if state.pool.borrow().spares() == 0 {
        return state.last_activity.get();
    }
    state.last_activity.get() + REFILL_QUIET
}

/// Whether a refill may run now: nothing in flight, or no spare left.
fn refill_now(state: &ThreadState) -> bool {
    state.in_flight.get() == 0 || state.pool.borrow().spares() == 0
}

/// Whether the thread has fewer blank isolates ready than configured.
fn spares_short(state: &ThreadState) -> bool {
    state.ctx.config.pool_mode != PoolMode::Legacy
        && !state.refill_failed.get()
        && state.pool.borrow().spares() < state.ctx.config.spare_isolates
}

/// Makes one spare isolate, with the default heap limit (workers with a
/// lower `memory_mib` use it too; see `Pool::take_spare`).
fn refill_one(state: &ThreadState) -> bool {
    let heap = crate::bundle::Limits::default().memory_bytes();
    let made = match WorkerIsolate::create(&state.ctx, heap) {
        Ok(isolate) => match isolate.warm_up() {
            Ok(()) => {
                state.pool.borrow_mut().add_spare(isolate);
                true
            }
            Err(error) => {
                tracing::error!(
                    thread = state.ctx.index,
                    ?error,
                    "could not warm a spare isolate; no more spares on this thread"
                );
                state.refill_failed.set(true);
                false
            }
        },
        Err(error) => {
            tracing::error!(thread = state.ctx.index, %error, "could not create a spare isolate; no more spares on this thread");
            state.refill_failed.set(true);
            false
        }
    };
    report_gauges(state);
    made
}

fn report_gauges(state: &ThreadState) {
    let (live, heap) = state.pool.borrow().stats();
    state
        .ctx
        .observer
        .thread_isolates(state.ctx.index, live, heap);
}

fn report_evictions(state: &ThreadState, evicted: Vec<Evicted>) {
    if evicted.is_empty() {
        return;
    }
    let shared_mode = state.ctx.config.pool_mode == PoolMode::Shared;
    for (id, reason) in evicted {
        state.ctx.observer.isolate_evicted(state.ctx.index, reason);
        if shared_mode {
            let mut directory = state
                .shared
                .directory
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if directory.get(&id) == Some(&state.ctx.index) {
                directory.remove(&id);
            }
        }
    }
}

/// A deleted worker (`retire.rs`): its warm isolates leave the pool, and
/// the shared mode's directory forgets where it ran.
fn retire(state: &ThreadState, worker_id: &str) {
    let removed = state.pool.borrow_mut().remove_worker(worker_id);
    if state.ctx.config.pool_mode == PoolMode::Shared {
        state
            .shared
            .directory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(worker_id);
    }
    if removed > 0 {
        tracing::debug!(worker.id = %worker_id, thread = state.ctx.index, isolates = removed, "retired a deleted worker's isolates");
        report_evictions(
            state,
            vec![(worker_id.to_owned(), EvictionReason::Retired); removed],
        );
        report_gauges(state);
    }
}

/// A prewarm (`crate::Prewarm`): the revision loaded into the pool, warm
/// already or compiled now, and a bodiless 204. In the legacy mode (a new
/// isolate per request) there is nothing to keep warm.
fn prewarm(
    state: &ThreadState,
    bundle: &Arc<WorkerBundle>,
) -> Result<http::Response<Body>, ExecuteError> {
    let ctx = &state.ctx;
    if ctx.config.pool_mode != PoolMode::Legacy {
        let mut evicted = Vec::new();
        let warm = state
            .pool
            .borrow_mut()
            .lookup(bundle, &mut evicted)
            .is_some();
        report_evictions(state, evicted);
        if !warm {
            load(state, bundle)?;
            report_gauges(state);
        }
        ctx.observer.isolate_prewarmed(ctx.index, warm);
    }
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::NO_CONTENT;
    Ok(response)
}

/// The worker's isolate: warm from the pool, or a spare (or new one) loaded now.
fn acquire(
    state: &ThreadState,
    bundle: &Arc<WorkerBundle>,
) -> Result<Rc<WorkerIsolate>, ExecuteError> {
    let ctx = &state.ctx;
    let pooled = ctx.config.pool_mode != PoolMode::Legacy;
    if pooled {
        let mut evicted = Vec::new();
        let hit = state.pool.borrow_mut().lookup(bundle, &mut evicted);
        report_evictions(state, evicted);
        ctx.observer.isolate_cache(ctx.index, hit.is_some());
        if let Some(isolate) = hit {
            return Ok(isolate);
        }
    }
    load(state, bundle)
}

/// A spare (or new) isolate with `bundle`'s worker loaded, put in the pool.
fn load(
    state: &ThreadState,
    bundle: &Arc<WorkerBundle>,
) -> Result<Rc<WorkerIsolate>, ExecuteError> {
    let ctx = &state.ctx;
    let pooled = ctx.config.pool_mode != PoolMode::Legacy;
    let started = Instant::now();
    // Under the request's `engine.isolate` span when it is traced.
    let _cold_start = tracing::trace_span!("engine.cold_start").entered();
    let heap_limit = bundle.limits.memory_bytes();
    let spare = if pooled {
        state.pool.borrow_mut().take_spare(heap_limit)
    } else {
        None
    };
    let from_spare = spare.is_some();
    if from_spare {
        state.spare_taken.notify_one();
    }
    let isolate = match spare {
        Some(isolate) => isolate,
        None => WorkerIsolate::create(ctx, heap_limit).map_err(|error| {
            tracing::error!(thread = ctx.index, %error, "could not create an isolate");
            ExecuteError::Canceled {
                reason: "the engine could not create an isolate",
            }
        })?,
    };
    isolate.load(bundle.clone())?;
    ctx.observer
        .isolate_created(ctx.index, started.elapsed(), from_spare);
    if pooled {
        let mut evicted = Vec::new();
        state
            .pool
            .borrow_mut()
            .insert(bundle, isolate.clone(), &mut evicted);
        report_evictions(state, evicted);
    }
    Ok(isolate)
}

/// Counts a request in flight for the drain at shutdown.
struct InFlight<'a>(&'a ThreadState);

impl<'a> InFlight<'a> {
    fn new(state: &'a ThreadState) -> Self {
        state.in_flight.set(state.in_flight.get() + 1);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let n = self.0.in_flight.get().saturating_sub(1);
        self.0.in_flight.set(n);
        self.0.last_activity.set(Instant::now());
        if n == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Starts serving `job` as a task of its own. The request's future is
/// boxed once here: it is kilobytes (every await of the request path), and
/// unboxed it was copied whole into `spawn_local` and again into the task.
fn start(state: &Rc<ThreadState>, job: Job, permit: Option<OwnedSemaphorePermit>) {
    tokio::task::spawn_local(Box::pin(serve(state.clone(), job, permit)));
}

/// Frees its namespace's slot when the request ends, however it ends.
struct Slot<'a> {
    state: &'a ThreadState,
    bundle: Arc<WorkerBundle>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let state = self.state;
        let under = state
            .ctx
            .schedule
            .borrow_mut()
            .finished(self.bundle.namespace(), state.guarantee);
        if under {
            state.under_guarantee.notify_one();
        }
    }
}

/// One request, from job to finished body; then its namespace's slot is free.
async fn serve(state: Rc<ThreadState>, job: Job, _permit: Option<OwnedSemaphorePermit>) {
    let state = &state;
    let _slot = Slot {
        state,
        bundle: job.bundle.clone(),
    };
    let _in_flight = InFlight::new(state);
    let started = Instant::now();
    let ctx = &state.ctx;
    let Job {
        bundle,
        request,
        reply,
        ..
    } = job;
    let deadline = started + bundle.limits.wall();
    let (parts, body) = request.into_parts();
    let request_id = request_id(state, &parts);
    tracing::debug!(worker.id = %bundle.id, revision = %bundle.revision, thread = ctx.index, request.id = %request_id, method = %parts.method, uri = %parts.uri, "request");

    if parts.extensions.get::<crate::Prewarm>().is_some() {
        let result = prewarm(state, &bundle);
        if let Err(error) = &result {
            tracing::warn!(worker.id = %bundle.id, revision = %bundle.revision, thread = ctx.index, request.id = %request_id, %error, "prewarm failed");
        }
        let _ = reply.send(result);
        return;
    }
    let body_limit = ctx.config.max_request_body_bytes;
    if crate::body_cap::declared_over(&parts.headers, body_limit) {
        tracing::debug!(worker.id = %bundle.id, thread = ctx.index, request.id = %request_id, "the request body is over the cap");
        ctx.observer
            .request_finished(ctx.index, Outcome::Ok, started.elapsed(), Duration::ZERO);
        let _ = reply.send(Ok(crate::body_cap::response(body_limit)));
        return;
    }
    let trace = parts.extensions.get::<crate::RequestTrace>().cloned();
    let acquired = match &trace {
        None => acquire(state, &bundle),
        Some(trace) => trace.acquire().in_scope(|| acquire(state, &bundle)),
    };
    let isolate = match acquired {
        Ok(isolate) => isolate,
        Err(error) => {
            tracing::warn!(worker.id = %bundle.id, revision = %bundle.revision, thread = ctx.index, request.id = %request_id, %error, "worker unavailable");
            if let Some(watch) = Watch::begin(ctx, &bundle, &parts, &request_id, None) {
                watch.failed(ctx, &bundle, &error, started.elapsed());
            }
            ctx.observer.request_finished(
                ctx.index,
                error.outcome(),
                started.elapsed(),
                Duration::ZERO,
            );
            let _ = reply.send(Err(error));
            return;
        }
    };
    let (head_tx, head_rx) = oneshot::channel();
    let (done_tx, done_rx) = oneshot::channel();
    let host = &isolate.host;
    let req = host.begin_request(
        request_id.clone(),
        head_tx,
        done_tx,
        Duration::from_millis(ctx.config.cpu_limit_ms(&bundle.limits)),
        deadline,
        incoming_hops(&parts.headers),
    );
    let exemplar = trace.as_ref().and_then(|trace| trace.sampled_trace_id);
    if let Some(trace) = trace {
        host.set_trace(req, trace);
    }
    // A WebSocket handshake: its client's share of the Worker's sockets
    // (`host/socket_count.rs`). Plain requests look up one header more.
    if parts.headers.contains_key(http::header::UPGRADE)
        && let Some(client) = parts.headers.get(crate::host::socket_count::CLIENT_HEADER)
    {
        host.set_client(req, client.clone());
    }
    // Someone tails this Worker: its console lines are kept for its event.
    let watch = Watch::begin(ctx, &bundle, &parts, &request_id, Some((host, req)));
    let mut tripped = None;
    let body_id = if http_body::Body::is_end_stream(&body) {
        0
    } else {
        let (body, cap) = crate::body_cap::cap(body, body_limit);
        tripped = Some(cap);
        host.register_body(req, body)
    };
    match isolate.handle_request(req, &parts, &request_url(&parts), body_id) {
        Ok(()) | Err(TurnError::Terminated(_)) => {}
        Err(TurnError::Threw { message, stack }) => {
            crate::host::console::report_exception(host, req, "handler threw", &message, &stack);
            host.fail_request(req, ExecuteError::Exception { message });
        }
        Err(TurnError::Condemned) => host.fail_request(
            req,
            ExecuteError::Canceled {
                reason: "the isolate was discarded",
            },
        ),
    }

    let mut reply = reply;
    let head = tokio::time::timeout_at(deadline.into(), head_rx);
    tokio::pin!(head);
    let mut client_gone = false;
    let head = loop {
        tokio::select! {
            biased;
            head = &mut head => break head,
            // The caller dropped the request (the client went away): abort
            // the request's signal, then cancel the request, so its slot is
            // free at once and nothing more of it runs.
            () = reply.closed(), if !client_gone => {
                client_gone = true;
                isolate.request_aborted(req);
                host.fail_request(req, ExecuteError::Canceled {
                    reason: "the client went away",
                });
            }
        }
    };
    let result = match head {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(ExecuteError::Canceled {
            reason: "the worker never answered",
        }),
        Err(_) => Err(wall_timeout(state, &isolate, req, &bundle)),
    };
    // The client's body broke at the cap and the worker did not answer by
    // itself: the answer is the 413 (`body_cap.rs`).
    let result = match result {
        Err(_) if tripped.as_ref().is_some_and(|t| t.get()) => {
            Ok(crate::body_cap::response(body_limit))
        }
        result => result,
    };
    let answered = result.is_ok();
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.status().as_u16(),
    };
    if let Err(error) = &result {
        tracing::debug!(worker.id = %bundle.id, thread = ctx.index, request.id = %request_id, reason = error.reason(), "request failed");
    }
    let _ = reply.send(result);
    let socket = answered && host.held(req);
    let rest = Rest {
        isolate,
        req,
        bundle,
        started,
        deadline,
        answered,
        watch,
        status,
        exemplar,
    };
    if socket {
        // A WebSocket: the request lives on as long as its socket, but no
        // longer holds a slot of its namespace (nor the drain at shutdown):
        // its sockets are capped by `max_sockets_per_worker` instead.
        let state = Rc::clone(state);
        tokio::task::spawn_local(async move { rest.finish(&state, done_rx).await });
        return;
    }
    rest.finish(state, done_rx).await;
}

/// What is left of a request once it was answered.
struct Rest {
    isolate: Rc<WorkerIsolate>,
    req: u32,
    bundle: Arc<WorkerBundle>,
    started: Instant,
    deadline: Instant,
    /// Whether a response went out (else there is nothing to wait for).
    answered: bool,
    /// Someone tails the Worker: the invocation's event (`invocation.rs`).
    watch: Option<Box<Watch>>,
    /// The status answered, for the event.
    status: u16,
    /// The request's sampled trace id: its wall time's exemplar.
    exemplar: Option<[u8; 16]>,
}

impl Rest {
    /// The rest: a streamed body, then `ctx.waitUntil` work, within the wall
    /// limit (or an open WebSocket); then the request is forgotten and the
    /// isolate goes back to the pool.
    async fn finish(self, state: &ThreadState, done_rx: oneshot::Receiver<()>) {
        let Rest {
            isolate,
            req,
            bundle,
            started,
            deadline,
            answered,
            watch,
            status,
            exemplar,
        } = self;
        let ctx = &state.ctx;
        if answered {
            wait_done(state, &isolate, req, &bundle, deadline, done_rx).await;
        }
        isolate.make_owed_code_caches();
        let (cpu, failure) = isolate.host.finish_request(req);
        let outcome = failure.unwrap_or(Outcome::Ok);
        let wall = started.elapsed();
        ctx.observer.request_finished(ctx.index, outcome, wall, cpu);
        if let Some(trace_id) = exemplar {
            ctx.observer
                .request_exemplar(ctx.index, outcome, wall, trace_id);
        }
        if let Some(watch) = watch {
            watch.end(ctx, &bundle, &isolate.host, req, outcome, status, wall, cpu);
        }
        release(state, &bundle, isolate);
    }
}

/// The request is done with `isolate`: back to the pool.
fn release(state: &ThreadState, bundle: &Arc<WorkerBundle>, isolate: Rc<WorkerIsolate>) {
    let ctx = &state.ctx;
    if ctx.config.pool_mode != PoolMode::Legacy {
        let mut evicted = Vec::new();
        state
            .pool
            .borrow_mut()
            .release(bundle, &isolate, &mut evicted);
        report_evictions(state, evicted);
        drop(isolate);
        report_gauges(state);
    }
}

/// Waits for the rest of an answered request: a streamed body, then
/// `ctx.waitUntil` work, within the wall limit; past it, as long as an open
/// WebSocket holds the request (each of its events has its own wall time,
/// `HostState::top_up`, and the socket its idle timeout).
async fn wait_done(
    state: &ThreadState,
    isolate: &Rc<WorkerIsolate>,
    req: u32,
    bundle: &Arc<WorkerBundle>,
    deadline: Instant,
    mut done_rx: oneshot::Receiver<()>,
) {
    if tokio::time::timeout_at(deadline.into(), &mut done_rx)
        .await
        .is_ok()
    {
        return;
    }
    if isolate.host.held(req) {
        let _ = done_rx.await;
        return;
    }
    wall_timeout(state, isolate, req, bundle);
}

/// How many times the request passed through a worker's `fetch` already.
fn incoming_hops(headers: &http::HeaderMap) -> u32 {
    headers
        .get(crate::HOPS_HEADER)
        .and_then(|v| v.to_str().ok()?.trim().parse().ok())
        .unwrap_or(0)
}

/// Requests one namespace may have queued or in flight on a thread:
/// `worker_slots`, or a quarter of the thread's slots.
fn worker_slots(config: &EngineConfig) -> usize {
    match config.worker_slots {
        0 => (config.queue_depth / 4).max(1),
        n => n,
    }
}

/// The request ran out of wall time while no JavaScript was running (a turn
/// that overruns is stopped by the watchdog instead): fail it and drop its
/// timers and pending I/O. The isolate stays usable for other requests.
fn wall_timeout(
    state: &ThreadState,
    isolate: &WorkerIsolate,
    req: u32,
    bundle: &WorkerBundle,
) -> ExecuteError {
    state
        .ctx
        .observer
        .termination(state.ctx.index, TerminationReason::WallTimeout);
    tracing::warn!(worker.id = %bundle.id, revision = %bundle.revision, thread = state.ctx.index, request.id = isolate.host.request_id(req).as_deref().unwrap_or(""), "wall time limit exceeded");
    let error = || ExecuteError::WallTimeout {
        limit_ms: u64::from(bundle.limits.wall_ms),
    };
    isolate.host.fail_request(req, error());
    error()
}

fn request_id(state: &ThreadState, parts: &http::request::Parts) -> Arc<str> {
    if let Some(id) = parts
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
    {
        return Arc::from(id);
    }
    let seq = state.seq.get() + 1;
    state.seq.set(seq);
    Arc::from(format!("{}-{seq}", state.ctx.index))
}

/// The absolute URL the worker sees (`request.url`).
fn request_url(parts: &http::request::Parts) -> String {
    if parts.uri.scheme().is_some() {
        return parts.uri.to_string();
    }
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    format!("http://{host}{path}")
}
