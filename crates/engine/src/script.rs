//! Worker scripts: ES module or service-worker detection, evaluation,
//! exceptions as text.

use std::sync::Arc;

use crate::bundle::{Module, ModuleKind, Modules, NodeCompat, WorkerBundle};
use crate::code_cache::{CodeCache, Compiled, Lookup, owed};
use crate::host;
use crate::host::error::HostError;
use crate::snapshot::script_origin;

/// Whether `source` is an ES module: it has a top-level `import` or `export`
/// statement (HOST.md). Dynamic `import(` and `import.meta` do not count.
pub(crate) fn is_module(source: &str) -> bool {
    source.lines().any(|line| {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("export") {
            return rest.starts_with([' ', '{', '*', '\t']) || rest.is_empty();
        }
        if let Some(rest) = line.strip_prefix("import") {
            return rest.starts_with([' ', '{', '*', '\t', '"', '\'']);
        }
        false
    })
}

/// Evaluates the worker and hands its handler to the runtime's `internal`
/// object; returns `env`. Runs inside a turn; `None` means a JS exception is
/// pending. As in workerd with `allow_eval_during_startup` (on from
/// 2025-06-01), the top-level code may generate code from strings (`eval`,
/// `new Function`: template engines and validators compile at load);
/// requests may not (the context refuses it again here).
pub(crate) fn evaluate(
    scope: &mut v8::PinScope<'_, '_>,
    internal: &v8::Global<v8::Object>,
    bundle: &WorkerBundle,
    code_cache: Option<&Arc<CodeCache>>,
) -> Option<v8::Global<v8::Object>> {
    if code_cache.is_some() {
        crate::code_cache::owed::prepare(scope);
    }
    host::hide_gated_globals(scope, &bundle.compat)?;
    if !bundle.compat.eval_at_startup {
        return evaluate_top_level(scope, internal, bundle, code_cache);
    }
    let context = scope.get_current_context();
    context.set_allow_generation_from_strings(true);
    let env = evaluate_top_level(scope, internal, bundle, code_cache);
    context.set_allow_generation_from_strings(false);
    env
}

fn evaluate_top_level(
    scope: &mut v8::PinScope<'_, '_>,
    internal: &v8::Global<v8::Object>,
    bundle: &WorkerBundle,
    code_cache: Option<&Arc<CodeCache>>,
) -> Option<v8::Global<v8::Object>> {
    if let Some(modules) = &bundle.modules {
        let module = crate::modules::load(scope, internal, modules, bundle.compat, code_cache)?;
        let internal = v8::Local::new(scope, internal);
        return run_module(scope, internal, bundle, module);
    }
    let internal = v8::Local::new(scope, internal);
    let name = host::js_string(scope, &format!("worker:{}", bundle.id))?;
    let source = v8::String::new(scope, &bundle.script)?;
    // A script the line heuristic took for classic is compiled as one (from
    // its code cache when it has one): V8 decides whether it is a module.
    let mut classic = None;
    let module = is_module(&bundle.script)
        || match compile_classic(scope, name, source, &bundle.script, code_cache) {
            Ok(script) => {
                classic = Some(script);
                false
            }
            Err(module_only) => module_only,
        };
    if module {
        return run_one_module(scope, internal, bundle, name, source, code_cache);
    }
    run_service_worker(scope, internal, bundle, name, source, classic)
}

/// A Worker of one ES module given as its script.
fn run_one_module<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
    name: v8::Local<'s, v8::Value>,
    source: v8::Local<'s, v8::String>,
    code_cache: Option<&Arc<CodeCache>>,
) -> Option<v8::Global<v8::Object>> {
    // It may import Node's built-ins (as its settings allow) or Cloudflare's
    // (whatever they are), or be big enough for the code cache: a graph of
    // one module.
    let cacheable =
        code_cache.is_some() && bundle.script.len() >= crate::code_cache::MIN_SOURCE_BYTES;
    if bundle.compat.node != NodeCompat::Off || bundle.script.contains("cloudflare:") || cacheable {
        let one = Module::new("worker.js", ModuleKind::ESModule, bundle.script.as_bytes());
        let Ok(modules) = Modules::new("worker.js", vec![one]) else {
            HostError::type_error("internal: a worker of one module").throw(scope);
            return None;
        };
        let modules = Arc::new(modules);
        let global = v8::Global::new(scope, internal);
        let module = crate::modules::load(scope, &global, &modules, bundle.compat, code_cache)?;
        return run_module(scope, internal, bundle, module);
    }
    let origin = script_origin(scope, name, true);
    let mut source = v8::script_compiler::Source::new(source, Some(&origin));
    let module = v8::script_compiler::compile_module(scope, &mut source)?;
    if !module.instantiate_module(scope, no_imports)? {
        return None;
    }
    run_module(scope, internal, bundle, module)
}

