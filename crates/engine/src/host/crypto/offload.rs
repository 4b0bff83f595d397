//! Expensive Web Crypto work (RSA key generation, PBKDF2) off the isolate's
//! thread, charged to the request that asked for it.
//!
//! Expected flow: the host function checks its parameters, returns a pending
//! promise and queues the work; a local task waits for this isolate's one
//! offload slot and one of the process's slots, runs the work on tokio's
//! blocking pool, reads that thread's CPU clock around it, and back on the
//! isolate's thread charges the time to the request. Within the budget the
//! promise settles in a turn of its own; past it the request ends as
//! `cpu_limit` like a JavaScript loop would (the isolate is discarded).
//!
//! Guarantees: the isolate's thread never runs the work, so its neighbours
//! keep answering; one isolate runs at most one such job at a time (a loop
//! of unawaited calls queues, it does not take more cores); the process
//! runs at most one per core at once.
//!
//! Caveats: a job that started is not interrupted (the RustCrypto calls have
//! no cancellation point): the request can overrun its CPU limit by at most
//! one job (an RSA-4096 generation, or one bounded PBKDF2 call). A job whose
//! request ended first (the worker answered without awaiting it) still runs
//! to its end, holding its isolate's slot, and its CPU time is charged to
//! nobody: at most one such job per isolate at a time.

use std::sync::{Arc, LazyLock};

use tokio::sync::Semaphore;

use super::error::{CryptoError, Result};
use super::formats::Generated;
use crate::host::{HostState, Settlement, new_promise};
use crate::limits::thread_cpu_now;

/// What an offloaded job hands back.
pub(crate) enum Offloaded {
    Bytes(Vec<u8>),
    Generated(Box<Generated>),
}

/// Jobs running at once in the whole process: one per core.
static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    ))
});

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
    let task = tokio::task::spawn_local(async move {
        let Ok(mine) = isolate_slot.acquire_owned().await else {
            return;
        };
        let Ok(process) = SLOTS.clone().acquire_owned().await else {
            return;
        };
        // The slots go with the job, not with this task: if the request ends
        // (and this task is aborted) the job still holds them until it is
        // done, so an isolate never has two running.
        let joined = tokio::task::spawn_blocking(move || {
            let start = thread_cpu_now();
            let result = work();
            let cpu = thread_cpu_now().saturating_sub(start);
            drop((mine, process));
            (result, cpu)
        })
        .await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let (result, cpu) = match joined {
            Ok(done) => done,
            Err(_) => (
                Err(CryptoError::operation("The operation failed")),
                Default::default(),
            ),
        };
        if isolate.charge_offloaded_cpu(ctx, cpu) {
            isolate.settle(op, Settlement::Crypto(Box::new(result)));
        }
    });
    host.set_op_task(op, task.abort_handle());
}
