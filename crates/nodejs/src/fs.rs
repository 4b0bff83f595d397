//! `node:fs`'s host functions: which request a call belongs to (each has
//! its own `/tmp`, kept in JavaScript and dropped when the request ends) and
//! the Worker's modules, read-only under `/bundle` as in workerd.

use std::rc::Rc;

use isolane_engine::api::HostResult;
use isolane_engine::api::{HostState, js_string, u8_array};

/// A single-script Worker's one file under `/bundle`.
const SCRIPT_NAME: &str = "worker.js";

host_fn! {
/// `fsContext()` → the current request's id (0 outside requests).
pub(super) fn context<'s>(_scope, host: Rc<HostState>) -> f64 {
    f64::from(host.current())
}
}

/// `(name, size)` of each file of the Worker's bundle.
fn bundle_files(host: &HostState) -> Vec<(String, usize)> {
    let Some(worker) = host.worker() else {
        return Vec::new();
    };
    match &worker.modules {
        Some(modules) => modules
            .iter()
            .map(|m| (m.name.clone(), m.content.len()))
            .collect(),
        None => vec![(SCRIPT_NAME.to_owned(), worker.script.len())],
    }
}

host_fn! {
/// `fsBundleList()` → `[name, size, …]` of the Worker's modules.
pub(super) fn bundle_list<'s>(
    scope,
    host: Rc<HostState>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let mut items = Vec::new();
    for (name, size) in bundle_files(&host) {
        let Some(name) = js_string(scope, &name) else {
            return Ok(None);
        };
        items.push(name);
        items.push(v8::Number::new(scope, size as f64).into());
    }
    Ok(Some(v8::Array::new_with_elements(scope, &items)))
}
}

host_fn! {
/// `fsBundleRead(name)` → the module's bytes (charged), or null.
pub(super) fn bundle_read<'s>(
    scope,
    host: Rc<HostState>,
    name: String,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let file = match host.worker().and_then(|w| w.modules.clone()) {
        Some(modules) => modules.get(&name).map(|m| m.content.clone()),
        None if name == SCRIPT_NAME => host.worker().map(|w| w.script.as_bytes().to_vec()),
        None => None,
    };
    Ok(match file {
        Some(bytes) => u8_array(scope, bytes).map(Into::into),
        None => Some(v8::null(scope).into()),
    })
}
}
