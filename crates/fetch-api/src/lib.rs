//! The Fetch Standard's classes, as the engine's JavaScript below its core:
//! `Headers` (`js/07_headers.js`), the Body mixin Request and Response share
//! (`js/10_body.js`), `Request` (`js/11_request.js`) and `Response`
//! (`js/12_response.js`). JavaScript only: no host function, no per-isolate
//! state. `fetch()` itself is `isolane-web`'s.
//!
//! A crate *below* the engine's core, not a family above it
//! (docs/adr/0002-engine-crates.md): the core runs every request through
//! these classes (its `19_worker.js` makes the `Request` a Worker sees and
//! reads back the `Response` it answers with; its `26_websocket.js`,
//! `isolane-web`'s `18_structured_clone.js` and Durable Objects use them
//! too), and an engine must
//! run requests with no family at all (its own tests do). So the core
//! depends on this crate and evaluates [`JS`] where the files always ran:
//! its `headers` unit (`07_headers.js`, before the streams) and its
//! `request` unit (the other three, after the streams and before
//! its `19_worker.js`). The Rust the files' objects cross the host boundary
//! with (header lists and blocks, a request's head, the response's
//! hand-back: `host/headers.rs`, `host/request_head.rs`, `host/respond.rs`)
//! is the request path's mechanics and stays in the core; nothing native is
//! these classes' alone. This crate depends on nothing of the engine's.
//!
//! What the files ask of the core, on the `internal` object and the `host`
//! object they run with (HOST.md): at load, `makePairIterable`,
//! `enumerableMembers` and `defineGlobal` (`00_internal.js`); when called,
//! `isObject`, `requireArgs`, `toByteString`, `toDOMString`,
//! `toUSVString`, `toNumber`, `toDictionary`, `bufferSourceCopy`,
//! `parseURL` and `isURLSearchParams` (`00_internal.js`, the last replaced
//! by `isolane-web`'s URL), `host.utf8Encode` and `internal.utf8Decode`
//! (the core's `utf8` unit), `isReadableStream`, `acquireReader`,
//! `readAllBytes`, `streamFromBytes`, `streamFromHostBody`,
//! `streamIsDisturbed`, `streamIsLocked` and `streamTee` (the streams),
//! `isAbortSignal` and `newAbortSignal` (`isolane-events`), `isWebSocket`
//! and `outboundWebSocket` (`26_websocket.js`), and, when a body is a Blob
//! or FormData (`isBlob` and `isFormData` are looked for first: with no
//! Web family there are none), `blobBytes`, `newBlob`,
//! `serializeFormData` and `parseFormDataBody` (`isolane-web`). What they
//! give the core and the families there: the globals `Headers`, `Request`
//! and `Response`; `isHeaders`, `headersPairs`, `headersGuard`,
//! `headersSetGuard`, `headersList`, `headersFromList`, `headersCopy` and
//! `fillHeaders`; `extractBody`, `newBodyFromStream`, `newBodyFromBytes`,
//! `installBody` and `BODY_USED_MESSAGE`; `isRequest`, `requestSignal`,
//! `requestParts` and `requestFromHost`; `isResponse`, `responseParts` and
//! `responseFromHost`.

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

/// The files, in file-name order: (file name, source wrapped as HOST.md
/// says, an external string V8 reads in place). The engine's snapshot
/// evaluates each in the unit that names it and lists them among its
/// external references, so every isolate reads them from this binary.
pub static JS: &[(&str, v8::OneByteConst)] = RUNTIME_JS;

/// A hash of this crate's sources (`isolane_jsbuild`): part of the
/// snapshot cache's key, as the engine's own.
pub const FINGERPRINT: &str = env!("ISOLANE_FETCH_API_FINGERPRINT");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_keep_their_line_numbers_without_comments() {
        // `isolane_jsbuild` drops comments but keeps their line breaks, so
        // a stack trace's `isolane:NN_file.js:LINE` is the line in js/.
        let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js");
        let files = JS.iter().map(|(name, source)| (*name, source.as_str()));
        let names = isolane_jsbuild::check_embedded(&js, files);
        assert_eq!(
            names,
            [
                "07_headers.js",
                "10_body.js",
                "11_request.js",
                "12_response.js"
            ]
        );
    }
}
