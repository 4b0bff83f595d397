//! Expensive Web Crypto work (RSA key generation, PBKDF2) off the isolate's
//! thread, charged to the request that asked for it, admitted fairly.
//!
//! Expected flow: the host function checks its parameters, returns a pending
//! promise and queues the work; a local task waits for this isolate's one
//! offload slot, then for a slot of the engine's [`Pool`] (shared out per
//! namespace, then per Worker: `pool.rs`). Admitted, back on the isolate's
//! thread, it reads how much CPU time the request has left (none: the
//! request ends as `cpu_limit` without running the work), runs the work on
//! tokio's blocking pool with a [`Stop`] for that budget, reads that
//! thread's CPU clock around it, and back on the isolate's thread charges
//! the time to the request. Within the budget the promise settles in a turn
//! of its own; past it the request ends as `cpu_limit` like a JavaScript
//! loop would (the isolate is discarded).
//!
//! Guarantees: the isolate's thread never runs the work, so its neighbours
//! keep answering; one isolate runs at most one such job at a time (a loop
//! of unawaited calls queues, it does not take more cores); the engine runs
//! at most one per core, at most half of them for one namespace; RSA key
//! generation stops within milliseconds once its request's CPU budget is
//! spent or its request is gone (it asks its [`Stop`] between steps).
//!
//! Caveats: PBKDF2 cannot be stopped once started (the `pbkdf2` crate has
//! no step to stop at): its request can overrun its CPU limit by one call,
//! which is bounded (`ops.rs`, at most ~0.5 s). The CPU of a job whose
//! request ended first (the worker answered without awaiting it) is charged
//! to nobody; a key generation stops at once then, a PBKDF2 call runs out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use isolane_engine::api::offload::{Pool, Tenant};
use isolane_engine::api::{HostState, IsolateTurns, Settlement, Stop, new_promise};

use super::CryptoState;
use super::error::{CryptoError, Result};
use super::formats::Generated;

/// What an offloaded job hands back.
pub enum Offloaded {
    Bytes(Vec<u8>),
    Generated(Box<Generated>),
}

/// An offloaded job's answer as its op settles with it
/// ([`isolane_engine::api::Settle`], in `subtle.rs`).
pub struct Offload(pub Result<Offloaded>);

/// Tells a running job its request is gone when the task waiting for it is
/// dropped (the request ended, its ops aborted).
struct GoneOnDrop(Arc<AtomicBool>);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Returns a promise for `work`'s result and queues it (see the module docs).
pub fn spawn<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    work: impl FnOnce(&Stop) -> Result<Offloaded> + Send + 'static,
) -> Option<v8::Local<'s, v8::Promise>> {
    let host = HostState::get(scope)?;
    let isolate_slot = host.state::<CryptoState>()?.offload.clone();
    let (resolver, promise) = new_promise(scope)?;
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let pool: Pool = host.offload_pool().clone();
    let tenant = Tenant::of(host.worker().map_or("", |w| w.id.as_str()));
    let task = tokio::task::spawn_local(async move {
        let Ok(mine) = isolate_slot.acquire_owned().await else {
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
        finish(&me, ctx, op, joined);
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}

/// Charges a finished job to its request and settles its promise.
fn finish(
    me: &std::rc::Weak<dyn IsolateTurns>,
    ctx: u32,
    op: u32,
    joined: std::result::Result<(Result<Offloaded>, Duration), tokio::task::JoinError>,
) {
    let Some(isolate) = me.upgrade() else {
        return;
    };
    let (result, cpu) = match joined {
        Ok(done) => done,
        Err(_) => (
            Err(CryptoError::operation("The operation failed")),
            Duration::ZERO,
        ),
    };
    if isolate.charge_offloaded_cpu(ctx, cpu) {
        isolate.settle(op, Settlement::custom(Offload(result)));
    }
}
