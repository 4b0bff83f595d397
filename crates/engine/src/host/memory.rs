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
