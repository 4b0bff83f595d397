//! The startup snapshot: a V8 heap with the runtime's JavaScript already
//! evaluated, so a new isolate + context costs a deserialisation, not a
//! compile.
//!
//! Made once per process, at the first `Engine::start`, on the calling (main)
//! thread, and shared by every engine thread as a leaked `&'static [u8]`.
//! With `EngineConfig::snapshot_cache` set (`isolane dev`: the user's cache
//! folder; a node: `--snapshot-cache-dir`), it is read from the file that
//! the first process of this build wrote there (`cache.rs`: keyed by the
//! runtime's sources, the engine's, V8's version and flags; checked before
//! use, rebuilt and rewritten when it does not check out). Building it in
//! `build.rs` would make `build.rs` itself link V8 (a second 167 MB link on
//! every change to the engine); the cache gives the same start-up from the
//! second start on (`examples/measure.rs` prints the engine's start time).
//!
//! Compiled code is kept in the blob (`FunctionCodeHandling::Keep`), after
//! `internal.warmUp()` ran a few typical requests through the runtime at
//! snapshot time. Without that, every new isolate compiled the runtime's
//! request path lazily on its first request — about 4.5 M of the 5 M
//! instructions that request took (callgrind, `examples/cold.rs`); with it
//! the first request in a fresh isolate costs ~0.65 M instructions, for ~54
//! KiB more V8 heap per isolate and ~3% more instructions to create one.
//! Only what ran is kept: functions that never ran during the build have no
//! bytecode to keep.

use std::path::Path;
use std::sync::OnceLock;

use crate::host;
use crate::outcome::EngineError;

mod cache;

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

static BLOB: OnceLock<Result<&'static [u8], String>> = OnceLock::new();

/// The snapshot blob, made on first use (from `cache_dir` when it holds this
/// build's, built otherwise). Call after `platform::init`.
pub(crate) fn blob(cache_dir: Option<&Path>) -> Result<&'static [u8], EngineError> {
    BLOB.get_or_init(|| {
        let bytes = match cache_dir {
            Some(dir) => load_or_build(dir, &cache::current_key(), build),
            None => build(),
        };
        bytes.map(|bytes| -> &'static [u8] {
            // Leaked on purpose: every isolate of the process deserialises
            // from it, for as long as the process lives.
            Box::leak(bytes.into_boxed_slice())
        })
    })
    .clone()
    .map_err(|message| EngineError::Snapshot { message })
}

/// This build's blob from `dir`, or `build`'s, then written to `dir`. A
/// cache that cannot be read or written costs a build, never the start.
fn load_or_build(
    dir: &Path,
    key: &crate::checked_file::Key,
    build: impl FnOnce() -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    match cache::load(dir, key) {
        Ok(Some(blob)) => {
            tracing::debug!(dir = %dir.display(), bytes = blob.len(), "snapshot read from the cache");
            return Ok(blob);
        }
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(kind = error.kind(), %error, "snapshot cache file rejected; rebuilding it");
        }
    }
    let blob = build()?;
    if let Err(error) = cache::store(dir, key, &blob) {
        tracing::warn!(kind = error.kind(), %error, "snapshot cache not written");
    }
    Ok(blob)
}

/// Names of the runtime files (the core's, then its families'), for
/// diagnostics.
pub fn runtime_files() -> Vec<&'static str> {
    sources().map(|(name, _)| name).collect()
}

/// The external references every isolate (and the snapshot creator) is made
/// with: the host functions, then the runtime's sources. A source the
/// creator compiled from an external string whose resource is in this table
/// stays external in the blob (V8 writes the table index, not the bytes), so
/// every isolate reads the sources in place from this binary rather than
/// holding its own copy (~330 KiB each; docs/benchmark-history.md,
/// section 5).
pub(crate) fn external_references() -> Vec<v8::ExternalReference> {
    let sources = sources().map(|(_, source)| v8::ExternalReference {
        pointer: std::ptr::from_ref(source).cast_mut().cast(),
    });
    host::external_references()
        .into_iter()
        .chain(sources)
        .collect()
}

/// Every runtime file of the process: the core's, those of the crates
/// below the core its units evaluate (`isolane_events` in `base`,
/// `isolane_streams` in `streams`, `isolane_fetch_api` in `headers` and
/// `request`), then each
/// family's ([`crate::Family::js`]) in the order given.
pub(crate) fn sources() -> impl Iterator<Item = (&'static str, &'static v8::OneByteConst)> {
    RUNTIME_JS
        .iter()
        .chain(isolane_events::JS)
        .chain(isolane_streams::JS)
        .chain(isolane_fetch_api::JS)
        .chain(host::families().iter().flat_map(|family| family.js.iter()))
        .map(|(name, source)| (*name, source))
}

