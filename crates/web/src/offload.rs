//! Expensive native work off the isolate's thread, charged to the request
//! that asked for it, admitted fairly: Web Crypto's key generation and
//! PBKDF2 (`crypto/offload.rs`), and any other family's heavy work (the
//! bindings' Images transforms).
//!
//! Expected flow: the host function checks its parameters, returns a pending
//! promise and queues the work ([`spawn`]); a local task waits for the
//! caller's per-isolate [`Slot`], then for a slot of the engine's pool
//! (shared out per namespace, then per Worker). Admitted, back on the
//! isolate's thread, it reads how much CPU time the request has left (none:
//! the request ends as `cpu_limit` without running the work), runs the work
//! on tokio's blocking pool with a [`Stop`] for that budget, reads that
//! thread's CPU clock around it, and back on the isolate's thread charges
//! the time to the request. Within the budget the promise settles in a turn
//! of its own; past it the request ends as `cpu_limit` like a JavaScript
//! loop would (the isolate is discarded).
//!
//! Guarantees: the isolate's thread never runs the work, so its neighbours
//! keep answering; one isolate runs at most one job of a slot at a time (a
//! loop of unawaited calls queues, it does not take more cores); the engine
//! runs at most one job per core, at most half of them for one namespace.
//!
//! Caveats: work that does not ask its [`Stop`] runs to its end once
//! started; its request can then overrun its CPU limit by one job, which
//! the caller must bound. The CPU of a job whose request ended first (the
//! Worker answered without awaiting it) is charged to nobody.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use isolane_engine::api::offload::{Pool, Tenant};
use isolane_engine::api::{HostState, IsolateTurns, Settlement, Stop, new_promise};

/// One job at a time for one isolate: a unit keeps one in its state.
pub type Slot = Arc<tokio::sync::Semaphore>;

/// A new [`Slot`].
pub fn slot() -> Slot {
    Arc::new(tokio::sync::Semaphore::new(1))
}

/// Tells a running job its request is gone when the task waiting for it is
/// dropped (the request ended, its ops aborted).
struct GoneOnDrop(Arc<AtomicBool>);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Returns a promise for `work`'s result and queues it (see the module
/// docs); `settle` makes the promise's answer from the result (`None`: the
/// job failed on the pool).
pub fn spawn<'s, T: Send + 'static>(
    scope: &mut v8::PinScope<'s, '_>,
    slot: Slot,
    work: impl FnOnce(&Stop) -> T + Send + 'static,
    settle: impl FnOnce(Option<T>) -> Settlement + 'static,
) -> Option<v8::Local<'s, v8::Promise>> {
    let host = HostState::get(scope)?;
    let (resolver, promise) = new_promise(scope)?;
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let pool: Pool = host.offload_pool().clone();
    let tenant = Tenant::of(host.worker().map_or("", |w| w.id.as_str()));
    let task = tokio::task::spawn_local(async move {
        let Ok(mine) = slot.acquire_owned().await else {
            return;
        };
        let permit = pool.admit(&tenant).await;
        // Admitted: what the request may still spend, read now (its turns
        // may have used some while this job waited).
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let budget = isolate.host().cpu_remaining(ctx);
        if budget.is_zero() {
            // Past the limit already: end the request, run nothing.
            isolate.charge_offloaded_cpu(ctx, Duration::from_nanos(1));
            return;
        }
        drop(isolate);
        let gone = Arc::new(AtomicBool::new(false));
        let _gone_on_drop = GoneOnDrop(gone.clone());
        // The slots go with the job, not with this task: if the request ends
        // (and this task is aborted) the job still holds them until it has
        // stopped, so an isolate never has two running.
        let joined = tokio::task::spawn_blocking(move || {
            let stop = Stop::for_request(gone, budget);
            let result = work(&stop);
            let cpu = stop.spent();
            drop((mine, permit));
            (result, cpu)
        })
        .await;
        finish(&me, ctx, op, joined, settle);
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}

/// Charges a finished job to its request and settles its promise.
fn finish<T>(
    me: &std::rc::Weak<dyn IsolateTurns>,
    ctx: u32,
    op: u32,
    joined: Result<(T, Duration), tokio::task::JoinError>,
    settle: impl FnOnce(Option<T>) -> Settlement,
) {
    let Some(isolate) = me.upgrade() else {
        return;
    };
    let (result, cpu) = match joined {
        Ok((result, cpu)) => (Some(result), cpu),
        Err(_) => (None, Duration::ZERO),
    };
    if isolate.charge_offloaded_cpu(ctx, cpu) {
        isolate.settle(op, settle(result));
    }
}
