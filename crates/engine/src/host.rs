//! The native side of HOST.md: the `host` object the runtime's JavaScript
//! calls, and the per-isolate [`HostState`] those calls work on.
//!
//! Every callback here runs inside V8 on the isolate's own thread. None may
//! panic (a panic cannot unwind through V8's C++ frames) and none may start a
//! JS turn of its own: async work is spawned on the thread's `LocalSet` and
//! settles its promise later, in a turn of its own (see `isolate::turn`).

mod cache;
mod clone;
pub(crate) mod codec;
pub(crate) mod crypto;
mod data_url;
mod fetch;
mod form_data;
mod handle;
mod headers;
mod html_rewriter;
mod io;
mod memory;
pub(crate) mod rejection;
mod respond;
pub(crate) mod state;
mod text;
mod timers;
mod url;
mod url_pattern;

pub(crate) use headers::{HeaderNames, header_array, header_block, header_map, lenient_header_map};
pub(crate) use html_rewriter::Rewriters;
pub(crate) use memory::fits as memory_fits;
pub(crate) use state::{HostState, IsolateTurns, Settlement};

use v8::MapFnTo;

/// Every host function: (name on `host`, native callback). The snapshot's
/// external-reference table is built from this list, so the order is part of
/// the snapshot format — append only, and rebuild (automatic) on change.
fn table() -> Vec<(&'static str, v8::FunctionCallback)> {
    vec![
        ("log", text::log.map_fn_to()),
        ("now", text::now.map_fn_to()),
        ("utf8Encode", text::utf8_encode.map_fn_to()),
        ("utf8EncodeInto", text::utf8_encode_into.map_fn_to()),
        ("utf8Decode", text::utf8_decode.map_fn_to()),
        ("urlParse", url::url_parse.map_fn_to()),
        ("urlSet", url::url_set.map_fn_to()),
        ("randomFill", crypto::random_fill.map_fn_to()),
        ("randomUUID", crypto::random_uuid.map_fn_to()),
        ("digest", crypto::digest.map_fn_to()),
        ("structuredClone", clone::structured_clone.map_fn_to()),
        ("timerStart", timers::timer_start.map_fn_to()),
        ("timerCancel", timers::timer_cancel.map_fn_to()),
        ("fetch", fetch::fetch.map_fn_to()),
        ("bodyRead", io::body_read.map_fn_to()),
        ("bodyCancel", io::body_cancel.map_fn_to()),
        ("respond", respond::respond.map_fn_to()),
        ("responseWrite", respond::response_write.map_fn_to()),
        ("responseEnd", respond::response_end.map_fn_to()),
        ("fail", respond::fail.map_fn_to()),
        ("requestDone", respond::request_done.map_fn_to()),
        ("memoryReserve", memory::memory_reserve.map_fn_to()),
        ("memoryCheck", memory::memory_check.map_fn_to()),
        ("cachePut", cache::cache_put.map_fn_to()),
        ("cacheMatch", cache::cache_match.map_fn_to()),
        ("cacheDelete", cache::cache_delete.map_fn_to()),
        (
            "urlPatternParse",
            url_pattern::url_pattern_parse.map_fn_to(),
        ),
        (
            "urlPatternMatchInput",
            url_pattern::url_pattern_match_input.map_fn_to(),
        ),
        (
            "htmlRewriterSelector",
            html_rewriter::html_rewriter_selector.map_fn_to(),
        ),
        (
            "htmlRewriterStart",
            html_rewriter::html_rewriter_start.map_fn_to(),
        ),
        (
            "htmlRewriterWrite",
            html_rewriter::html_rewriter_write.map_fn_to(),
        ),
        (
            "htmlRewriterEnd",
            html_rewriter::html_rewriter_end.map_fn_to(),
        ),
        (
            "htmlRewriterContinue",
            html_rewriter::html_rewriter_continue.map_fn_to(),
        ),
        (
            "htmlRewriterOp",
            html_rewriter::html_rewriter_op.map_fn_to(),
        ),
        (
            "htmlRewriterFree",
            html_rewriter::html_rewriter_free.map_fn_to(),
        ),
        ("cryptoImportKey", crypto::subtle::import_key.map_fn_to()),
        ("cryptoExportKey", crypto::subtle::export_key.map_fn_to()),
        (
            "cryptoGenerateKey",
            crypto::subtle::generate_key.map_fn_to(),
        ),
        ("cryptoSign", crypto::subtle::sign.map_fn_to()),
        ("cryptoVerify", crypto::subtle::verify.map_fn_to()),
        ("cryptoCipher", crypto::subtle::cipher.map_fn_to()),
        ("cryptoDeriveBits", crypto::subtle::derive_bits.map_fn_to()),
        (
            "digestStreamNew",
            crypto::subtle::digest_stream_new.map_fn_to(),
        ),
        (
            "digestStreamWrite",
            crypto::subtle::digest_stream_write.map_fn_to(),
        ),
        (
            "digestStreamEnd",
            crypto::subtle::digest_stream_end.map_fn_to(),
        ),
        (
            "timingSafeEqual",
            crypto::subtle::timing_safe_equal.map_fn_to(),
        ),
        ("formDataParse", form_data::form_data_parse.map_fn_to()),
        ("dataUrl", data_url::data_url.map_fn_to()),
        ("compressionNew", codec::compression_new.map_fn_to()),
        ("compressionWrite", codec::compression_write.map_fn_to()),
        ("compressionEnd", codec::compression_end.map_fn_to()),
        ("codecFree", codec::codec_free.map_fn_to()),
        ("encodingForLabel", codec::encoding_for_label.map_fn_to()),
        ("textDecoderNew", codec::text_decoder_new.map_fn_to()),
        ("textDecode", codec::text_decode.map_fn_to()),
        ("memoryLimit", memory::memory_limit.map_fn_to()),
    ]
}

/// The external references every isolate (and the snapshot creator) is made
/// with: one entry per host function.
pub(crate) fn external_references() -> Vec<v8::ExternalReference> {
    table()
        .into_iter()
        .map(|(_, function)| v8::ExternalReference { function })
        .collect()
}

/// Builds the `host` object (snapshot time only).
pub(crate) fn install<'s>(
    scope: &mut v8::PinScope<'s, '_>,
) -> Result<v8::Local<'s, v8::Object>, String> {
    let host = v8::Object::new(scope);
    for (name, callback) in table() {
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

/// Throws a JS `TypeError` with `message`.
pub(crate) fn throw_type_error(scope: &mut v8::PinScope<'_, '_>, message: &str) {
    if let Some(message) = v8::String::new(scope, message) {
        let error = v8::Exception::type_error(scope, message);
        scope.throw_exception(error);
    }
}

/// Argument `i` as a Rust string (JS `String(value)` semantics). A string
/// longer than the isolate's memory has room for is not copied (nor
/// flattened by V8 first, which would take as much again): the isolate is
/// terminated at its memory limit and the caller gets an empty string.
pub(crate) fn arg_string(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    i: i32,
) -> String {
    let value = args.get(i);
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

/// Argument `i` as a u32 id (0 when not a number).
pub(crate) fn arg_u32(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    i: i32,
) -> u32 {
    args.get(i).uint32_value(scope).unwrap_or(0)
}

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
