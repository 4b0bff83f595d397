//! `host.now` and the UTF-8 codecs behind TextEncoder/TextDecoder;
//! the units `clock` and `encoding` (with the legacy decoders of
//! `text/decoder.rs`).

mod decoder;

use super::error::{HostError, HostResult};
use super::{HostState, u8_array};
use crate::unit::Unit;

/// TextEncoder, TextDecoder (UTF-8 here, the legacy encodings in
/// `text/decoder.rs`), atob/btoa.
pub(super) fn encoding() -> Unit {
    Unit::new("encoding")
        .js(&["04_encoding.js", "05_base64.js"])
        .function("utf8Encode", utf8_encode)
        .function("utf8EncodeInto", utf8_encode_into)
        .function("utf8Decode", utf8_decode)
        .function("encodingForLabel", decoder::encoding_for_label)
        .function("textDecoderNew", decoder::text_decoder_new)
        .function("textDecode", decoder::text_decode)
}

/// `performance.now`, `Date.now` and `new Date()` on the coarse clock.
pub(super) fn clock() -> Unit {
    Unit::new("clock").js(&["16_clock.js"]).function("now", now)
}

host_fn! {
/// `now()`: the coarse clock (advances only at I/O boundaries); 0 at
/// snapshot time.
fn now<'s>(scope) -> f64 {
    HostState::get(scope).map_or(0.0, |h| h.now_ms())
}
}

host_fn! {
/// `utf8Encode(string)`: lone surrogates become U+FFFD.
fn utf8_encode<'s>(scope, s: String) -> Option<v8::Local<'s, v8::Uint8Array>> {
    u8_array(scope, s.into_bytes())
}
}

host_fn! {
/// `utf8EncodeInto(string, u8)` → `[read, written]`.
fn utf8_encode_into<'s>(
    scope,
    s: String,
    dest: v8::Local<'s, v8::Value>,
) -> HostResult<v8::Local<'s, v8::Array>> {
    let Ok(dest) = v8::Local::<v8::Uint8Array>::try_from(dest) else {
        return Err(HostError::type_error(
            "utf8EncodeInto: destination must be a Uint8Array",
        ));
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
    Ok(v8::Array::new_with_elements(scope, &[read, written]))
}
}

host_fn! {
/// `utf8Decode(u8, fatal, ignoreBOM)`.
fn utf8_decode<'s>(
    scope,
    bytes: Option<Vec<u8>>,
    fatal: bool,
    ignore_bom: bool,
) -> HostResult<Option<v8::Local<'s, v8::String>>> {
    let Some(bytes) = bytes else {
        return Err(HostError::type_error("utf8Decode: input must be a BufferSource"));
    };
    let mut input: &[u8] = &bytes;
    if !ignore_bom {
        input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    }
    let text = if fatal {
        match std::str::from_utf8(input) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                return Err(HostError::type_error(
                    "The encoded data was not valid for encoding utf-8",
                ));
            }
        }
    } else {
        String::from_utf8_lossy(input)
    };
    Ok(v8::String::new(scope, &text))
}
}
