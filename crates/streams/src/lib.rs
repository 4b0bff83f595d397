//! The Streams Standard as the engine's JavaScript: `ReadableStream` (default
//! and byte streams, default and BYOB readers, `tee`, `pipeTo`,
//! `pipeThrough`, async iteration, `ReadableStream.from`), `WritableStream`,
//! `TransformStream`, `ByteLengthQueuingStrategy` and
//! `CountQueuingStrategy`; Cloudflare's `IdentityTransformStream` and
//! `FixedLengthStream`; and the runtime's body streams. One runtime file,
//! `08_streams.js`, the parts of `js/08_streams/` joined in name order (its
//! README lists them): the parts share one scope, so the body streams
//! (`10_runtime.js`) and `FixedLengthStream` (`09_fixed_length.js`) use the
//! standard's abstract operations (`byteControllerEnqueue`, …) directly and
//! go with them. JavaScript only: no host function, no per-isolate state.
//!
//! A crate *below* the engine's core, not a family above it
//! (docs/adr/0002-engine-crates.md), as `isolane-events` is: the core's own
//! files are built on these streams as they load (`Request` and `Response`
//! bodies, the answer's body `19_worker.js` writes, structured clone), and
//! an engine must run with no family at all. So the core depends on this
//! crate and its `streams` unit (`host/io.rs`) evaluates [`JS`] where the
//! file always ran: after `07_headers.js`, before `10_body.js`. This crate
//! depends on nothing of the engine's.
//!
//! What the file asks of the core, on the `internal` object it runs with
//! (HOST.md): at load, `enumerableMembers`, `setToStringTag` and
//! `defineGlobal`; when called, `isObject`, `requireArgs`, `toDOMString`,
//! `toNumber`, `toDictionary`, `illegalConstructor`, `bufferSourceView`,
//! `isArrayBufferView` and `NativeArrayBuffer` (`00_internal.js`), and
//! `isAbortSignal`, `abortSignalAdd` and `signalAbort` (`isolane-events`,
//! for a pipe's signal). On `host`, when called: `bodyRead` and
//! `bodyCancel` (the core's `streams` unit: a host body read chunk by
//! chunk) and `utf8Encode` (its `text` unit). What it gives the core and
//! the families there: `isReadableStream`, `isWritableStream`,
//! `isTransformStream`, `streamFromBytes`, `streamFromHostBody`,
//! `streamIsDisturbed`, `streamIsLocked`, `streamIsErrored`,
//! `streamExpectedLength`, `streamTee`, `streamCancel`, `streamError`,
//! `createReadableStream`, `acquireReader`, `chunkBytes`, `readAllBytes` and
//! `deferred`.

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

/// The file, in evaluation order: (file name, source wrapped as HOST.md
/// says, an external string V8 reads in place). The engine's snapshot
/// evaluates it in its `streams` unit and lists it among its external
/// references, so every isolate reads it from this binary.
pub static JS: &[(&str, v8::OneByteConst)] = RUNTIME_JS;

/// A hash of this crate's sources (`isolane_jsbuild`): part of the
/// snapshot cache's key, as the engine's own.
pub const FINGERPRINT: &str = env!("ISOLANE_STREAMS_FINGERPRINT");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_keep_their_line_numbers_without_comments() {
        // `isolane_jsbuild` joins the parts and drops comments but keeps
        // their line breaks, so a stack trace's `isolane:08_streams.js:LINE`
        // is the line in the parts joined in name order.
        let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js");
        let files = JS.iter().map(|(name, source)| (*name, source.as_str()));
        let names = isolane_jsbuild::check_embedded(&js, files);
        assert_eq!(names, ["08_streams.js"]);
        let parts = std::fs::read_dir(js.join("08_streams"))
            .into_iter()
            .flatten();
        let js_parts = parts
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".js"));
        assert_eq!(js_parts.count(), 10, "the parts README.md lists");
    }
}
