//! The DOM Standard's events and abort signals, as the engine's base
//! JavaScript: `Event`, `EventTarget`, `CustomEvent` and `ErrorEvent`
//! (`js/02_event.js`), `AbortController` and `AbortSignal` with
//! `AbortSignal.timeout` and `AbortSignal.any` (`js/03_abort.js`).
//! JavaScript only: no host function, no per-isolate state.
//!
//! A crate *below* the engine's core, not a family above it
//! (docs/adr/0002-engine-crates.md): the core's own JavaScript is built on
//! these classes as it loads (`Performance`, `WebSocket` and the
//! `fetch`/`scheduled` events extend them; the global's listeners are an
//! `EventTarget`; `Request`, `fetch`, the streams' pipes and timers take an
//! `AbortSignal`; the client's disconnect aborts `request.signal`), and an
//! engine must run with no family at all (its own tests do). So the core
//! depends on this crate and evaluates [`RUNTIME_JS`] in its `base` unit,
//! right after its `00_internal.js` and `01_dom_exception.js`; this crate
//! depends on nothing of the engine's.
//!
//! What the files ask of the core, on the `internal` object they run with
//! (HOST.md): at load, `isObject`, `requireArgs`, `toDOMString`,
//! `toUSVString`, `toNumber`, `toDictionary`, `DOMException`,
//! `enumerableMembers`, `setToStringTag`, `illegalConstructor`,
//! `reportError` and `defineGlobal` (`00_internal.js`,
//! `01_dom_exception.js`); when called, `setTimer` (`isolane-web`'s `15_timers.js`, for
//! `AbortSignal.timeout`) and `now` if the clock's file defined it. What
//! they give the core there: `isEvent`, `isEventTarget`, `eventDispatch`,
//! `dispatchTrusted`, `setEventTrusted`, `listenerCount`, `eventHandler`,
//! `setEventHandler`, `isAbortSignal`, `newAbortSignal`, `signalAbort` and
//! `abortSignalAdd`.

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

/// The files, in evaluation order: (file name, source wrapped as HOST.md
/// says, an external string V8 reads in place). The engine's snapshot
/// evaluates them in its `base` unit and lists them among its external
/// references, so every isolate reads them from this binary.
pub static JS: &[(&str, v8::OneByteConst)] = RUNTIME_JS;

/// A hash of this crate's sources (`isolane_jsbuild`): part of the
/// snapshot cache's key, as the engine's own.
pub const FINGERPRINT: &str = env!("ISOLANE_EVENTS_FINGERPRINT");

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
        assert_eq!(names, ["02_event.js", "03_abort.js"]);
    }
}
