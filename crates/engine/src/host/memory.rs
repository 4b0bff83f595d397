//! `host.memoryReserve`: address space V8 reserves outside the engine's
//! allocator (a resizable ArrayBuffer's `maxByteLength`), bounded by the
//! worker's limit (`Memory::reserve`). The pages such a buffer commits as
//! it grows are counted apart, from V8's own figure (`Memory::measure_external`).

use super::HostState;

/// `memoryReserve(bytes)`: reserves `bytes` for the life of the isolate.
/// Over the limit the isolate is terminated (see `memory.rs`) and a
/// RangeError is thrown for the (already unwinding) caller.
pub(super) fn memory_reserve(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let requested = args.get(0).number_value(scope).unwrap_or(0.0);
    // Not a valid length: V8 itself throws for it next.
    if !requested.is_finite() || requested < 0.0 {
        return;
    }
    // `as` saturates: anything past usize is over every limit.
    let bytes = requested as usize;
    if host.memory.reserve(bytes).is_err()
        && let Some(message) = v8::String::new(scope, "memory limit exceeded")
    {
        let error = v8::Exception::range_error(scope, message);
        scope.throw_exception(error);
    }
}

/// `memoryCheck(bytes)`: whether `bytes` more would still fit the isolate's
/// limit, asked by the runtime before a builtin that makes that much in one
/// step V8 cannot interrupt (`String.prototype.repeat`, `Array.prototype.fill`
/// over a huge range). Charges nothing. When they would not fit, the
/// isolate is terminated (`memory_limit`) before the builtin starts, and a
/// RangeError is thrown for the (already unwinding) caller.
pub(super) fn memory_check(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let requested = args.get(0).number_value(scope).unwrap_or(0.0);
    if !requested.is_finite() || requested <= 0.0 {
        return;
    }
    // `as` saturates: anything past usize is over every limit.
    if !fits(scope, requested as usize)
        && let Some(message) = v8::String::new(scope, "memory limit exceeded")
    {
        let error = v8::Exception::range_error(scope, message);
        scope.throw_exception(error);
    }
}

/// Whether `bytes` more fit the isolate's limit now; when not, its
/// JavaScript is being terminated (see `memory.rs`).
pub(crate) fn fits(scope: &mut v8::PinScope<'_, '_>, bytes: usize) -> bool {
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

/// `memoryLimit()`: the isolate's memory limit in bytes (the runtime
/// bounds what a Wasm memory may reserve by it, js/25_wasm.js).
pub(super) fn memory_limit(
    scope: &mut v8::PinScope<'_, '_>,
    _args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    if let Some(host) = HostState::get(scope) {
        rv.set_double(host.memory.limit() as f64);
    }
}
