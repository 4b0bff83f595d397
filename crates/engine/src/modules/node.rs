//! Node's built-in modules (`node:buffer`, ...) in a bundle's graph, as the
//! Worker's compatibility settings allow them ([`isolane_worker::NodeCompat`]).
//!
//! A built-in is JavaScript a host unit declares (`Unit::node_module`),
//! kept out of the startup snapshot: it is compiled the first time the
//! isolate imports or requires it, so a Worker that uses none pays nothing.
//! It runs once per isolate as `function (host, internal, require, module,
//! exports)`; its `module.exports` is what `require` returns, and an ES
//! import sees it as a synthetic module whose exports are its properties
//! (and `default`, the object itself), as Node and workerd give them.

use isolane_worker::Compat;

use super::Registry;
use super::builtin::{PREFIX, builtin, is_builtin, refusal_message, source};
use crate::host;
use crate::snapshot::script_origin;

/// Makes the synthetic module of built-in `name` (`node:buffer`), running
/// the built-in to learn its exports.
pub(super) fn compile<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<v8::Local<'s, v8::Module>> {
    let exports = exports(scope, registry, name)?;
    let mut names = vec![v8::String::new(scope, "default")?];
    if let Ok(object) = v8::Local::<v8::Object>::try_from(exports) {
        let keys = object.get_own_property_names(scope, Default::default())?;
        for i in 0..keys.length() {
            let key = keys.get_index(scope, i)?;
            if let Ok(key) = v8::Local::<v8::String>::try_from(key)
                && key.to_rust_string_lossy(scope) != "default"
            {
                names.push(key);
            }
        }
    }
    let resource = v8::String::new(scope, name)?;
    let module =
        v8::Module::create_synthetic_module(scope, resource, &names, super::evaluate_synthetic);
    registry.remember(scope, name, module);
    Some(module)
}

/// Sets every export of built-in `name`'s synthetic module.
pub(super) fn set_exports(
    scope: &mut v8::PinScope<'_, '_>,
    registry: &Registry,
    name: &str,
    module: v8::Local<'_, v8::Module>,
) -> Option<()> {
    let exports = exports(scope, registry, name)?;
    let default = v8::String::new(scope, "default")?;
    module.set_synthetic_module_export(scope, default, exports)?;
    let Ok(object) = v8::Local::<v8::Object>::try_from(exports) else {
        return Some(());
    };
    let keys = object.get_own_property_names(scope, Default::default())?;
    for i in 0..keys.length() {
        let key = keys.get_index(scope, i)?;
        let Ok(key) = v8::Local::<v8::String>::try_from(key) else {
            continue;
        };
        if key.to_rust_string_lossy(scope) == "default" {
            continue;
        }
        let value = object.get(scope, key.into())?;
        module.set_synthetic_module_export(scope, key, value)?;
    }
    Some(())
}

/// `module.exports` of built-in `name` (`node:buffer`), running it first
/// if it has not run in this isolate.
pub(super) fn exports<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    if let Some(known) = super::commonjs::ran(scope, registry, name) {
        return known;
    }
    let Some(source) = source(name) else {
        host::throw_type_error(scope, &format!("No such module {name:?}"));
        return None;
    };
    let wrapped = format!(
        "(function (host, internal, require, module, exports) {{ 'use strict'; {source}\n}})"
    );
    let code = v8::String::new(scope, &wrapped)?;
    let resource = host::js_string(scope, name)?;
    let origin = script_origin(scope, resource, false);
    let function = v8::Script::compile(scope, code, Some(&origin))?.run(scope)?;
    let function = v8::Local::<v8::Function>::try_from(function).ok()?;
    let (module_value, exports) = super::commonjs::new_module(scope, registry, name)?;
    let internal = v8::Local::new(scope, &registry.internal);
    let host_key = v8::String::new(scope, "host")?;
    let host_object = internal.get(scope, host_key.into())?;
    let require = v8::Function::builder(require_builtin).build(scope)?;
    let for_worker = v8::Function::builder(require_for_worker).build(scope)?;
    let key = v8::String::new(scope, "forWorker")?;
    require.set(scope, key.into(), for_worker.into())?;
    let undefined = v8::undefined(scope).into();
    function.call(
        scope,
        undefined,
        &[
            host_object,
            internal.into(),
            require.into(),
            module_value,
            exports.into(),
        ],
    )?;
    super::commonjs::module_exports(scope, module_value)
}

