//! The units of the runtime itself, with no host functions of their own:
//! what the Web API families stand on, and what closes the runtime off
//! before any worker code runs.

use crate::unit::Unit;

/// The `internal` object and the base of every other file: DOMException,
/// then Event and EventTarget, AbortController and AbortSignal, whose files
/// are `isolane-events`' (a crate below the core: the core's own files
/// extend them as they load, so no family above it could hold them).
pub(super) fn base() -> Unit {
    Unit::new("base").js(&[
        "00_internal.js",
        "01_dom_exception.js",
        "02_event.js",
        "03_abort.js",
    ])
}

/// Runs last: hides the host object from worker code (HOST.md).
pub(super) fn finalize() -> Unit {
    Unit::new("finalize").js(&["99_finalize.js"])
}
