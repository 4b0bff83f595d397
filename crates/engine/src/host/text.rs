//! The UTF-8 codecs the core's bodies (and `isolane-web`'s TextEncoder and
//! TextDecoder) use: the unit `utf8`.

use super::error::{HostError, HostResult};
use super::u8_array;
use crate::unit::Unit;

/// UTF-8 to and from strings (`internal.utf8Encode`/`utf8Decode`,
/// `00_internal.js`).
pub(super) fn utf8() -> Unit {
    Unit::new("utf8")
        .function("utf8Encode", utf8_encode)
        .function("utf8Decode", utf8_decode)
}

host_fn! {
/// `utf8Encode(string)`: lone surrogates become U+FFFD.
fn utf8_encode<'s>(scope, s: String) -> Option<v8::Local<'s, v8::Uint8Array>> {
    u8_array(scope, s.into_bytes())
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
