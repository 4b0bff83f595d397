//! `node:punycode`'s host functions: RFC 3492 by the `idna` crate.

use isolane_engine::api::js_string;
use isolane_engine::api::{HostError, HostResult};

/// Node's message for input Punycode cannot take.
fn invalid() -> HostError {
    HostError::range_error("Invalid input")
}

host_fn! {
/// `punycodeEncode(text)` → its Punycode (no `xn--`).
pub(super) fn encode<'s>(scope, text: String) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let encoded = idna::punycode::encode_str(&text).ok_or_else(invalid)?;
    Ok(js_string(scope, &encoded))
}
}

host_fn! {
/// `punycodeDecode(text)` → the text Punycode `text` encodes.
pub(super) fn decode<'s>(scope, text: String) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let decoded = idna::punycode::decode_to_string(&text).ok_or_else(invalid)?;
    Ok(js_string(scope, &decoded))
}
}
