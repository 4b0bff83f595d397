//! CommonJS modules of a bundle: each runs once, on first import or
//! `require`, as `function (exports, require, module, __filename,
//! __dirname)`; `module.exports` is what importers and `require` get. A
//! `require` cycle gets the partial `module.exports`, as in Node.js.
//! `require` of an ES module is refused (it would need the module
//! evaluated synchronously); import it instead.

use isolane_worker::ModuleKind;

use super::{Registry, default_export, text};
use crate::host;
use crate::snapshot::script_origin;

/// `module.exports` of CommonJS module `name`, running it first if it has
/// not run yet.
pub(super) fn exports<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    if let Some(known) = ran(scope, registry, name) {
        return known;
    }
    let source = registry.modules.get(name)?.content.clone();
    // One line with the wrapper's head, so the module's lines keep their numbers.
    let mut wrapped = b"(function (exports, require, module, __filename, __dirname) { ".to_vec();
    wrapped.extend_from_slice(&source);
    wrapped.extend_from_slice(b"\n})");
    let code = text(scope, &wrapped)?;
    let resource = host::js_string(scope, name)?;
    let origin = script_origin(scope, resource, false);
    let function = v8::Script::compile(scope, code, Some(&origin))?.run(scope)?;
    let function = v8::Local::<v8::Function>::try_from(function).ok()?;

    let (module_value, exports) = new_module(scope, registry, name)?;

    let require = v8::Function::builder(require).data(resource).build(scope)?;
    let folder = name.rsplit_once('/').map_or("", |(folder, _)| folder);
    let dirname = host::js_string(scope, folder)?;
    let undefined = v8::undefined(scope).into();
    function.call(
        scope,
        undefined,
        &[
            exports.into(),
            require.into(),
            module_value,
            resource,
            dirname,
        ],
    )?;
    module_exports(scope, module_value)
}

/// A `module` object with empty `exports` for module `name`, registered
/// before the module runs (so that a cycle sees its partial exports).
pub(super) fn new_module<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<(v8::Local<'s, v8::Value>, v8::Local<'s, v8::Object>)> {
    let module = v8::Object::new(scope);
    let exports = v8::Object::new(scope);
    let key = v8::String::new(scope, "exports")?;
    module.set(scope, key.into(), exports.into())?;
    let module: v8::Local<v8::Value> = module.into();
    let global = v8::Global::new(scope, module);
    registry
        .state
        .borrow_mut()
        .values
        .insert(name.to_owned(), global);
    Some((module, exports))
}

/// `Some(module.exports)` of module `name` when it has run (or is
/// running: a cycle); `None` when it has not started.
pub(super) fn ran<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<Option<v8::Local<'s, v8::Value>>> {
    let module = registry.state.borrow().values.get(name).cloned()?;
    let module = v8::Local::new(scope, module);
    Some(module_exports(scope, module))
}

pub(super) fn module_exports<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    module: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Value>> {
    let module = v8::Local::<v8::Object>::try_from(module).ok()?;
    let key = v8::String::new(scope, "exports")?;
    module.get(scope, key.into())
}

/// `require(specifier)`, from the module named by the function's data.
fn require(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(registry) = Registry::get(scope) else {
        return;
    };
    let referrer = args.data().to_rust_string_lossy(scope);
    let specifier = args.get(0).to_rust_string_lossy(scope);
    if registry.modules.resolve(&referrer, &specifier).is_none()
        || specifier.starts_with(super::builtin::PREFIX)
    {
        // Not the bundle's: one of Node's built-ins, or an error saying
        // why not.
        match super::builtin::builtin(&specifier, &registry.compat) {
            Some(Ok(name)) => {
                if let Some(value) = default_export(scope, &registry, &name) {
                    rv.set(value);
                }
                return;
            }
            Some(Err(refusal)) => {
                let message = super::builtin::refusal_message(&refusal, &specifier, &referrer);
                host::throw_type_error(scope, &message);
                return;
            }
            None => {}
        }
    }
    let Some(target) = registry.modules.resolve(&referrer, &specifier) else {
        host::throw_type_error(
            scope,
            &format!(
                "Cannot find module {specifier:?} required by {referrer:?}: no module of that name in the bundle"
            ),
        );
        return;
    };
    if target.kind == ModuleKind::ESModule {
        host::throw_type_error(
            scope,
            &format!(
                "{referrer:?} requires {:?}, an ES module: import it instead",
                target.name
            ),
        );
        return;
    }
    let name = target.name.clone();
    if let Some(value) = default_export(scope, &registry, &name) {
        rv.set(value);
    }
}
