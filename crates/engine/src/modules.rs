//! A bundle's modules in V8: the graph from the main module, each module
//! made as its type says (wrangler's types, [`isolane_worker::ModuleKind`]).
//!
//! - ES modules are compiled as modules; their imports resolve within the
//!   bundle ([`isolane_worker::Modules::resolve`]). An import that names no
//!   module is a load error thrown before anything is evaluated.
//! - Text, Data, JSON and CompiledWasm modules are synthetic modules with a
//!   `default` export: a string, an `ArrayBuffer` (charged to the worker's
//!   memory), the parsed value, a `WebAssembly.Module` (compiled here from
//!   the bundle's bytes after `wasm::prepare`; the only way Wasm is ever
//!   compiled, see js/25_wasm.js).
//! - CommonJS modules run when first imported or required, in a function
//!   of `(exports, require, module, __filename, __dirname)`; their
//!   `module.exports` is their default export and what `require` returns.
//!
//! - Node's built-ins (`node:buffer`) load as the Worker's compatibility
//!   settings allow, as synthetic modules made from their exports
//!   (`modules/node.rs`).
//! - `import()` loads the same way at run time (`modules/dynamic.rs`):
//!   what a bundle leaves external (`cloudflare:sockets`, a built-in).
//!
//! Per isolate, a [`Registry`] in an isolate slot keeps what was made (by
//! name) for the resolve and evaluation callbacks, which V8 calls without
//! data of ours, and for `require` calls after load. It holds V8 globals,
//! so the isolate's owner removes it before disposing the isolate.

mod builtin;
mod commonjs;
mod dynamic;
mod node;
pub(crate) mod wasm;
mod wasm_load;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use isolane_worker::{Compat, ModuleKind, Modules};

use crate::code_cache::{CodeCache, Compiled, owed};
use crate::host;
use crate::snapshot::script_origin;

pub(crate) use dynamic::import_dynamically;

/// What one isolate made of its bundle's modules.
pub(crate) struct Registry {
    modules: Arc<Modules>,
    /// Which of Node's built-ins the Worker may import.
    compat: Compat,
    /// The runtime's `internal` object (`internal.wasmModule`).
    internal: v8::Global<v8::Object>,
    /// The engine's code cache, if it has one.
    code_cache: Option<Arc<CodeCache>>,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// Module by name.
    compiled: HashMap<String, v8::Global<v8::Module>>,
    /// Names by a module's identity hash (several when hashes collide).
    names: HashMap<i32, Vec<(v8::Global<v8::Module>, String)>>,
    /// The default export of each non-ES module made so far.
    values: HashMap<String, v8::Global<v8::Value>>,
}

/// The isolate slot's type.
pub(crate) type RegistrySlot = Rc<Registry>;

/// Compiles the graph from `modules`' main module, instantiates it and
/// returns it (not yet evaluated). `None`: a JS exception is pending, with
/// the reason (a missing module names the import and its importer).
pub(crate) fn load<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: &v8::Global<v8::Object>,
    modules: &Arc<Modules>,
    compat: Compat,
    code_cache: Option<&Arc<CodeCache>>,
) -> Option<v8::Local<'s, v8::Module>> {
    let registry = Rc::new(Registry {
        modules: modules.clone(),
        compat,
        internal: internal.clone(),
        code_cache: code_cache.cloned(),
        state: RefCell::new(State::default()),
    });
    scope.set_slot::<RegistrySlot>(registry.clone());
    let main = modules.main_name().to_owned();
    compile_graph(scope, &registry, &main)?;
    node::define_globals(scope, compat)?;
    let main = registry.module(scope, &main)?;
    if !main.instantiate_module(scope, resolve)? {
        return None;
    }
    Some(main)
}

/// Compiles module `root` and every module it imports statically, but for
/// those made already. `None`: a JS exception is pending.
fn compile_graph(scope: &mut v8::PinScope<'_, '_>, registry: &Registry, root: &str) -> Option<()> {
    let mut pending = vec![root.to_owned()];
    while let Some(name) = pending.pop() {
        if registry.state.borrow().compiled.contains_key(&name) {
            continue;
        }
        if builtin::is_builtin(&name) {
            node::compile(scope, registry, &name)?;
            continue;
        }
        let module = compile(scope, registry, &name)?;
        for specifier in requests(scope, module) {
            pending.push(registry.target(scope, &name, &specifier)?);
        }
    }
    Some(())
}

/// Drops the registry of the isolate `scope` is in (before it is disposed).
pub(crate) fn forget(isolate: &mut v8::Isolate) {
    isolate.remove_slot::<RegistrySlot>();
}

// === impl Registry ===

impl Registry {
    fn get(scope: &mut v8::PinScope<'_, '_>) -> Option<Rc<Registry>> {
        scope.get_slot::<RegistrySlot>().cloned()
    }

