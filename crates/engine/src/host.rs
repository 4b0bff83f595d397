//! The native side of HOST.md: the `host` object the runtime's JavaScript
//! calls, and the per-isolate [`HostState`] those calls work on.
//!
//! Every callback here runs inside V8 on the isolate's own thread. None may
//! panic (a panic cannot unwind through V8's C++ frames) and none may start a
//! JS turn of its own: async work is spawned on the thread's `LocalSet` and
//! settles its promise later, in a turn of its own (see `isolate::turn`).

#[macro_use]
mod op;

mod cache;
mod clone;
pub(crate) mod codec;
pub(crate) mod crypto;
mod data_url;
pub(crate) mod error;
mod fetch;
mod form_data;
pub(crate) mod handle;
mod headers;
mod html_rewriter;
mod io;
mod memory;
pub(crate) mod rejection;
mod respond;
mod runtime;
pub(crate) mod state;
mod text;
mod timers;
mod unit;
mod url;
mod url_pattern;

use std::sync::OnceLock;

pub(crate) use headers::{HeaderNames, header_array, header_block, header_map, lenient_header_map};
pub(crate) use state::{HostState, IsolateTurns, Settlement};
pub(crate) use unit::Unit;

/// Every Web API family, in the order their JavaScript is evaluated (the
/// `NN_` file order; a test holds them to it). Each unit declares its host
/// functions, JS files and per-isolate state (`host/unit.rs`); a new API is
/// a new unit here. The snapshot's external references are made from this
/// list in this order: add units before `finalize`, never reorder.
fn families() -> Vec<Unit> {
    vec![
        runtime::base(),
        text::encoding(),
        url::unit(),
        fetch::headers(),
        io::unit(),
        fetch::unit(),
        crypto::unit(),
        timers::unit(),
        text::clock(),
        text::console(),
        clone::unit(),
        respond::unit(),
        memory::unit(),
        url_pattern::unit(),
        cache::unit(),
        html_rewriter::unit(),
        codec::unit(),
        form_data::unit(),
        runtime::finalize(),
    ]
}

/// The units, made once per process.
pub(crate) fn units() -> &'static [Unit] {
    static UNITS: OnceLock<Vec<Unit>> = OnceLock::new();
    UNITS.get_or_init(families)
}

/// Every host function: (name on `host`, native callback), unit by unit.
fn functions() -> impl Iterator<Item = (&'static str, v8::FunctionCallback)> {
    units()
        .iter()
        .flat_map(|unit| unit.functions.iter().copied())
}

/// The runtime's JavaScript files, in evaluation order, each with the name
/// of its unit.
pub(crate) fn js_files() -> impl Iterator<Item = (&'static str, &'static str)> {
    units()
        .iter()
        .flat_map(|unit| unit.js.iter().map(|file| (unit.name, *file)))
}

/// The external references every isolate (and the snapshot creator) is made
/// with: one entry per host function.
pub(crate) fn external_references() -> Vec<v8::ExternalReference> {
    functions()
        .map(|(_, function)| v8::ExternalReference { function })
        .collect()
}

/// Builds the `host` object (snapshot time only).
pub(crate) fn install<'s>(
    scope: &mut v8::PinScope<'s, '_>,
) -> Result<v8::Local<'s, v8::Object>, String> {
    let host = v8::Object::new(scope);
    for (name, callback) in functions() {
        let function = v8::FunctionTemplate::builder_raw(callback)
            .build(scope)
            .get_function(scope)
            .ok_or_else(|| format!("creating host.{name}"))?;
        let key = v8::String::new(scope, name).ok_or("allocating a string")?;
        host.set(scope, key.into(), function.into());
    }
    Ok(host)
}

// === argument and value helpers shared by the host modules ===

/// Argument `i` as a Rust string (JS `String(value)` semantics). A string
/// longer than the isolate's memory has room for is not copied (nor
/// flattened by V8 first, which would take as much again): the isolate is
/// terminated at its memory limit and the caller gets an empty string.
pub(crate) fn arg_string(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    i: i32,
) -> String {
    value_string(scope, args.get(i))
}

/// `value` as a Rust string, as [`arg_string`] makes it.
pub(crate) fn value_string(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> String {
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
pub(crate) fn view_bytes(value: v8::Local<'_, v8::Value>) -> Option<Vec<u8>> {
    let view = v8::Local::<v8::ArrayBufferView>::try_from(value).ok()?;
    let mut bytes = vec![0; view.byte_length()];
    view.copy_contents(&mut bytes);
    Some(bytes)
}

/// A new ArrayBuffer owning `bytes` (no copy), charged to the isolate's
/// memory budget. `None` over the limit: the isolate is then being
/// terminated (see `memory.rs`), and nothing is allocated.
pub(crate) fn array_buffer<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: Vec<u8>,
) -> Option<v8::Local<'s, v8::ArrayBuffer>> {
    let host = HostState::get(scope)?;
    let store = host.memory.backing_store(bytes).ok()?.make_shared();
    Some(v8::ArrayBuffer::with_backing_store(scope, &store))
}

/// A new Uint8Array owning `bytes` (no copy); see [`array_buffer`].
pub(crate) fn u8_array<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: Vec<u8>,
) -> Option<v8::Local<'s, v8::Uint8Array>> {
    let len = bytes.len();
    let buffer = array_buffer(scope, bytes)?;
    v8::Uint8Array::new(scope, buffer, 0, len)
}

/// A JS string from Rust.
pub(crate) fn js_string<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    s: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    v8::String::new(scope, s).map(Into::into)
}

/// A pending promise whose resolver the host keeps until its op settles.
pub(crate) fn new_promise<'s>(
    scope: &mut v8::PinScope<'s, '_>,
) -> Option<(
    v8::Local<'s, v8::PromiseResolver>,
    v8::Local<'s, v8::Promise>,
)> {
    let resolver = v8::PromiseResolver::new(scope)?;
    let promise = resolver.get_promise(scope);
    Some((resolver, promise))
}

#[cfg(test)]
mod tests;
