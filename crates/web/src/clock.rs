//! `Date`, `performance` and `Performance` (`js/16_clock.js`) on
//! `host.now`, the core's coarse clock ([`HostState::now_ms`]: it advances
//! only at I/O boundaries). The core's events and this family's `Blob`
//! read it through `internal.now` when it is there (an `Event`'s
//! `timeStamp`, a `File`'s `lastModified`: 0 without this family).

use isolane_engine::api::{HostState, Unit};

/// `performance.now`, `Date.now` and `new Date()` on the coarse clock.
pub(crate) fn unit() -> Unit {
    Unit::new("clock").js(&["16_clock.js"]).function("now", now)
}

host_fn! {
/// `now()`: the coarse clock (advances only at I/O boundaries); 0 at
/// snapshot time.
fn now<'s>(scope) -> f64 {
    HostState::get(scope).map_or(0.0, |h| h.now_ms())
}
}