    /// The name of the module `specifier` names from `referrer`: a
    /// bundle's module, or one of Node's built-ins. `None`: a TypeError
    /// saying why is thrown.
    fn target(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        referrer: &str,
        specifier: &str,
    ) -> Option<String> {
        let builtin = || builtin::builtin(specifier, &self.compat);
        let found = match builtin::is_builtin(specifier) {
            true => builtin(),
            false => match self.modules.resolve(referrer, specifier) {
                Some(module) => Some(Ok(module.name.clone())),
                None => builtin(),
            },
        };
        match found {
            Some(Ok(name)) => Some(name),
            Some(Err(refusal)) => {
                let message = builtin::refusal_message(&refusal, specifier, referrer);
                host::throw_type_error(scope, &message);
                None
            }
            None => {
                throw_unresolved(scope, specifier, referrer);
                None
            }
        }
    }

    fn module<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        name: &str,
    ) -> Option<v8::Local<'s, v8::Module>> {
        let state = self.state.borrow();
        state.compiled.get(name).map(|m| v8::Local::new(scope, m))
    }

    fn name_of(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        module: v8::Local<v8::Module>,
    ) -> Option<String> {
        let hash = module.get_identity_hash().get();
        let state = self.state.borrow();
        state
            .names
            .get(&hash)?
            .iter()
            .find(|(global, _)| v8::Local::new(scope, global) == module)
            .map(|(_, name)| name.clone())
    }

    fn remember(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        name: &str,
        module: v8::Local<v8::Module>,
    ) {
        let global = v8::Global::new(scope, module);
        let mut state = self.state.borrow_mut();
        state
            .names
            .entry(module.get_identity_hash().get())
            .or_default()
            .push((global.clone(), name.to_owned()));
        state.compiled.insert(name.to_owned(), global);
    }
}

/// Compiles module `name` (ES) or makes its synthetic module (the rest).
fn compile<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<v8::Local<'s, v8::Module>> {
    let Some(module) = registry.modules.get(name) else {
        host::throw_type_error(scope, &format!("no module {name:?} in the bundle"));
        return None;
    };
    let resource = v8::String::new(scope, name)?;
    let compiled = if module.kind == ModuleKind::ESModule {
        let source = text(scope, &module.content)?;
        let origin = script_origin(scope, resource.into(), true);
        compile_es(scope, registry, source, &origin, &module.content)?
    } else {
        let default = v8::String::new(scope, "default")?;
        v8::Module::create_synthetic_module(scope, resource, &[default], evaluate_synthetic)
    };
    registry.remember(scope, name, compiled);
    Some(compiled)
}

/// Compiles an ES module of `bytes` (its text `source`), from its code
/// cache file when V8 accepts it (`code_cache.rs`); owes a cache of its
/// own (`code_cache/owed.rs`) when there was none or V8 refused it.
fn compile_es<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    source: v8::Local<'s, v8::String>,
    origin: &v8::ScriptOrigin<'s>,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::Module>> {
    use v8::script_compiler::{CachedData, CompileOptions, NoCacheReason, Source};
    let cached = registry
        .code_cache
        .as_ref()
        .and_then(|cache| Some((cache, cache.lookup(Compiled::Module, bytes)?)));
    let Some((cache, lookup)) = cached else {
        let mut source = Source::new(source, Some(origin));
        return v8::script_compiler::compile_module(scope, &mut source);
    };
    let module = match &lookup.bytes {
        Some(data) => {
            let mut source =
                Source::new_with_cached_data(source, Some(origin), CachedData::new(data));
            let module = v8::script_compiler::compile_module2(
                scope,
                &mut source,
                CompileOptions::ConsumeCodeCache,
                NoCacheReason::NoReason,
            )?;
            let rejected = source.get_cached_data().is_none_or(|data| data.rejected());
            cache.consumed(&lookup.key, rejected);
            if !rejected {
                return Some(module);
            }
            module
        }
        None => {
            let mut source = Source::new(source, Some(origin));
            v8::script_compiler::compile_module(scope, &mut source)?
        }
    };
    // Read before evaluation: V8 gives it only for a module not yet run.
    let unbound = v8::Global::new(scope, module.get_unbound_module_script(scope));
    owed::owe(scope, lookup.key, owed::Unbound::Module(unbound));
    Some(module)
}

/// The specifiers module `module` imports statically.
fn requests(scope: &mut v8::PinScope<'_, '_>, module: v8::Local<v8::Module>) -> Vec<String> {
    let requests = module.get_module_requests();
    (0..requests.length())
        .filter_map(|i| {
            let request = requests.get(scope, i)?;
            let request = v8::Local::<v8::ModuleRequest>::try_from(request).ok()?;
            Some(request.get_specifier().to_rust_string_lossy(scope))
        })
        .collect()
}

