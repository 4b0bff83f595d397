//! A bundle's WebAssembly module compiled and described to the runtime:
//! [`compile`] prepares it (`wasm.rs`), compiles it, and hands it to
//! `internal.wasmModule(module, description)` (js/25_wasm.js) with what the
//! runtime must give it and check when it is instantiated.

use super::wasm::{self, Prepared};
use super::{fits, host};

/// Compiles a Wasm module of the bundle and registers it with the runtime.
pub(super) fn compile<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    internal: &v8::Global<v8::Object>,
    name: &str,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::Value>> {
    let prepared = match wasm::prepare(bytes) {
        Ok(prepared) => prepared,
        Err(error) => {
            throw_compile_error(scope, &format!("{name}: {error}"));
            return None;
        }
    };
    // Compiled code lives outside the heap: it must fit the limit too.
    if !fits(scope, prepared.bytes.len().saturating_mul(4)) {
        return None;
    }
    let module = v8::WasmModuleObject::compile(scope, &prepared.bytes)?;
    let description = describe(scope, &prepared)?;
    let internal = v8::Local::new(scope, internal);
    let key = v8::String::new(scope, "wasmModule")?;
    let register = v8::Local::<v8::Function>::try_from(internal.get(scope, key.into())?).ok()?;
    register.call(scope, internal.into(), &[module.into(), description.into()])?;
    Some(module.into())
}

/// `{memories, tables, growsTables, makesArrays, constArrayBytes}`, each
/// memory and table `[importModule, importName, initial, maximum]` (the
/// import undefined for one the module defines).
fn describe<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    prepared: &Prepared,
) -> Option<v8::Local<'s, v8::Object>> {
    let memories = prepared
        .memories
        .iter()
        .map(|m| (m.import.as_ref(), m.initial, m.maximum));
    let memories = limits_list(scope, memories)?;
    let tables = prepared
        .tables
        .iter()
        .map(|t| (t.import.as_ref(), t.initial, t.maximum));
    let tables = limits_list(scope, tables)?;
    let grows = v8::Boolean::new(scope, prepared.grows_tables);
    let arrays = v8::Boolean::new(scope, prepared.makes_arrays);
    let const_bytes = v8::Number::new(scope, prepared.const_array_bytes as f64);
    let description = v8::Object::new(scope);
    for (key, value) in [
        ("memories", memories.into()),
        ("tables", tables.into()),
        ("growsTables", grows.into()),
        ("makesArrays", arrays.into()),
        ("constArrayBytes", const_bytes.into()),
    ] {
        let key = v8::String::new(scope, key)?;
        description.set(scope, key.into(), value)?;
    }
    Some(description)
}

/// A JS array of `[importModule, importName, initial, maximum]`.
fn limits_list<'s, 'i>(
    scope: &mut v8::PinScope<'s, '_>,
    items: impl Iterator<Item = (Option<&'i (String, String)>, u64, Option<u64>)>,
) -> Option<v8::Local<'s, v8::Array>> {
    let list = v8::Array::new(scope, 0);
    for (i, (import, initial, maximum)) in items.enumerate() {
        let (import_module, import_name) = import.map(|(m, n)| (m.as_str(), n.as_str())).unzip();
        let parts: [v8::Local<v8::Value>; 4] = [
            optional_string(scope, import_module)?,
            optional_string(scope, import_name)?,
            v8::Number::new(scope, initial as f64).into(),
            match maximum {
                Some(max) => v8::Number::new(scope, max as f64).into(),
                None => v8::undefined(scope).into(),
            },
        ];
        let entry = v8::Array::new_with_elements(scope, &parts);
        list.set_index(scope, u32::try_from(i).ok()?, entry.into())?;
    }
    Some(list)
}

fn optional_string<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: Option<&str>,
) -> Option<v8::Local<'s, v8::Value>> {
    match value {
        Some(value) => host::js_string(scope, value),
        None => Some(v8::undefined(scope).into()),
    }
}

/// Throws a `WebAssembly.CompileError` (a TypeError if it is unreachable).
fn throw_compile_error(scope: &mut v8::PinScope<'_, '_>, message: &str) {
    let global = scope.get_current_context().global(scope);
    let class = (|| {
        let wasm_key = v8::String::new(scope, "WebAssembly")?;
        let wasm = v8::Local::<v8::Object>::try_from(global.get(scope, wasm_key.into())?).ok()?;
        let key = v8::String::new(scope, "CompileError")?;
        v8::Local::<v8::Function>::try_from(wasm.get(scope, key.into())?).ok()
    })();
    let error = class.and_then(|class| {
        let message = v8::String::new(scope, message)?;
        class.new_instance(scope, &[message.into()])
    });
    match error {
        Some(error) => {
            scope.throw_exception(error.into());
        }
        None => host::throw_type_error(scope, message),
    }
}
