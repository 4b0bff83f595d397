//! `host.timerStart` / `host.timerCancel`: one-shot timers on the thread's
//! tokio runtime. A due timer settles in a turn of its own
//! (`WorkerIsolate::fire_timer` → `internal.timerFired(id)`).

use std::time::Duration;

use super::{HostState, arg_u32};

/// Longest delay honoured (about 24.8 days, as browsers clamp).
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

pub(super) fn timer_start(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let id = arg_u32(scope, &args, 0);
    let delay = args.get(1).number_value(scope).unwrap_or(0.0);
    let delay = if delay.is_finite() {
        delay.clamp(0.0, MAX_DELAY_MS)
    } else {
        0.0
    };
    let me = host.me.clone();
    // Timers belong to the request that armed them: they die with it.
    let ctx = host.current();
    let task = tokio::task::spawn_local(async move {
        tokio::time::sleep(Duration::from_secs_f64(delay / 1000.0)).await;
        if let Some(isolate) = me.upgrade() {
            isolate.fire_timer(id);
        }
    });
    host.add_timer(id, ctx, task.abort_handle());
}

pub(super) fn timer_cancel(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    if let Some(host) = HostState::get(scope) {
        host.cancel_timer(id);
    }
}