/// A service worker: `classic` is its script when it compiled.
fn run_service_worker<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
    name: v8::Local<'s, v8::Value>,
    source: v8::Local<'s, v8::String>,
    classic: Option<v8::Global<v8::Script>>,
) -> Option<v8::Global<v8::Object>> {
    // A service worker has no `env` argument: its bindings are globals,
    // there before its first line runs (as on Cloudflare).
    let global = scope.get_current_context().global(scope);
    define_bindings(scope, internal, global, bundle)?;
    let script = match classic {
        Some(script) => v8::Local::new(scope, script),
        // It did not compile: again, for the exception.
        None => {
            let origin = script_origin(scope, name, false);
            v8::Script::compile(scope, source, Some(&origin))?
        }
    };
    script.run(scope)?;
    call(scope, internal, "checkServiceWorker", &[])?;
    make_env(scope, internal, bundle)
}

/// Compiles a script the line heuristic took for classic, from its code
/// cache file when V8 accepts it, owing a cache otherwise (as modules do,
/// `modules.rs`). `Err(true)`: a classic compile that trips on
/// import/export, so a module (`let n = 0; export default …`);
/// `Err(false)`: another compile error.
fn compile_classic<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: v8::Local<'s, v8::Value>,
    source: v8::Local<'s, v8::String>,
    text: &str,
    code_cache: Option<&Arc<CodeCache>>,
) -> Result<v8::Global<v8::Script>, bool> {
    use v8::script_compiler::{CachedData, CompileOptions, NoCacheReason, Source};
    let origin = script_origin(scope, name, false);
    let lookup = code_cache
        .and_then(|cache| Some((cache, cache.lookup(Compiled::Script, text.as_bytes())?)));
    v8::tc_scope!(let tc, scope);
    let compiled = match &lookup {
        Some((
            cache,
            Lookup {
                key,
                bytes: Some(data),
            },
        )) => {
            let mut source =
                Source::new_with_cached_data(source, Some(&origin), CachedData::new(data));
            let script = v8::script_compiler::compile(
                tc,
                &mut source,
                CompileOptions::ConsumeCodeCache,
                NoCacheReason::NoReason,
            );
            let rejected = source.get_cached_data().is_none_or(|data| data.rejected());
            if script.is_some() {
                cache.consumed(key, rejected);
            }
            script.map(|script| (script, rejected))
        }
        _ => v8::Script::compile(tc, source, Some(&origin)).map(|script| (script, true)),
    };
    match compiled {
        Some((script, uncached)) => {
            if let (Some((_, lookup)), true) = (&lookup, uncached) {
                let unbound = v8::Global::new(tc, script.get_unbound_script(tc));
                owed::owe(tc, lookup.key, owed::Unbound::Script(unbound));
            }
            Ok(v8::Global::new(tc, script))
        }
        None => Err(tc
            .exception()
            .map(|e| e.to_rust_string_lossy(tc))
            .is_some_and(|m| m.contains("'export'") || m.contains("import statement"))),
    }
}

/// Evaluates an instantiated module worker and hands its namespace to the
/// runtime; returns `env`.
fn run_module<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
    module: v8::Local<'s, v8::Module>,
) -> Option<v8::Global<v8::Object>> {
    module.evaluate(scope)?;
    // Top-level await settles here (or never: then the handler check fails).
    scope.perform_microtask_checkpoint();
    if module.get_status() == v8::ModuleStatus::Errored {
        let exception = module.get_exception();
        scope.throw_exception(exception);
        return None;
    }
    let namespace = module.get_module_namespace();
    call(scope, internal, "setModule", &[namespace])?;
    make_env(scope, internal, bundle)
}

fn make_env<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
) -> Option<v8::Global<v8::Object>> {
    let env = v8::Object::new(scope);
    define_bindings(scope, internal, env, bundle)?;
    Some(v8::Global::new(scope, env))
}

