//! Argument and value helpers the host modules share: strings and bytes out
//! of V8 (bounded by the memory limit), charged buffers and promises into it.

use super::HostState;
use super::memory;

/// Argument `i` as a Rust string (JS `String(value)` semantics). A string
/// longer than the isolate's memory has room for is not copied (nor
/// flattened by V8 first, which would take as much again): the isolate is
/// terminated at its memory limit and the caller gets an empty string.
pub fn arg_string(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    i: i32,
) -> String {
    value_string(scope, args.get(i))
}

/// `value` as a Rust string, as [`arg_string`] makes it.
pub fn value_string(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> String {
    if let Ok(string) = v8::Local::<v8::String>::try_from(value) {
        let length = string.length();
        // At least a byte per unit is copied; small ones always fit.
        if length > HUGE_STRING && !memory::fits(scope, length) {
            return String::new();
        }
    }
    value.to_rust_string_lossy(scope)
}

/// Strings at least this long are checked against the memory limit before
/// they are copied out of V8 (`arg_string`).
const HUGE_STRING: usize = 1 << 20;

/// The bytes of an ArrayBufferView (a copy).
pub fn view_bytes(value: v8::Local<'_, v8::Value>) -> Option<Vec<u8>> {
    let view = v8::Local::<v8::ArrayBufferView>::try_from(value).ok()?;
    let mut bytes = vec![0; view.byte_length()];
    view.copy_contents(&mut bytes);
    Some(bytes)
}

/// A new ArrayBuffer owning `bytes` (no copy), charged to the isolate's
/// memory budget. `None` over the limit: the isolate is then being
/// terminated (see `memory.rs`), and nothing is allocated.
pub fn array_buffer<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: Vec<u8>,
) -> Option<v8::Local<'s, v8::ArrayBuffer>> {
    let host = HostState::get(scope)?;
    if !host.memory.would_fit(bytes.len()) {
        collect_before_refusing(scope, &host);
    }
    let store = host.memory.backing_store(bytes).ok()?.make_shared();
    Some(v8::ArrayBuffer::with_backing_store(scope, &store))
}

/// Collects the isolate's garbage and measures it again, before bytes that
/// would not fit are refused. What is in the way may be garbage: the
/// buffers of earlier requests (a client's large body read whole) stay
/// charged until V8 collects them, and V8 sees no reason to while its heap
/// is small, so the next request, often another client's, was refused at
/// the limit (the second of two 8 MiB bodies read whole under 64 MiB).
/// A full collection (milliseconds) on this path only, counted as the
/// request's own CPU time.
fn collect_before_refusing(scope: &mut v8::PinScope<'_, '_>, host: &HostState) {
    scope.low_memory_notification();
    host.memory
        .note_heap(scope.get_heap_statistics().used_heap_size());
    // Over the limit even now: the isolate is being stopped, and the
    // charge that follows is refused.
    let _ = host.memory.measure_external();
}

/// A new Uint8Array owning `bytes` (no copy); see [`array_buffer`].
pub fn u8_array<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: Vec<u8>,
) -> Option<v8::Local<'s, v8::Uint8Array>> {
    let len = bytes.len();
    let buffer = array_buffer(scope, bytes)?;
    v8::Uint8Array::new(scope, buffer, 0, len)
}

/// A JS string from Rust.
pub fn js_string<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    s: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    v8::String::new(scope, s).map(Into::into)
}

/// The promise of an op whose host function checked its arguments into
/// `early`: `Ok` with the resolver, the promise and the work to run, or
/// `Err` with a promise already rejected with the argument's error.
pub(crate) type Begun<'s, F> = Result<
    (
        v8::Local<'s, v8::PromiseResolver>,
        v8::Local<'s, v8::Promise>,
        F,
    ),
    v8::Local<'s, v8::Promise>,
>;

/// [`Begun`] from `early`.
pub fn begin_op<'s, F>(
    scope: &mut v8::PinScope<'s, '_>,
    early: Result<F, super::error::HostError>,
) -> Option<Begun<'s, F>> {
    let (resolver, promise) = new_promise(scope)?;
    Some(match early {
        Ok(work) => Ok((resolver, promise, work)),
        Err(error) => {
            if let Some(error) = error.to_js(scope) {
                resolver.reject(scope, error);
            }
            Err(promise)
        }
    })
}

/// Returns a promise for `work` (rejected at once with `early`'s error),
/// settled with what `work` returns: an op of the calling request, or of
/// the isolate when `detached` (an object's storage op, which a request may
/// await after the request that began it has ended).
pub fn spawn_op<'s, F, S>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    early: Result<F, super::error::HostError>,
    detached: bool,
) -> Option<v8::Local<'s, v8::Promise>>
where
    F: std::future::Future<Output = S> + 'static,
    S: super::Settle + 'static,
{
    let (resolver, promise, work) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = if detached {
        host.add_detached_op(host.current(), resolver)
    } else {
        host.add_op(host.current(), resolver)
    };
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let settled = work.await;
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, super::Settlement::custom(settled));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}

/// A pending promise whose resolver the host keeps until its op settles.
pub fn new_promise<'s>(
    scope: &mut v8::PinScope<'s, '_>,
) -> Option<(
    v8::Local<'s, v8::PromiseResolver>,
    v8::Local<'s, v8::Promise>,
)> {
    let resolver = v8::PromiseResolver::new(scope)?;
    let promise = resolver.get_promise(scope);
    Some((resolver, promise))
}