fn throw_unresolved(scope: &mut v8::PinScope<'_, '_>, specifier: &str, referrer: &str) {
    host::throw_type_error(
        scope,
        &format!(
            "Cannot resolve {specifier:?} imported by {referrer:?}: no module of that name in the bundle"
        ),
    );
}

/// A string from a module's UTF-8 content, if the memory limit has room.
fn text<'s>(scope: &mut v8::PinScope<'s, '_>, content: &[u8]) -> Option<v8::Local<'s, v8::String>> {
    // A string takes at least a byte per byte of UTF-8 on the heap.
    if !fits(scope, content.len()) {
        return None;
    }
    let Some(string) = v8::String::new_from_utf8(scope, content, v8::NewStringType::Normal) else {
        host::throw_type_error(scope, "a module is too large for a string");
        return None;
    };
    Some(string)
}

/// Whether `bytes` more fit the worker's memory; when not, the isolate is
/// being terminated and a RangeError is thrown for the unwinding caller
/// (V8 wants an exception whenever a callback answers nothing).
fn fits(scope: &mut v8::PinScope<'_, '_>, bytes: usize) -> bool {
    if host::memory_fits(scope, bytes) {
        return true;
    }
    if let Some(message) = v8::String::new(scope, "memory limit exceeded") {
        let error = v8::Exception::range_error(scope, message);
        scope.throw_exception(error);
    }
    false
}

/// V8's resolve callback: looks the import up among the compiled modules.
fn resolve<'s>(
    context: v8::Local<'s, v8::Context>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
    referrer: v8::Local<'s, v8::Module>,
) -> Option<v8::Local<'s, v8::Module>> {
    // SAFETY: V8 calls this with a live context, inside a handle scope.
    v8::callback_scope!(unsafe scope, context);
    let Some(registry) = Registry::get(scope) else {
        host::throw_type_error(scope, "internal: the isolate has no module registry");
        return None;
    };
    let specifier = specifier.to_rust_string_lossy(scope);
    let referrer = registry.name_of(scope, referrer).unwrap_or_default();
    let name = registry.target(scope, &referrer, &specifier)?;
    match registry.module(scope, &name) {
        Some(module) => Some(module),
        None => {
            throw_unresolved(scope, &specifier, &referrer);
            None
        }
    }
}

/// V8's evaluation steps for a synthetic module: sets `default`.
fn evaluate_synthetic<'s>(
    context: v8::Local<'s, v8::Context>,
    module: v8::Local<'s, v8::Module>,
) -> Option<v8::Local<'s, v8::Value>> {
    // SAFETY: V8 calls this with a live context, inside a handle scope.
    v8::callback_scope!(unsafe scope, context);
    let Some((registry, name)) =
        Registry::get(scope).and_then(|r| Some((r.clone(), r.name_of(scope, module)?)))
    else {
        host::throw_type_error(scope, "internal: a module the registry does not know");
        return None;
    };
    if builtin::is_builtin(&name) {
        node::set_exports(scope, &registry, &name, module)?;
    } else {
        let value = default_export(scope, &registry, &name)?;
        let default = v8::String::new(scope, "default")?;
        module.set_synthetic_module_export(scope, default, value)?;
    }
    // With top-level await, module evaluation answers a promise.
    let resolver = v8::PromiseResolver::new(scope)?;
    let undefined = v8::undefined(scope);
    resolver.resolve(scope, undefined.into())?;
    Some(resolver.get_promise(scope).into())
}

/// The default export of non-ES module `name`, made once and kept.
fn default_export<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    registry: &Registry,
    name: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    if builtin::is_builtin(name) {
        return node::exports(scope, registry, name);
    }
    let modules = registry.modules.clone();
    let module = modules.get(name)?;
    if module.kind == ModuleKind::CommonJS {
        // Its entry in `values` is its `module` object.
        return commonjs::exports(scope, registry, name);
    }
    let known = registry.state.borrow().values.get(name).cloned();
    if let Some(value) = known {
        return Some(v8::Local::new(scope, value));
    }
    let value: v8::Local<v8::Value> = match module.kind {
        ModuleKind::Text => text(scope, &module.content)?.into(),
        ModuleKind::Data => {
            if !fits(scope, module.content.len()) {
                return None;
            }
            let Some(buffer) = host::array_buffer(scope, module.content.clone()) else {
                fits(scope, usize::MAX);
                return None;
            };
            buffer.into()
        }
        ModuleKind::Json => {
            let source = text(scope, &module.content)?;
            v8::json::parse(scope, source)?
        }
        ModuleKind::CompiledWasm => {
            wasm_load::compile(scope, &registry.internal, name, &module.content)?
        }
        ModuleKind::CommonJS | ModuleKind::ESModule => {
            host::throw_type_error(scope, &format!("{name:?} is an ES module"));
            return None;
        }
    };
    let global = v8::Global::new(scope, value);
    registry
        .state
        .borrow_mut()
        .values
        .insert(name.to_owned(), global);
    Some(value)
}