/// Sets each of the worker's bindings as a property of `target`: the
/// plain ones as strings, the JSON ones parsed, each KV namespace binding as the runtime's
/// `KVNamespace` for it (`internal.kvNamespace(name)`, `isolane-bindings`' `27_kv.js`), each
/// Durable Object binding as its `DurableObjectNamespace`
/// (`isolane-bindings`' `28_durable_object.js`).
fn define_bindings<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    target: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
) -> Option<()> {
    for (key, value) in &bundle.env {
        let key = host::js_string(scope, key)?;
        let value = host::js_string(scope, value)?;
        target.set(scope, key, value)?;
    }
    // JSON bindings, parsed: the operator and `isolane dev` wrote them from
    // JSON values, so a parse failure is not expected (it leaves `env`
    // without the binding and is logged by the caller's failure).
    for (key, json) in &bundle.json_env {
        let key = host::js_string(scope, key)?;
        let text = v8::String::new(scope, json)?;
        let value = v8::json::parse(scope, text)?;
        target.set(scope, key, value)?;
    }
    for binding in bundle.kv.keys() {
        let name = host::js_string(scope, binding)?;
        let namespace = call(scope, internal, "kvNamespace", &[name])?;
        target.set(scope, name, namespace)?;
    }
    // Each Durable Object binding: its namespace, whose objects get `env`
    // (`target`) when they are made, and `storage.sql` when the class is
    // SQLite-backed; throws when the class is not exported.
    for (binding, class) in &bundle.durable_objects {
        let sqlite = bundle.sqlite_classes.contains(class);
        let name = host::js_string(scope, binding)?;
        let class = host::js_string(scope, class)?;
        let sqlite = v8::Boolean::new(scope, sqlite).into();
        let namespace = call(
            scope,
            internal,
            "durableObjectNamespace",
            &[name, class, target.into(), sqlite],
        )?;
        target.set(scope, name, namespace)?;
    }
    // Each binding to a class another Worker hosts: a namespace whose stubs
    // call into that Worker (`host/object_hosted.rs`).
    for (binding, hosted) in &bundle.hosted_objects {
        let name = host::js_string(scope, binding)?;
        let class = host::js_string(scope, &hosted.class)?;
        let worker = host::js_string(scope, &hosted.worker)?;
        let namespace = call(
            scope,
            internal,
            "hostedDurableObjectNamespace",
            &[name, class, worker],
        )?;
        target.set(scope, name, namespace)?;
    }
    define_services(scope, internal, target, bundle)
}

/// Each service binding: a `Fetcher` whose calls run the other Worker on
/// this thread (`host/service.rs`, `isolane-bindings`' `30_service.js`),
/// each dispatch namespace binding, each queue producer and D1 binding
/// and the assets' binding.
fn define_services<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: v8::Local<'s, v8::Object>,
    target: v8::Local<'s, v8::Object>,
    bundle: &WorkerBundle,
) -> Option<()> {
    // Loaded code's `globalOutbound` service: not in `env`, but where the
    // global `fetch` sends every request (`isolane-web`'s `js/13_fetch.js`).
    for binding in bundle.services.keys() {
        let name = host::js_string(scope, binding)?;
        let fetcher = call(scope, internal, "serviceBinding", &[name])?;
        match binding.as_str() {
            crate::bundle::GLOBAL_OUTBOUND => {
                let key = host::js_string(scope, "globalOutbound")?;
                internal.set(scope, key, fetcher)?
            }
            _ => target.set(scope, name, fetcher)?,
        };
    }
    // Each dispatch namespace binding: its `get(worker)` makes a `Fetcher`
    // of the same kind, whose calls name the Worker (`host/service.rs`).
    for binding in bundle.dispatchers.keys() {
        let name = host::js_string(scope, binding)?;
        let dispatcher = call(scope, internal, "dispatchBinding", &[name])?;
        target.set(scope, name, dispatcher)?;
    }
    // Each queue producer binding: a `Queue` whose sends go to the store
    // (`isolane-bindings`' queue unit, `js/35_queue.js`); each D1 binding
    // a `D1Database` (its d1 unit, `js/36_d1.js`); each R2 binding an
    // `R2Bucket` (`js/38_r2.js`); each Worker Loader binding a
    // `WorkerLoader` (its loader unit, `js/39_loader.js`).
    let queues = bundle.queues.keys().map(|b| (b, "queueBinding"));
    let d1 = bundle.d1.keys().map(|b| (b, "d1Binding"));
    let r2 = bundle.r2.keys().map(|b| (b, "r2Binding"));
    let loaders = bundle.loaders.iter().map(|b| (b, "loaderBinding"));
    let flows = bundle.workflows.keys().map(|b| (b, "workflowBinding"));
    for (binding, make) in queues.chain(d1).chain(r2).chain(loaders).chain(flows) {
        let name = host::js_string(scope, binding)?;
        let made = call(scope, internal, make, &[name])?;
        target.set(scope, name, made)?;
    }
    for binding in &bundle.images {
        let name = host::js_string(scope, binding)?;
        let images = call(scope, internal, "imagesBinding", &[])?;
        target.set(scope, name, images)?;
    }
    // The static assets' binding (`assets.binding`): a `Fetcher` answered
    // from the Worker's own assets (`isolane-bindings`' assets unit).
    if let Some(binding) = bundle.assets.as_ref().and_then(|site| site.0.binding()) {
        let name = host::js_string(scope, binding)?;
        let fetcher = call(scope, internal, "assetsBinding", &[])?;
        target.set(scope, name, fetcher)?;
    }
    Some(())
}

