//! The native side of HOST.md: the `host` object the runtime's JavaScript
//! calls, and the per-isolate [`HostState`] those calls work on.
//!
//! This file lists the Web API units (`src/unit.rs`: each declares its host
//! functions, JS files and per-isolate state) and makes from that list the
//! `host` object, the external references and the order of the snapshot's
//! JavaScript. A host function is a typed Rust function in `host_fn!`
//! (`host/op.rs`); what JavaScript holds natively lives in one handle table
//! (`host/handle.rs`); errors cross as a class and a message (`host/error.rs`).
//!
//! Every callback here runs inside V8 on the isolate's own thread. None may
//! panic (a panic cannot unwind through V8's C++ frames) and none may start a
//! JS turn of its own: async work is spawned on the thread's `LocalSet` and
//! settles its promise later, in a turn of its own (see `isolate::turn`).

#[macro_use]
pub(crate) mod op;

mod clone;
pub(crate) mod console;
pub(crate) mod error;
pub(crate) mod handle;
pub(crate) mod headers;
pub(crate) mod holder;
pub(crate) mod id_map;
mod io;
pub(crate) mod lazy;
pub(crate) mod memory;
pub(crate) mod object_forward;
pub(crate) mod object_hosted;
pub(crate) mod outbound;
pub(crate) mod rejection;
pub(crate) mod request_head;
mod respond;
mod runtime;
pub(crate) mod service;
mod settlement;
pub(crate) mod socket_count;
pub(crate) mod state;
mod text;
pub(crate) mod unhandled;
mod url;
mod value;

use std::sync::OnceLock;

use crate::bundle::Compat;

pub use crate::unit::{Family, Unit};
pub(crate) use error::throw_type_error;
pub(crate) use headers::{header_block, header_map, lenient_header_map};
pub(crate) use memory::fits as memory_fits;
pub use state::{HostState, IsolateTurns, Settle, Settlement};
pub use value::{
    arg_string, array_buffer, begin_op, js_string, new_promise, spawn_op, u8_array, value_string,
    view_bytes,
};

/// The core's units and the Web APIs it still holds, in the order their
/// JavaScript is evaluated (the `NN_` file order; a test holds them to
/// it); the API crates' [`Family`]s come after them, before `finalize`
/// (see [`all_units`]). Each unit declares its host functions, JS files and
/// per-isolate state (`src/unit.rs`). The snapshot's external references
/// are made from this list in this order: add units before `finalize`,
/// never reorder.
fn core_units() -> Vec<Unit> {
    vec![
        runtime::base(),
        text::utf8(),
        url::unit(),
        headers::unit(),
        io::unit(),
        headers::bodies(),
        console::unit(),
        clone::unit(),
        respond::unit(),
        memory::unit(),
        memory::wasm(),
    ]
}

/// Every unit: `base` first, the core's (`core_units`), each family's in
/// the order given, `finalize` last.
pub(crate) fn all_units(families: &[Family]) -> Vec<Unit> {
    let mut units = core_units();
    for family in families {
        units.extend((family.units)());
    }
    units.push(runtime::finalize());
    units
}

/// The families of this process, fixed by its first engine (or, when a
/// unit is needed before any engine starts, none: the core alone).
static FAMILIES: OnceLock<Vec<Family>> = OnceLock::new();

/// Fixes the process's families to `families` (the first engine's); an
/// engine asking for others gets `Err` (the units, and so the snapshot and
/// the external references, are one per process).
pub(crate) fn set_families(families: &[Family]) -> Result<(), ()> {
    let set = FAMILIES.get_or_init(|| families.to_vec());
    let names = |f: &[Family]| f.iter().map(|f| f.name).collect::<Vec<_>>();
    if names(set) == names(families) {
        Ok(())
    } else {
        Err(())
    }
}

/// The process's families (see [`set_families`]).
pub(crate) fn families() -> &'static [Family] {
    FAMILIES.get_or_init(Vec::new)
}

/// The units, made once per process.
pub(crate) fn units() -> &'static [Unit] {
    static UNITS: OnceLock<Vec<Unit>> = OnceLock::new();
    UNITS.get_or_init(|| all_units(families()))
}

/// The names of the host functions the units of `families` (with the
/// core's) register, in registration order: for the test that holds them
/// to HOST.md, which documents every family's.
pub fn host_function_names(families: &[Family]) -> Vec<&'static str> {
    all_units(families)
        .iter()
        .flat_map(|unit| unit.functions.iter().map(|(name, _)| *name))
        .collect()
}

/// Every host function: (name on `host`, native callback), unit by unit.
fn functions() -> impl Iterator<Item = (&'static str, v8::FunctionCallback)> {
    units()
        .iter()
        .flat_map(|unit| unit.functions.iter().copied())
}

/// The runtime's JavaScript files, in evaluation order, each with the name
/// of its unit.
#[cfg(test)]
pub(crate) fn js_files() -> impl Iterator<Item = (&'static str, &'static str)> {
    units()
        .iter()
        .flat_map(|unit| unit.js.iter().map(|file| (unit.name, *file)))
}

/// Deletes the globals that the Worker's compatibility settings do not
/// expose (each unit's gates). Runs before the Worker's own code; `None`
/// means a JS exception is pending.
pub(crate) fn hide_gated_globals(scope: &mut v8::PinScope<'_, '_>, compat: &Compat) -> Option<()> {
    let global = scope.get_current_context().global(scope);
    let hidden = units()
        .iter()
        .flat_map(|unit| unit.gated.iter())
        .filter(|(_, gate)| !gate(compat))
        .flat_map(|(names, _)| names.iter());
    for name in hidden {
        let key = v8::String::new(scope, name)?;
        global.delete(scope, key.into())?;
    }
    Some(())
}

/// The source of Node built-in `node:<name>`, if a unit provides it.
pub(crate) fn node_source(name: &str) -> Option<&'static str> {
    units()
        .iter()
        .flat_map(|unit| unit.node.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, source)| *source)
}

/// One external reference per host function, and the lazy globals' getter and setter:
/// the first part of
/// `snapshot::external_references`, which every isolate (and the snapshot
/// creator) is made with.
pub(crate) fn external_references() -> Vec<v8::ExternalReference> {
    functions()
        .map(|(_, function)| v8::ExternalReference { function })
        .chain(lazy::external_references())
        .collect()
}

/// Builds the `host` object (snapshot time only).
pub(crate) fn install<'s>(
    scope: &mut v8::PinScope<'s, '_>,
) -> Result<v8::Local<'s, v8::Object>, String> {
    let host = v8::Object::new(scope);
    for (name, callback) in functions() {
        let function = v8::FunctionTemplate::builder_raw(callback)
            .build(scope)
            .get_function(scope)
            .ok_or_else(|| format!("creating host.{name}"))?;
        let key = v8::String::new(scope, name).ok_or("allocating a string")?;
        host.set(scope, key.into(), function.into());
    }
    Ok(host)
}
