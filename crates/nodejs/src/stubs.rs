//! The Node modules workerd has only as stubs, each its own unit: they load
//! (so a package that merely imports one loads), their constants and
//! harmless queries answer as Node's would, and whatever would need a
//! process, a thread, a terminal or a debugger throws "not implemented".
//! Each opens from its own date (`MODULE_GATES` in `isolane_worker::compat`).

use isolane_engine::api::Unit;

/// `node:child_process` (2026-03-17).
pub(crate) fn child_process() -> Unit {
    Unit::new("node:child_process")
        .node_module("child_process", include_str!("../js/child_process.js"))
}

/// `node:cluster` (2025-12-04): always the primary.
pub(crate) fn cluster() -> Unit {
    Unit::new("node:cluster").node_module("cluster", include_str!("../js/cluster.js"))
}

/// `node:dgram` (2026-01-29).
pub(crate) fn dgram() -> Unit {
    Unit::new("node:dgram").node_module("dgram", include_str!("../js/dgram.js"))
}

/// `node:domain` (2025-12-04).
pub(crate) fn domain() -> Unit {
    Unit::new("node:domain").node_module("domain", include_str!("../js/domain.js"))
}

/// `node:inspector` and `node:inspector/promises` (2026-01-29).
pub(crate) fn inspector() -> Unit {
    Unit::new("node:inspector")
        .node_module("inspector", include_str!("../js/inspector.js"))
        .node_module(
            "inspector/promises",
            "module.exports = require('node:inspector').promises;",
        )
}

/// `node:perf_hooks` (2026-03-17): the runtime's `performance`.
pub(crate) fn perf_hooks() -> Unit {
    Unit::new("node:perf_hooks").node_module("perf_hooks", include_str!("../js/perf_hooks.js"))
}

/// `node:readline` and `node:readline/promises` (2026-03-17).
pub(crate) fn readline() -> Unit {
    Unit::new("node:readline")
        .node_module("readline", include_str!("../js/readline.js"))
        .node_module(
            "readline/promises",
            "module.exports = require('node:readline').promises;",
        )
}

/// `node:repl` (2026-03-17).
pub(crate) fn repl() -> Unit {
    Unit::new("node:repl").node_module("repl", include_str!("../js/repl.js"))
}

/// `node:sqlite` (2026-01-29).
pub(crate) fn sqlite() -> Unit {
    Unit::new("node:sqlite").node_module("sqlite", include_str!("../js/sqlite.js"))
}

/// `node:trace_events` (2025-12-04).
pub(crate) fn trace_events() -> Unit {
    Unit::new("node:trace_events")
        .node_module("trace_events", include_str!("../js/trace_events.js"))
}

/// `node:tty` (2026-03-17): nothing is a terminal.
pub(crate) fn tty() -> Unit {
    Unit::new("node:tty").node_module("tty", include_str!("../js/tty.js"))
}

/// `node:v8` (2026-03-17).
pub(crate) fn v8() -> Unit {
    Unit::new("node:v8").node_module("v8", include_str!("../js/v8.js"))
}

/// `node:wasi` (2025-12-04).
pub(crate) fn wasi() -> Unit {
    Unit::new("node:wasi").node_module("wasi", include_str!("../js/wasi.js"))
}

/// `node:worker_threads` (2026-03-17): the main thread, alone.
pub(crate) fn worker_threads() -> Unit {
    Unit::new("node:worker_threads")
        .node_module("worker_threads", include_str!("../js/worker_threads.js"))
}

/// `node:test`: its mock classes, no runner (ungated, as in workerd).
pub(crate) fn test() -> Unit {
    Unit::new("node:test").node_module("test", include_str!("../js/test.js"))
}