fn call<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    object: v8::Local<'s, v8::Object>,
    name: &str,
    args: &[v8::Local<'s, v8::Value>],
) -> Option<v8::Local<'s, v8::Value>> {
    let key = host::js_string(scope, name)?;
    let function = object.get(scope, key)?;
    let Ok(function) = v8::Local::<v8::Function>::try_from(function) else {
        HostError::type_error(format!("the runtime has no internal.{name}")).throw(scope);
        return None;
    };
    function.call(scope, object.into(), args)
}

/// A single-script worker imports nothing: any static import fails to
/// resolve (a worker of many modules has `modules`).
fn no_imports<'s>(
    context: v8::Local<'s, v8::Context>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
    _referrer: v8::Local<'s, v8::Module>,
) -> Option<v8::Local<'s, v8::Module>> {
    // SAFETY: V8 calls this with a live context, inside a handle scope.
    v8::callback_scope!(unsafe scope, context);
    let specifier = specifier.to_rust_string_lossy(scope);
    let message = if specifier.starts_with("node:") {
        format!(
            "Cannot load {specifier:?}: Node.js modules need the nodejs_compat compatibility \
             flag (or a compatibility date from 2026-08-04)"
        )
    } else {
        format!(
            "Cannot resolve import {specifier:?}: this worker is a single script (give it as modules to import)"
        )
    };
    HostError::type_error(message).throw(scope);
    None
}

/// A caught exception as (message with location, stack).
pub(crate) fn describe(
    scope: &mut v8::PinScope<'_, '_>,
    exception: Option<v8::Local<'_, v8::Value>>,
    message: Option<v8::Local<'_, v8::Message>>,
    stack: Option<v8::Local<'_, v8::Value>>,
) -> (String, String) {
    let text = exception.map_or_else(
        || "unknown error".to_owned(),
        |e| e.to_rust_string_lossy(scope),
    );
    // A message with no position (an error thrown while modules resolve)
    // has no location: V8 gives its column as -1 then.
    let location = message.and_then(|m| {
        let resource = m
            .get_script_resource_name(scope)
            .map(|r| r.to_rust_string_lossy(scope))
            .unwrap_or_default();
        let line = m.get_line_number(scope).unwrap_or(0);
        let column = m.get_start_column().checked_add(1)?;
        Some(format!("{resource}:{line}:{column}"))
    });
    let message = match location {
        Some(location) => format!("{text} ({location})"),
        None => text,
    };
    let stack = stack
        .map(|s| s.to_rust_string_lossy(scope))
        .unwrap_or_default();
    (message, stack)
}

#[cfg(test)]
mod tests {
    use super::is_module;

    #[test]
    fn modules_are_told_from_service_workers() {
        assert!(is_module("export default { fetch() {} }"));
        assert!(is_module("const x = 1;\nexport { x as default };"));
        assert!(is_module("import './x.js';\nexport default {}"));
        assert!(!is_module(
            "addEventListener('fetch', e => e.respondWith(new Response('x')))"
        ));
        assert!(!is_module("const m = await import('x');"));
        assert!(!is_module("const exported = 1; // export later"));
    }
}