/// A built-in's registry name: `specifier` as it is when it names one
/// (`node:buffer`, `cloudflare:sockets`), else `node:<specifier>`.
fn prefixed(specifier: String) -> String {
    match is_builtin(&specifier) {
        true => specifier,
        false => format!("{PREFIX}{specifier}"),
    }
}

/// `require('node:<name>')` inside a built-in: another built-in, whatever
/// the Worker's settings (they decide what the Worker imports, not what
/// a built-in is made of).
fn require_builtin(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(registry) = Registry::get(scope) else {
        return;
    };
    let name = prefixed(args.get(0).to_rust_string_lossy(scope));
    if let Some(value) = exports(scope, &registry, &name) {
        rv.set(value);
    }
}

/// `require.forWorker(specifier)` inside a built-in: a built-in as the
/// *Worker* may have it (what `process.getBuiltinModule` and
/// `module.createRequire` hand out), so the Worker's compatibility settings
/// and module gates hold there as for its own `require`. Returns `undefined`
/// for a name that is no built-in the Worker may load, and throws the
/// refusal's message when asked to (a second argument `true`).
fn require_for_worker(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(registry) = Registry::get(scope) else {
        return;
    };
    let prefixed = prefixed(args.get(0).to_rust_string_lossy(scope));
    match builtin(&prefixed, &registry.compat) {
        Some(Ok(name)) => {
            if let Some(value) = exports(scope, &registry, &name) {
                rv.set(value);
            }
        }
        Some(Err(refusal)) if args.get(1).is_true() => {
            let message = refusal_message(&refusal, &prefixed, "node:module");
            host::throw_type_error(scope, &message);
        }
        Some(Err(_)) | None => rv.set_undefined(),
    }
}

/// The globals of `nodejs_compat_v2`, as workerd has them: `global` (the
/// global object itself), and `Buffer` (`node:buffer`'s), `process`
/// (`node:process`), `setImmediate` and `clearImmediate` (`node:timers`'),
/// loaded when a Worker first reads them (lazy data properties, so a
/// Worker that never does pays nothing). Under `enable_nodejs_global_timers`
/// the Web timers give way to `node:timers`' the same way.
pub(crate) fn define_globals(scope: &mut v8::PinScope<'_, '_>, compat: Compat) -> Option<()> {
    let global = scope.get_current_context().global(scope);
    if compat.node.bare_names() {
        let key = v8::String::new(scope, "global")?;
        global.set(scope, key.into(), global.into())?;
        for name in ["Buffer", "process", "setImmediate", "clearImmediate"] {
            let key = v8::String::new(scope, name)?;
            global.set_lazy_data_property(scope, key.into(), lazy_global)?;
        }
    }
    if compat.global_timers {
        for name in ["setTimeout", "setInterval", "clearTimeout", "clearInterval"] {
            let key = v8::String::new(scope, name)?;
            global.delete(scope, key.into())?;
            global.set_lazy_data_property(scope, key.into(), lazy_global)?;
        }
    }
    Some(())
}

fn lazy_global(
    scope: &mut v8::PinScope<'_, '_>,
    key: v8::Local<'_, v8::Name>,
    _args: v8::PropertyCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(registry) = Registry::get(scope) else {
        return;
    };
    let name = key.to_rust_string_lossy(scope);
    let module = match name.as_str() {
        "Buffer" => "node:buffer",
        "process" => "node:process",
        _ => "node:timers",
    };
    let Some(exports) = exports(scope, &registry, module) else {
        return;
    };
    if module == "node:process" {
        rv.set(exports);
        return;
    }
    let Ok(exports) = v8::Local::<v8::Object>::try_from(exports) else {
        return;
    };
    if let Some(value) = exports.get(scope, key.into()) {
        rv.set(value);
    }
}
