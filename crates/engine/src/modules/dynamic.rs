//! `import()` at run time, as workerd allows it: a bundle is one graph, so
//! what a Worker imports dynamically is what its bundler left external — a
//! built-in (`cloudflare:sockets`, `node:…`, loaded as the compatibility
//! settings allow, as a static import would be) — or a module of the
//! bundle. The module (and what it imports) is compiled, instantiated and
//! evaluated in the current turn; the promise resolves to its namespace,
//! or rejects with the error a static import would have thrown.

use super::{Registry, compile_graph, resolve};
use crate::host;

/// V8's host callback for `import(specifier)` from the module or script
/// named `resource`.
pub(crate) fn import_dynamically<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _options: v8::Local<'s, v8::Data>,
    resource: v8::Local<'s, v8::Value>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let resolver = v8::PromiseResolver::new(scope)?;
    let promise = resolver.get_promise(scope);
    let referrer = resource.to_rust_string_lossy(scope);
    let specifier = specifier.to_rust_string_lossy(scope);
    v8::tc_scope!(let tc, scope);
    match load(tc, &referrer, &specifier) {
        Some(namespace) => {
            resolver.resolve(tc, namespace);
        }
        None if tc.has_terminated() => return None,
        None => {
            let error = match tc.exception() {
                Some(error) => error,
                None => v8::undefined(tc).into(),
            };
            tc.reset();
            resolver.reject(tc, error);
        }
    }
    Some(promise)
}

/// The namespace of the module `specifier` names, evaluated, or a promise
/// of it while its top-level `await`s run. `None`: an exception is pending.
fn load<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    referrer: &str,
    specifier: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    let Some(registry) = Registry::get(scope) else {
        // A Worker of one script that imports nothing statically (and
        // names no built-in) has no graph to import from.
        host::throw_type_error(
            scope,
            &format!("Cannot resolve {specifier:?}: no module of that name in the bundle"),
        );
        return None;
    };
    // A script's resource is `worker:<id>`; its imports resolve from the
    // bundle's main module.
    let referrer = match registry.modules.get(referrer) {
        Some(_) => referrer.to_owned(),
        None => registry.modules.main_name().to_owned(),
    };
    let name = registry.target(scope, &referrer, specifier)?;
    compile_graph(scope, &registry, &name)?;
    let module = registry.module(scope, &name)?;
    if module.get_status() == v8::ModuleStatus::Uninstantiated
        && !module.instantiate_module(scope, resolve)?
    {
        return None;
    }
    let evaluated = module.evaluate(scope)?;
    if module.get_status() == v8::ModuleStatus::Errored {
        scope.throw_exception(module.get_exception());
        return None;
    }
    let namespace = module.get_module_namespace();
    match v8::Local::<v8::Promise>::try_from(evaluated) {
        Ok(pending) if pending.state() == v8::PromiseState::Pending => {
            let then = v8::Function::builder(namespace_after)
                .data(namespace)
                .build(scope)?;
            pending.then(scope, then).map(Into::into)
        }
        _ => Some(namespace),
    }
}

/// Once a module's top-level `await`s are done: its namespace (the data).
fn namespace_after(
    _scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    rv.set(args.data());
}
