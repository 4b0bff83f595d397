//! `setTimeout`, `setInterval`, their clears, `queueMicrotask` and
//! `scheduler.wait` (`js/15_timers.js`), on `host.timerStart` and
//! `host.timerCancel`: one-shot timers on the thread's tokio runtime. The
//! table of a request's timers is the core's (they die with the request
//! that armed them, [`HostState::add_timer`]); a due timer settles in a
//! turn of its own (`IsolateTurns::fire_timer` → `internal.timerFired(id)`,
//! which the core's `00_internal.js` defines as a no-op for an engine
//! without this family). The core's events (`AbortSignal.timeout`) and
//! `node:timers` reach them through `internal.setTimer` and
//! `internal.webTimers` only when called, never at load time.

use std::rc::Rc;
use std::time::Duration;

use isolane_engine::api::{HostState, Unit};

/// setTimeout, setInterval and their clears.
pub(crate) fn unit() -> Unit {
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
    let me = host.turns();
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
