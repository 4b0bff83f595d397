//! Expensive Web Crypto work (RSA key generation, PBKDF2) off the isolate's
//! thread, charged to the request that asked for it, admitted fairly.
//!
//! Expected flow: the host function checks its parameters, returns a pending
//! promise and queues the work; a local task waits for this isolate's one
//! offload slot, then for a slot of the engine's [`Pool`] (shared out per
//! namespace, then per Worker: `pool.rs`). Admitted, back on the isolate's
//! thread, it checks that the request has CPU time left (none: the
//! request ends as `cpu_limit` without running the work), runs the work on
//! tokio's blocking pool, reads that thread's CPU clock around it, and back
//! on the isolate's thread charges the time to the request. Within the budget the promise settles in a turn
//! of its own; past it the request ends as `cpu_limit` like a JavaScript
//! loop would (the isolate is discarded).
//!
//! Guarantees: the isolate's thread never runs the work, so its neighbours
//! keep answering; one isolate runs at most one such job at a time (a loop
//! of unawaited calls queues, it does not take more cores); the engine runs
//! at most one per core, at most half of them for one namespace.
//!
//! Caveats: a job that started is not interrupted (the RustCrypto calls have
//! no cancellation point): the request can overrun its CPU limit by at most
//! one job. The CPU of a job whose request ended first (the worker answered
//! without awaiting it) is charged to nobody; the job runs to its end.

use std::time::Duration;

use super::error::{CryptoError, Result};
use super::formats::Generated;
use super::pool::{Pool, Tenant};
use crate::host::{HostState, IsolateTurns, Settlement, new_promise};
use crate::limits::thread_cpu_now;

/// What an offloaded job hands back.
pub(crate) enum Offloaded {
    Bytes(Vec<u8>),
    Generated(Box<Generated>),
}

/// Returns a promise for `work`'s result and queues it (see the module docs).
pub(crate) fn spawn(
    scope: &mut v8::PinScope<'_, '_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
    work: impl FnOnce() -> Result<Offloaded> + Send + 'static,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let Some((resolver, promise)) = new_promise(scope) else {
        return;
    };
    rv.set(promise.into());
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.me.clone();
    let isolate_slot = host.crypto.offload.clone();
    let pool: Pool = host.thread.shared.crypto.clone();
    let tenant = Tenant::of(host.worker.get().map_or("", |w| w.id.as_str()));
    let task = tokio::task::spawn_local(async move {
        let Ok(mine) = isolate_slot.acquire_owned().await else {
            return;
        };
        let permit = pool.admit(&tenant).await;
        // Admitted: the request's turns may have spent its CPU meanwhile.
        let Some(isolate) = me.upgrade() else {
            return;
        };
        if isolate.host().cpu_remaining(ctx).is_zero() {
            // Past the limit already: end the request, run nothing.
            isolate.charge_offloaded_cpu(ctx, Duration::from_nanos(1));
            return;
        }
        drop(isolate);
        // The slots go with the job, not with this task: if the request ends
        // (and this task is aborted) the job still holds them until it has
        // ended, so an isolate never has two running.
        let joined = tokio::task::spawn_blocking(move || {
            let start = thread_cpu_now();
            let result = work();
            let cpu = thread_cpu_now().saturating_sub(start);
            drop((mine, permit));
            (result, cpu)
        })
        .await;
        finish(&me, ctx, op, joined);
    });
    host.set_op_task(op, task.abort_handle());
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
        isolate.settle(op, Settlement::Crypto(Box::new(result)));
    }
}
