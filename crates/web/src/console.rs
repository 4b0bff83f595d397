//! The console (`js/17_console.js`): JavaScript only. It formats values
//! (a compact, node-like inspector) and hands each line to the core's
//! `log` unit (`host.log`, the tail's log store and budgets). The core
//! reaches its inspector only when it reports an uncaught value, through
//! `internal.formatError` (which `00_internal.js` defines plainly and this
//! file replaces), never at load time.

use isolane_engine::api::Unit;

pub(crate) fn unit() -> Unit {
    Unit::new("console").js(&["17_console.js"])
}
