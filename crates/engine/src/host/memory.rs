//! `host.memoryReserve`: address space V8 reserves outside the engine's
//! allocator (a resizable ArrayBuffer's `maxByteLength`), bounded by the
//! worker's limit (`Memory::reserve`). The pages such a buffer commits as
//! it grows are counted apart, from V8's own figure (`Memory::measure_external`).

use std::rc::Rc;

use super::HostState;
use super::error::{HostError, HostResult};
use crate::unit::Unit;

/// The memory budget's JavaScript side: resizable ArrayBuffers, the checks
/// before large builtins.
pub(super) fn unit() -> Unit {
    Unit::new("memory")
        .js(&["20_memory.js", "20_uninterruptible.js"])
        .function("memoryReserve", memory_reserve)
        .function("memoryCheck", memory_check)
        .function("memoryCheckNow", memory_check_now)
}

/// WebAssembly, its memories made and grown only within the limit.
pub(super) fn wasm() -> Unit {
    Unit::new("wasm")
        .js(&["25_wasm.js"])
        .function("memoryLimit", memory_limit)
}

fn over_limit() -> HostError {
    HostError::range_error("memory limit exceeded")
}

host_fn! {
/// `memoryReserve(bytes)`: reserves `bytes` for the life of the isolate.
/// Over the limit the isolate is terminated (see `memory.rs`) and a
/// RangeError is thrown for the (already unwinding) caller.
fn memory_reserve<'s>(_scope, host: Rc<HostState>, requested: f64) -> HostResult<()> {
    // Not a valid length: V8 itself throws for it next.
    if !requested.is_finite() || requested < 0.0 {
        return Ok(());
    }
    // `as` saturates: anything past usize is over every limit.
    let bytes = requested as usize;
    host.memory.reserve(bytes).map_err(|_| over_limit())
}
}

host_fn! {
/// `memoryCheck(bytes)`: whether `bytes` more would still fit the isolate's
/// limit, asked by the runtime before a builtin that makes that much in one
/// step V8 cannot interrupt (`String.prototype.repeat`, `Array.prototype.fill`
/// over a huge range). Charges nothing. When they would not fit, the
/// isolate is terminated (`memory_limit`) before the builtin starts, and a
/// RangeError is thrown for the (already unwinding) caller.
fn memory_check<'s>(scope, requested: f64) -> HostResult<()> {
    if !requested.is_finite() || requested <= 0.0 {
        return Ok(());
    }
    // `as` saturates: anything past usize is over every limit.
    if fits(scope, requested as usize) {
        Ok(())
    } else {
        Err(over_limit())
    }
}
}

/// Whether `bytes` more fit the isolate's limit now; when not, its
/// JavaScript is being terminated (see `memory.rs`).
pub fn fits(scope: &mut v8::PinScope<'_, '_>, bytes: usize) -> bool {
    let Some(host) = HostState::get(scope) else {
        return true;
    };
    // V8's own figure first: it holds what grew without the allocator
    // (Wasm memories, resizable buffers) since the last measure.
    if !host.memory.measure_external() {
        return false;
    }
    let fits = host.memory.charge(bytes).is_ok();
    if fits {
        host.memory.release(bytes);
    }
    fits
}

host_fn! {
/// `memoryCheckNow(bytes)`: like `memoryCheck`, with the heap measured now
/// rather than at the end of the last turn. Asked where what came before in
/// the same turn counts: before a Wasm table grows or a large WasmGC array
/// is made (js/25_wasm.js: one straight line of Wasm can make many of
/// them with nothing V8 stops at in between), and as a huge result is
/// built from parts (js/20_uninterruptible.js: the parts made so far are
/// on the heap).
fn memory_check_now<'s>(scope, requested: f64) -> HostResult<()> {
    if !requested.is_finite() || requested <= 0.0 {
        return Ok(());
    }
    let heap = scope.get_heap_statistics().used_heap_size();
    if let Some(host) = HostState::get(scope) {
        host.memory.note_heap(heap);
    }
    // `as` saturates: anything past usize is over every limit.
    if fits(scope, requested as usize) {
        Ok(())
    } else {
        Err(over_limit())
    }
}
}

host_fn! {
/// `memoryLimit()`: the isolate's memory limit in bytes (the runtime
/// bounds what a Wasm memory may reserve by it, js/25_wasm.js).
fn memory_limit<'s>(_scope, host: Rc<HostState>) -> f64 {
    host.memory.limit() as f64
}
}