fn build() -> Result<Vec<u8>, String> {
    // The snapshot creator gets the same external references as every isolate
    // made from the blob: the host functions are serialised as indices into
    // this table.
    let mut creator = v8::Isolate::snapshot_creator(Some(external_references().into()), None);
    {
        // Handle scope for everything created while evaluating the runtime;
        // the context survives it because `set_default_context` keeps it.
        v8::scope!(let scope, &mut creator);
        let context = v8::Context::new(scope, Default::default());
        let scope = &mut v8::ContextScope::new(scope, context);
        let host_object = host::install(scope)?;
        let global = context.global(scope);
        let key = v8::String::new(scope, "__host").ok_or("allocating a string")?;
        global.set(scope, key.into(), host_object.into());
        for unit in host::units() {
            let mut files = Vec::with_capacity(unit.js.len());
            for name in unit.js {
                let source = sources()
                    .find(|(file, _)| file == name)
                    .map(|(_, source)| source)
                    .ok_or_else(|| {
                        format!("the host unit {} names {name}, not in its js/", unit.name)
                    })?;
                let file = evaluate(scope, name, source)?;
                if unit.lazy.is_empty() {
                    run(scope, global, name, file)?;
                }
                files.push(file);
            }
            if !unit.lazy.is_empty() {
                let internal = internal_object(scope, global)?;
                host::lazy::install(scope, global, internal, &files, unit.lazy)?;
            }
        }
        warm_up(scope, global)?;
        scope.set_default_context(context);
    }
    let blob = creator
        .create_blob(v8::FunctionCodeHandling::Keep)
        .ok_or("V8 could not create the snapshot blob")?;
    Ok(blob.to_vec())
}

/// `globalThis.__isolane_internal`, once `00_internal.js` has run.
fn internal_object<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) -> Result<v8::Local<'s, v8::Object>, String> {
    let key = v8::String::new(scope, "__isolane_internal").ok_or("allocating a string")?;
    global
        .get(scope, key.into())
        .and_then(|v| v8::Local::<v8::Object>::try_from(v).ok())
        .ok_or_else(|| "the runtime defines no __isolane_internal".to_owned())
}

/// Runs `internal.warmUp()` and its microtasks (see HOST.md).
fn warm_up<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) -> Result<(), String> {
    v8::tc_scope!(let tc, scope);
    let internal = internal_object(tc, global)?;
    let key = v8::String::new(tc, "warmUp").ok_or("allocating a string")?;
    let function = internal
        .get(tc, key.into())
        .and_then(|v| v8::Local::<v8::Function>::try_from(v).ok())
        .ok_or("the runtime defines no internal.warmUp")?;
    let done = function.call(tc, internal.into(), &[]);
    if done.is_some() {
        tc.perform_microtask_checkpoint();
    }
    if done.is_none() || tc.has_caught() {
        let message = tc
            .exception()
            .map(|e| e.to_rust_string_lossy(tc))
            .unwrap_or_else(|| "unknown error".to_owned());
        return Err(format!("internal.warmUp: {message}"));
    }
    Ok(())
}

/// Evaluates one runtime file (wrapped by `build.rs` as HOST.md says),
/// compiled from the external string itself: its function, not yet run.
fn evaluate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
    source: &'static v8::OneByteConst,
) -> Result<v8::Local<'s, v8::Function>, String> {
    v8::tc_scope!(let tc, scope);
    let code = v8::String::new_from_onebyte_const(tc, source).ok_or("allocating the source")?;
    let resource = v8::String::new(tc, &format!("isolane:{name}")).ok_or("allocating a string")?;
    let origin = script_origin(tc, resource.into(), false);
    let result = v8::Script::compile(tc, code, Some(&origin))
        .and_then(|script| script.run(tc))
        .and_then(|value| v8::Local::<v8::Function>::try_from(value).ok());
    result.ok_or_else(|| {
        let message = tc
            .exception()
            .map(|e| e.to_rust_string_lossy(tc))
            .unwrap_or_else(|| "unknown error".to_owned());
        format!("{name}: {message}")
    })
}

/// Runs a file's function as `(host, internal)`: `globalThis.__host` and
/// `globalThis.__isolane_internal` (undefined until `00_internal.js` made it).
fn run<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    name: &str,
    file: v8::Local<'s, v8::Function>,
) -> Result<(), String> {
    v8::tc_scope!(let tc, scope);
    let mut args = Vec::with_capacity(2);
    for key in ["__host", "__isolane_internal"] {
        let key = v8::String::new(tc, key).ok_or("allocating a string")?;
        args.push(global.get(tc, key.into()).ok_or("reading a global")?);
    }
    let undefined = v8::undefined(tc).into();
    if file.call(tc, undefined, &args).is_none() {
        let message = tc
            .exception()
            .map(|e| e.to_rust_string_lossy(tc))
            .unwrap_or_else(|| "unknown error".to_owned());
        return Err(format!("{name}: {message}"));
    }
    Ok(())
}

