//! The native side of HOST.md: the `host` object the runtime's JavaScript
//! calls, and the per-isolate [`HostState`] those calls work on.
//!
//! This file lists the Web API units (`host/unit.rs`: each declares its host
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
mod op;

mod cache;
mod clone;
mod cloudflare;
pub(crate) mod codec;
pub(crate) mod console;
pub(crate) mod crypto;
mod data_url;
mod durable_object;
pub(crate) mod error;
mod fetch;
mod form_data;
pub(crate) mod handle;
mod headers;
mod html_rewriter;
mod id_map;
mod io;
mod kv;
pub(crate) mod lazy;
mod memory;
mod message_channel;
mod node;
mod object_binding;
mod object_forward;
mod object_hosted;
pub(crate) mod rejection;
mod respond;
mod runtime;
pub(crate) mod socket;
pub(crate) mod socket_count;
pub(crate) mod state;
mod tcp;
mod text;
mod timers;
mod unit;
mod url;
mod url_pattern;
mod value;
mod ws_client;
mod ws_connect;
mod ws_object;

use std::sync::OnceLock;

use crate::bundle::Compat;

pub(crate) use error::throw_type_error;
pub(crate) use headers::{HeaderNames, header_array, header_block, header_map, lenient_header_map};
pub(crate) use memory::fits as memory_fits;
pub(crate) use state::{HostState, IsolateTurns, Settle, Settlement};
pub(crate) use unit::Unit;
pub(crate) use value::{
    arg_string, array_buffer, begin_op, js_string, new_promise, u8_array, value_string, view_bytes,
};

/// Every Web API family, in the order their JavaScript is evaluated (the
/// `NN_` file order; a test holds them to it). Each unit declares its host
/// functions, JS files and per-isolate state (`host/unit.rs`); a new API is
/// a new unit here. The snapshot's external references are made from this
/// list in this order: add units before `finalize`, never reorder.
fn families() -> Vec<Unit> {
    let mut units = vec![
        runtime::base(),
        text::encoding(),
        url::unit(),
        fetch::headers(),
        io::unit(),
        fetch::unit(),
        crypto::unit(),
        timers::unit(),
        text::clock(),
        console::unit(),
        clone::unit(),
        respond::unit(),
        memory::unit(),
        url_pattern::unit(),
        cache::unit(),
        html_rewriter::unit(),
        codec::unit(),
        form_data::unit(),
        memory::wasm(),
        socket::unit(),
        ws_connect::unit(),
    ];
    units.extend(node_families());
    units.extend([
        kv::unit(),
        object_binding::unit(),
        message_channel::unit(),
        cloudflare::workers(),
        cloudflare::node(),
        tcp::unit(),
        runtime::finalize(),
    ]);
    units
}

/// Node's built-in modules (`host/node.rs`), between the Web APIs and the
/// Workers platform's units in [`families`].
fn node_families() -> Vec<Unit> {
    vec![
        node::internal_errors(),
        node::buffer(),
        node::events(),
        node::async_hooks(),
        node::path(),
        node::string_decoder(),
        node::querystring(),
        node::util(),
        node::process(),
        node::url(),
        node::diagnostics_channel(),
        node::crypto(),
        node::zlib(),
        node::stream(),
        node::assert(),
        node::timers(),
        node::console(),
        node::os(),
        node::module(),
        node::fs(),
        node::http(),
        node::net(),
        node::dns(),
        node::vm(),
        node::punycode(),
        node::child_process(),
        node::cluster(),
        node::dgram(),
        node::domain(),
        node::inspector(),
        node::perf_hooks(),
        node::readline(),
        node::repl(),
        node::sqlite(),
        node::trace_events(),
        node::tty(),
        node::v8(),
        node::wasi(),
        node::worker_threads(),
        node::test(),
    ]
}

/// The units, made once per process.
pub(crate) fn units() -> &'static [Unit] {
    static UNITS: OnceLock<Vec<Unit>> = OnceLock::new();
    UNITS.get_or_init(families)
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

#[cfg(test)]
mod tests;
