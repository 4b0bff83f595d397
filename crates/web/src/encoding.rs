//! TextEncoder, TextDecoder and atob/btoa (`js/04_encoding.js`,
//! `js/05_base64.js`): UTF-8 through the core's `utf8Encode`/`utf8Decode`
//! (its bodies use them too) and `utf8EncodeInto` here, every other
//! encoding through an encoding_rs decoder (`encoding/decoder.rs`); and
//! TextEncoderStream and TextDecoderStream (`js/08_encoding_streams.js`,
//! the [`streams`] unit), over the core's `TransformStream`. The core
//! reaches none of it.

mod decoder;

use isolane_engine::api::{HostError, HostResult, Unit};

pub(crate) fn unit() -> Unit {
    Unit::new("encoding")
        .js(&["04_encoding.js", "05_base64.js"])
        .function("utf8EncodeInto", utf8_encode_into)
        .function("encodingForLabel", decoder::encoding_for_label)
        .function("textDecoderNew", decoder::text_decoder_new)
        .function("textDecode", decoder::text_decode)
}

/// TextEncoderStream and TextDecoderStream: JavaScript only, a unit of
/// its own for its file's place in the family's order (after `url`'s).
pub(crate) fn streams() -> Unit {
    Unit::new("encoding_streams").js(&["08_encoding_streams.js"])
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
