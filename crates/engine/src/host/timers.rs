//! `host.timerStart` / `host.timerCancel`: one-shot timers on the thread's
//! tokio runtime. A due timer settles in a turn of its own
//! (`WorkerIsolate::fire_timer` → `internal.timerFired(id)`).

use std::rc::Rc;
use std::time::Duration;

use super::HostState;
use crate::unit::Unit;

/// setTimeout, setInterval and their clears.
pub(super) fn unit() -> Unit {
    Unit::new("timers")
        .js(&["15_timers.js"])
        .function("timerStart", timer_start)
        .function("timerCancel", timer_cancel)
}

/// Longest delay honoured (about 24.8 days, as browsers clamp).
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

host_fn! {
/// `timerStart(id, delayMs)`.
fn timer_start<'s>(_scope, host: Rc<HostState>, id: u32, delay: f64) {
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
}

host_fn! {
/// `timerCancel(id)`.
fn timer_cancel<'s>(_scope, host: Rc<HostState>, id: u32) {
    host.cancel_timer(id);
}
}
