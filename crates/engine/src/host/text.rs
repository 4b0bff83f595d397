//! `host.log`, `host.now` and the UTF-8 codecs behind TextEncoder/TextDecoder.

use super::{HostState, arg_string, throw_type_error, u8_array, view_bytes};

/// `log(level, message)`: a structured event tagged with worker and request.
pub(super) fn log(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let level = arg_string(scope, &args, 0);
    let message = arg_string(scope, &args, 1);
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let request_id = host.request_id(host.current());
    let request_id = request_id.as_deref().unwrap_or("");
    let worker = host.worker_id();
    let revision = host.revision();
    let thread = host.thread.index;
    match level.as_str() {
        "error" => {
            tracing::error!(target: "isolane::worker", thread = thread, worker.id = worker, revision = revision, request.id = request_id, "{message}")
        }
        "warn" => {
            tracing::warn!(target: "isolane::worker", thread = thread, worker.id = worker, revision = revision, request.id = request_id, "{message}")
        }
        "debug" => {
            tracing::debug!(target: "isolane::worker", thread = thread, worker.id = worker, revision = revision, request.id = request_id, "{message}")
        }
        _ => {
            tracing::info!(target: "isolane::worker", thread = thread, worker.id = worker, revision = revision, request.id = request_id, "{message}")
        }
    }
}

/// `now()`: the coarse clock (advances only at I/O boundaries).
pub(super) fn now(
    scope: &mut v8::PinScope<'_, '_>,
    _args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let ms = HostState::get(scope).map_or(0.0, |h| h.now_ms());
    rv.set(v8::Number::new(scope, ms).into());
}

/// `utf8Encode(string)`: lone surrogates become U+FFFD.
pub(super) fn utf8_encode(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let s = arg_string(scope, &args, 0);
    if let Some(array) = u8_array(scope, s.into_bytes()) {
        rv.set(array.into());
    }
}

/// `utf8EncodeInto(string, u8)` → `[read, written]`.
pub(super) fn utf8_encode_into(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let s = arg_string(scope, &args, 0);
    let Ok(dest) = v8::Local::<v8::Uint8Array>::try_from(args.get(1)) else {
        throw_type_error(scope, "utf8EncodeInto: destination must be a Uint8Array");
        return;
    };
    let capacity = dest.byte_length();
    let (mut read, mut written) = (0usize, 0usize);
    let mut out = Vec::with_capacity(capacity.min(s.len()));
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let encoded = c.encode_utf8(&mut buf);
        if written + encoded.len() > capacity {
            break;
        }
        out.extend_from_slice(encoded.as_bytes());
        written += encoded.len();
        read += c.len_utf16();
    }
    if written > 0 {
        let data = dest.data().cast::<u8>();
        // SAFETY: `data` points at the view's first byte and the view is at
        // least `capacity >= written` bytes long; JS cannot run (and detach or
        // shrink the buffer) while this callback holds the thread.
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), data, written) };
    }
    let read = v8::Number::new(scope, read as f64).into();
    let written = v8::Number::new(scope, written as f64).into();
    rv.set(v8::Array::new_with_elements(scope, &[read, written]).into());
}

/// `utf8Decode(u8, fatal, ignoreBOM)`.
pub(super) fn utf8_decode(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(bytes) = view_bytes(args.get(0)) else {
        throw_type_error(scope, "utf8Decode: input must be a BufferSource");
        return;
    };
    let fatal = args.get(1).boolean_value(scope);
    let ignore_bom = args.get(2).boolean_value(scope);
    let mut input: &[u8] = &bytes;
    if !ignore_bom {
        input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    }
    let text = if fatal {
        match std::str::from_utf8(input) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                throw_type_error(scope, "The encoded data was not valid for encoding utf-8");
                return;
            }
        }
    } else {
        String::from_utf8_lossy(input)
    };
    if let Some(s) = v8::String::new(scope, &text) {
        rv.set(s.into());
    }
}