/// A script origin naming `resource`; `module` for ES modules.
pub(crate) fn script_origin<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    resource: v8::Local<'s, v8::Value>,
    module: bool,
) -> v8::ScriptOrigin<'s> {
    v8::ScriptOrigin::new(
        scope, resource, 0, 0, false, 0, None, false, false, module, None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_sources_are_ascii() {
        // Else V8 keeps the file as a two-byte string in every isolate
        // (`build.rs`'s `ascii`).
        for (name, source) in RUNTIME_JS {
            assert!(
                source.as_str().is_ascii(),
                "{name} has a non-ASCII character"
            );
        }
    }

    #[test]
    fn the_runtime_sources_keep_their_line_numbers_without_comments() {
        // `build.rs` drops comments but keeps their line breaks, so a stack
        // trace's `isolane:NN_file.js:LINE` is the line in js/.
        let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js");
        let files = RUNTIME_JS.iter().map(|(name, s)| (*name, s.as_str()));
        let names = isolane_jsbuild::check_embedded(&js, files);
        assert_eq!(names.len(), RUNTIME_JS.len());
    }

    #[test]
    fn a_corrupt_cache_file_is_rebuilt_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let key = cache::current_key();
        std::fs::write(dir.path().join(cache::file_name(&key)), b"ISOLSNAP garbage").unwrap();
        let blob = load_or_build(dir.path(), &key, || Ok(b"fresh".to_vec())).unwrap();
        assert_eq!(blob, b"fresh");
        assert_eq!(
            cache::load(dir.path(), &key).unwrap().as_deref(),
            Some(&b"fresh"[..])
        );
        // The second start reads it, without building.
        let blob = load_or_build(dir.path(), &key, || Err("built again".into())).unwrap();
        assert_eq!(blob, b"fresh");
    }

    #[test]
    fn an_unwritable_cache_costs_a_build_not_the_start() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the folder should be.
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, b"x").unwrap();
        let key = cache::current_key();
        let blob = load_or_build(&not_a_dir, &key, || Ok(b"built".to_vec())).unwrap();
        assert_eq!(blob, b"built");
    }

    #[test]
    fn the_real_blob_round_trips_through_the_cache_and_makes_a_working_context() {
        crate::platform::init();
        let dir = tempfile::tempdir().unwrap();
        let key = cache::current_key();
        let built = load_or_build(dir.path(), &key, build).unwrap();
        let cached = load_or_build(dir.path(), &key, || Err("built again".into())).unwrap();
        assert_eq!(built, cached);
        let blob: &'static [u8] = Box::leak(cached.into_boxed_slice());
        assert_eq!(
            run_in_new_context(blob, "typeof __isolane_internal.handleRequest"),
            "function"
        );
    }

    /// Runs `code` in a new context of a new isolate made from `blob`, as
    /// every isolate is made: no runtime file runs in it.
    fn run_in_new_context(blob: &'static [u8], code: &str) -> String {
        let params = v8::CreateParams::default()
            .snapshot_blob(v8::StartupData::from(blob))
            .external_references(external_references().into());
        let mut isolate = v8::Isolate::new(params);
        v8::scope!(let scope, &mut isolate);
        let context = v8::Context::new(scope, Default::default());
        let scope = &mut v8::ContextScope::new(scope, context);
        let source = v8::String::new(scope, code).unwrap();
        let value = v8::Script::compile(scope, source, None)
            .and_then(|script| script.run(scope))
            .unwrap();
        value.to_rust_string_lossy(scope)
    }

    #[test]
    fn the_events_and_streams_files_are_in_the_blob_and_read_in_place() {
        // isolane-events' and isolane-streams' files run once, at snapshot
        // time (the `base` and `streams` units): a context made from the blob has their classes and the
        // hooks the core calls without any file run in it, and their
        // sources are external references, so the blob keeps them outside
        // the heap and every isolate reads them from this binary.
        crate::platform::init();
        let blob = blob(None).unwrap();
        let code = "[EventTarget, Event, CustomEvent, ErrorEvent, AbortController, \
                    AbortSignal.any, AbortSignal.timeout, __isolane_internal.dispatchTrusted, \
                    __isolane_internal.abortSignalAdd, ReadableStream, FixedLengthStream, \
                    __isolane_internal.streamFromHostBody].map((f) => typeof f).join()";
        assert_eq!(run_in_new_context(blob, code), ["function"; 12].join(","));
        let references: Vec<*mut std::ffi::c_void> = external_references()
            .iter()
            // SAFETY: every entry of this table was made as a pointer (the
            // sources) or a function; either reads as the address it holds.
            .map(|reference| unsafe { reference.pointer })
            .collect();
        for (name, source) in isolane_events::JS
            .iter()
            .chain(isolane_streams::JS)
            .chain(isolane_fetch_api::JS)
        {
            let address = std::ptr::from_ref(source).cast_mut().cast();
            assert!(
                references.contains(&address),
                "{name} is not an external source"
            );
        }
    }

    #[test]
    fn the_units_claim_every_runtime_file_once_in_file_name_order() {
        let claimed: Vec<&str> = host::js_files().map(|(_, file)| file).collect();
        let mut files = runtime_files();
        files.sort_unstable();
        assert_eq!(
            claimed, files,
            "the units' JavaScript, in unit order, must be exactly js/'s NN_* files \
             (with isolane-events' js/) in name order"
        );
    }
}
