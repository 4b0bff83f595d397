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

use tokio::sync::{Notify, Semaphore, mpsc, watch};

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::config::{EngineConfig, PoolMode};
use crate::isolate::WorkerIsolate;
use crate::job::Job;
use crate::limits::CpuClock;
use crate::observer::{EngineObserver, EvictionReason};
use crate::outcome::ExecuteError;
use crate::pool::{Evicted, Pool};
use crate::prewarm::{Prewarm, PrewarmOutcome};
use crate::schedule::{Refusal, Schedule, Start};
use crate::spare_demand::SpareDemand;
use crate::thread_ctx::{EngineShared, ThreadCtx};
use crate::watchdog::Watchdog;
use crate::work::Work;

mod local_yield;
mod serve;

use local_yield::{yield_local, yield_to_runtime};
use serve::start;

/// How long a shutting-down thread waits for requests in flight.
const DRAIN: Duration = Duration::from_secs(10);

/// How long `start_queued` starts waiting requests within the LocalSet
/// (their answers go out together) before it goes back to the runtime,
/// which sends them and polls its I/O: a request arriving meanwhile waits
/// at most this long, plus the turn running then. Hello-world turns take
/// tens of microseconds, so a batch holds a dozen or more; a request whose
/// namespace's last turn took this long or more starts a batch of its own.
const BATCH: Duration = Duration::from_micros(500);

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
    /// Recent loads, which size the spares (`spare_demand.rs`).
    demand: RefCell<SpareDemand>,
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
        client: isolane_egress::client(
            shared.egress.clone(),
            shared.roots.clone(),
            isolane_egress::Versions::All,
        ),
        upgrade_client: isolane_egress::client(
            shared.egress.clone(),
            shared.roots.clone(),
            isolane_egress::Versions::Http1,
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
        demand: RefCell::new(SpareDemand::new(config.spare_isolates)),
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
    if spares_against_demand(&state) == SparesStand::Short {
        refill_one(&state);
    }
    let _ = ready.send(Ok(()));
    let permits = Arc::new(Semaphore::new(state.ctx.config.queue_depth.max(1)));
    loop {
        receive_arrived(&state, &mut jobs, &permits);
        if start_next(&state, &permits) {
            // Others wait: they are started by a task of the LocalSet, each
            // after the one before had its first turn (`start_queued`).
            if !state.ctx.schedule.borrow().is_empty() {
                let queued = start_queued(state.clone(), jobs, permits.clone());
                jobs = match tokio::task::spawn_local(queued).await {
                    Ok(jobs) => jobs,
                    Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                    // Only when the runtime itself shuts down.
                    Err(_) => return,
                };
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
        // Spares beyond what the recent misses call for go once nothing
        // is in flight (`spare_demand.rs`); the loop wakes when that count
        // next falls.
        let spares = spares_against_demand(&state);
        let quiet = jobs.is_empty() && !waiting && state.in_flight.get() == 0;
        if quiet && spares == SparesStand::Excess {
            drop_spare(&state);
            continue;
        }
        let trim_at = spares_fall_at(&state);
        // Spares are refilled here, off every request's critical path: one
        // isolate at a time, only once the tasks already runnable had their
        // turn, no request waits in the queue, none is in flight (its timers
        // and I/O would wait for the refill) and none arrived or ended for
        // `REFILL_QUIET` (a burst's next request is likely close behind) —
        // unless no spare is left, when the next new worker would pay for
        // one anyway.
        let mut refill_at = None;
        if spares == SparesStand::Short && jobs.is_empty() && !waiting && refill_now(&state) {
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
            () = state.idle.notified(), if spares != SparesStand::Enough => {}
            // Quiet long enough to refill, or the oldest miss the spares
            // are sized to left the last second: count the misses again.
            () = sleep_until(earliest(refill_at, trim_at)) => {
                state.demand.borrow_mut().refresh(Instant::now());
            }
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

/// Every request that arrived goes to its namespace's queue (or is
/// refused) before the next one to start is chosen (`schedule.rs`).
fn receive_arrived(
    state: &Rc<ThreadState>,
    jobs: &mut mpsc::Receiver<Job>,
    permits: &Arc<Semaphore>,
) {
    while let Ok(job) = jobs.try_recv() {
        let alone = jobs.is_empty();
        receive(state, job, permits, alone);
    }
}

/// Starts the next request of the schedule, if one may start now: bounds
/// requests in flight too, so while they are all busy, new ones wait in
/// their queues (but a namespace under its guarantee starts beyond them,
/// `schedule.rs`), and once a namespace's share is full, or the channel
/// is, `execute` fails fast.
fn start_next(state: &Rc<ThreadState>, permits: &Arc<Semaphore>) -> bool {
    let permit = permits.clone().try_acquire_owned().ok();
    let job = {
        let mut schedule = state.ctx.schedule.borrow_mut();
        match permit {
            Some(_) => schedule.next(Instant::now()),
            None => schedule.next_under(Instant::now(), state.guarantee),
        }
    };
    let Some(job) = job else {
        return false;
    };
    start(state, job, permit);
    true
}

/// While requests wait in the schedule: lets the one just started have its
/// first turn (and the turns already due), takes in what arrived, starts
/// the next, and so on until none waits or none may start; then gives the
/// channel back to the job loop. A task of the LocalSet, so it yields
/// within it (`local_yield.rs`): the requests it starts in one batch
/// answer together, where the job loop (the LocalSet's `block_on` future)
/// could only yield to the runtime, which sent out each answer, and polled
/// its I/O driver, before the next request started.
///
/// Requests that reach this thread through its own runtime (the node's
/// per-thread gRPC listener) are read only when the LocalSet returns to
/// it, and the batch's answers go out only then. So a batch ends before a
/// start that would take it past `BATCH`, as far as the last turn of the
/// namespace to start tells: a request arriving behind a flood of long
/// turns is read after the turn running then, starts next (its namespace
/// used less), and its answer goes out before the flood's next turn.
async fn start_queued(
    state: Rc<ThreadState>,
    mut jobs: mpsc::Receiver<Job>,
    permits: Arc<Semaphore>,
) -> mpsc::Receiver<Job> {
    let mut batch = Instant::now();
    loop {
        yield_local().await;
        receive_arrived(&state, &mut jobs, &permits);
        if state.ctx.schedule.borrow().is_empty() {
            return jobs;
        }
        if batch.elapsed() + next_turn_guess(&state, &permits) >= BATCH {
            yield_to_runtime().await;
            receive_arrived(&state, &mut jobs, &permits);
            batch = Instant::now();
        }
        if !start_next(&state, &permits) || state.ctx.schedule.borrow().is_empty() {
            return jobs;
        }
    }
}

/// How long the first turn of the request `start_next` would start is
/// likely to take (`Schedule::next_turn_guess`).
fn next_turn_guess(state: &ThreadState, permits: &Semaphore) -> Duration {
    let guarantee = match permits.available_permits() {
        0 => state.guarantee,
        _ => usize::MAX,
    };
    state
        .ctx
        .schedule
        .borrow()
        .next_turn_guess(Instant::now(), guarantee)
}

/// A request arrived: queued for its namespace, or refused at once when
/// the namespace has used its share of the thread's slots or is penalized
/// for longer than the request may wait (`schedule.rs`). When `alone` (no
/// other request arrived with it), started at once when nothing is queued
/// and a slot is free: it is the one the schedule would choose. When every
/// slot is taken, started at once beyond them if its namespace is under
/// its guarantee.
fn receive(state: &Rc<ThreadState>, job: Job, permits: &Arc<Semaphore>, alone: bool) {
    if let Work::Retire = job.work {
        retire(state, &job.bundle.id);
        return;
    }
    let now = Instant::now();
    state.last_activity.set(now);
    let Some(mut job) = forward_if_shared(state, job) else {
        return;
    };
    job.work.off_queue();
    let Some(job) = within_quota(state, job, now) else {
        return;
    };
    // A Durable Object call is not refused for its namespace's share: its
    // caller holds a slot (here or elsewhere), which bounds such calls, and
    // refusing it would fail a request already admitted: it waits in its
    // namespace's queue. A service call starts at once (`Start::Now`).
    let share = if job.work.is_object_call() || job.work.is_service_call() {
        usize::MAX
    } else {
        worker_slots(&state.ctx.config)
    };
    let permit = if alone && !job.work.is_service_call() {
        permits.clone().try_acquire_owned().ok()
    } else {
        None
    };
    let how = match (&permit, permits.available_permits()) {
        _ if job.work.is_service_call() => Start::Now,
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

/// The job, unless its namespace is over its CPU quota (docs/policy.md;
/// object and service calls pass, as they pass its share): then refused.
fn within_quota(state: &ThreadState, job: Job, now: Instant) -> Option<Job> {
    let quota = job.bundle.cpu_ms_per_second;
    let Some(quota_ms) =
        quota.filter(|_| !job.work.is_object_call() && !job.work.is_service_call())
    else {
        return Some(job);
    };
    let Err(retry_after_secs) = state
        .shared
        .quotas
        .admit(job.bundle.namespace(), quota_ms, now)
    else {
        return Some(job);
    };
    let error = ExecuteError::QuotaExceeded {
        quota_ms,
        retry_after_secs,
    };
    let ctx = &state.ctx;
    ctx.observer
        .request_finished(ctx.index, error.outcome(), Duration::ZERO, Duration::ZERO);
    let _ = job.reply.send(Err(error));
    None
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

/// The earlier of two optional instants.
fn earliest(
    a: Option<tokio::time::Instant>,
    b: Option<tokio::time::Instant>,
) -> Option<tokio::time::Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
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

/// How a thread's blank isolates stand against what its recent misses
/// call for (`spare_demand.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SparesStand {
    /// Fewer: make one when the thread is quiet.
    Short,
    /// As many as called for.
    Enough,
    /// More: drop one when nothing is in flight.
    Excess,
}

fn spares_against_demand(state: &ThreadState) -> SparesStand {
    if state.ctx.config.pool_mode == PoolMode::Legacy {
        return SparesStand::Enough;
    }
    let have = state.pool.borrow().spares();
    let want = state.demand.borrow().target();
    match have.cmp(&want) {
        std::cmp::Ordering::Less if !state.refill_failed.get() => SparesStand::Short,
        std::cmp::Ordering::Greater => SparesStand::Excess,
        _ => SparesStand::Enough,
    }
}

/// When the spares called for next fall (then the loop counts them again).
fn spares_fall_at(state: &ThreadState) -> Option<tokio::time::Instant> {
    let falls = state.demand.borrow().falls_at()?;
    Some(tokio::time::Instant::from_std(falls))
}

/// Drops one spare the thread no longer needs.
fn drop_spare(state: &ThreadState) {
    let spare = state.pool.borrow_mut().drop_spare();
    drop(spare);
    tracing::debug!(thread = state.ctx.index, "dropped a spare isolate");
    report_gauges(state);
}

/// Makes one spare isolate, with the default heap limit (workers with a
/// lower `memory_mib` use it too; see `Pool::take_spare`).
///
/// First it lets the OS run the threads waiting for this core. A refill
/// with no spare left follows the answer of the request that took the
/// last one at once, and that answer woke its reader: a router's or a
/// client's thread, or the bench's, which the kernel often places on the
/// waker's core. The kernel does not preempt this thread for it (the
/// running task keeps the rest of its time slice), so without the yield
/// the answer waited behind the spare's milliseconds of creation: about a
/// sixth of the cold bench's first requests with a spare ready took 2-5 ms
/// instead of ~0.9 ms (p99 4.8-5.0 ms; with the yield no sample over 2 ms
/// in 600, p99 1.1-1.3 ms). One `sched_yield` per spare made.
fn refill_one(state: &ThreadState) -> bool {
    std::thread::yield_now();
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

/// A deleted worker (`retire.rs`, [`Work::Retire`]): its warm isolates leave the pool, and
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

/// A prewarm ([`Work::Prewarm`]): the revision loaded into the pool, warm
/// already or compiled now (a standby only where it fits without evicting
/// any isolate), and a bodiless 204. In the legacy mode (a new isolate per
/// request) there is nothing to keep warm.
fn prewarm(
    state: &ThreadState,
    bundle: &Arc<WorkerBundle>,
    mode: Prewarm,
) -> Result<http::Response<Body>, ExecuteError> {
    let ctx = &state.ctx;
    if ctx.config.pool_mode != PoolMode::Legacy {
        let outcome = prewarm_into_pool(state, bundle, mode)?;
        ctx.observer.isolate_prewarmed(ctx.index, outcome);
    }
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::NO_CONTENT;
    Ok(response)
}

fn prewarm_into_pool(
    state: &ThreadState,
    bundle: &Arc<WorkerBundle>,
    mode: Prewarm,
) -> Result<PrewarmOutcome, ExecuteError> {
    let mut evicted = Vec::new();
    let warm = state
        .pool
        .borrow_mut()
        .lookup(bundle, &mut evicted)
        .is_some();
    report_evictions(state, std::mem::take(&mut evicted));
    if warm {
        return Ok(PrewarmOutcome::Warm);
    }
    let outcome = match mode {
        Prewarm::Load => {
            load(state, bundle)?;
            PrewarmOutcome::Compiled
        }
        Prewarm::Standby if !state.pool.borrow().has_room_for_another() => PrewarmOutcome::NoRoom,
        Prewarm::Standby => {
            let isolate = loaded(state, bundle)?;
            let kept = state
                .pool
                .borrow_mut()
                .insert_if_room(bundle, isolate, &mut evicted);
            report_evictions(state, evicted);
            if kept {
                PrewarmOutcome::Compiled
            } else {
                PrewarmOutcome::NoRoom
            }
        }
    };
    report_gauges(state);
    Ok(outcome)
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
    let isolate = loaded(state, bundle)?;
    if state.ctx.config.pool_mode != PoolMode::Legacy {
        let mut evicted = Vec::new();
        state
            .pool
            .borrow_mut()
            .insert(bundle, isolate.clone(), &mut evicted);
        report_evictions(state, evicted);
    }
    Ok(isolate)
}

/// A spare (or new) isolate with `bundle`'s worker loaded, not yet in the
/// pool.
fn loaded(
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
    if pooled {
        state.demand.borrow_mut().loaded(started);
    }
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
    Ok(isolate)
}

/// Requests one namespace may have queued or in flight on a thread:
/// `worker_slots`, or a quarter of the thread's slots.
pub(crate) fn worker_slots(config: &EngineConfig) -> usize {
    match config.worker_slots {
        0 => (config.queue_depth / 4).max(1),
        n => n,
    }
}
