//! The startup snapshot: a V8 heap with the runtime's JavaScript already
//! evaluated, so a new isolate + context costs a deserialisation, not a
//! compile.
//!
//! Built once per process, at the first `Engine::start`, on the calling (main)
//! thread, and shared by every engine thread as a leaked `&'static [u8]`.
//! Building it in `build.rs` would make `build.rs` itself link V8 (a second
//! 167 MB link on every change to the engine) to save a few milliseconds per
//! process start (`examples/measure.rs` prints the engine's start time).
//!
//! Compiled function code is cleared from the blob
//! (`FunctionCodeHandling::Clear`): keeping it made every idle isolate about
//! 0.5 MiB larger (RSS) for no measurable gain in first-request latency.

use std::sync::OnceLock;

use crate::host;
use crate::outcome::EngineError;

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

static BLOB: OnceLock<Result<&'static [u8], String>> = OnceLock::new();

/// The snapshot blob, built on first use. Call after `platform::init`.
pub(crate) fn blob() -> Result<&'static [u8], EngineError> {
    BLOB.get_or_init(|| {
        build().map(|bytes| -> &'static [u8] {
            // Leaked on purpose: every isolate of the process deserialises
            // from it, for as long as the process lives.
            Box::leak(bytes.into_boxed_slice())
        })
    })
    .clone()
    .map_err(|message| EngineError::Snapshot { message })
}

/// Names of the runtime files, for diagnostics.
pub fn runtime_files() -> Vec<&'static str> {
    RUNTIME_JS.iter().map(|(name, _)| *name).collect()
}

fn build() -> Result<Vec<u8>, String> {
    // The snapshot creator gets the same external references as every isolate
    // made from the blob: the host functions are serialised as indices into
    // this table.
    let mut creator = v8::Isolate::snapshot_creator(Some(host::external_references().into()), None);
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
        for (name, source) in RUNTIME_JS {
            evaluate(scope, name, source)?;
        }
        scope.set_default_context(context);
    }
    let blob = creator
        .create_blob(v8::FunctionCodeHandling::Clear)
        .ok_or("V8 could not create the snapshot blob")?;
    Ok(blob.to_vec())
}

/// Evaluates one runtime file, wrapped as HOST.md says.
fn evaluate(scope: &mut v8::PinScope<'_, '_>, name: &str, source: &str) -> Result<(), String> {
    let wrapped = format!(
        "(function (host, internal) {{ {source}\n}})(globalThis.__host, globalThis.__isolane_internal);"
    );
    v8::tc_scope!(let tc, scope);
    let code = v8::String::new(tc, &wrapped).ok_or("allocating the source")?;
    let resource = v8::String::new(tc, &format!("isolane:{name}")).ok_or("allocating a string")?;
    let origin = script_origin(tc, resource.into(), false);
    let result = v8::Script::compile(tc, code, Some(&origin)).and_then(|script| script.run(tc));
    if result.is_none() {
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
