//! Which built-in modules a specifier names (`node:buffer`,
//! `cloudflare:workers`): the sources units provide (`Unit::node_module`),
//! gated by the Worker's compatibility settings, and why one is refused.
//! Loading and running them is `node.rs`'s.

use isolane_worker::Compat;
use isolane_worker::compat::ModuleGate;

use crate::host;

/// The prefix every Node built-in's module name has in the registry.
pub(super) const PREFIX: &str = "node:";
/// The prefix of Cloudflare's built-ins (`cloudflare:workers`), named in
/// full by their unit and loaded whatever the compatibility settings.
const CLOUDFLARE: &str = "cloudflare:";

/// Whether `name` names a built-in (Node's or Cloudflare's) rather than a
/// module of the bundle.
pub(super) fn is_builtin(name: &str) -> bool {
    name.starts_with(PREFIX) || name.starts_with(CLOUDFLARE)
}

/// The JavaScript of built-in `name` (`node:buffer`, `cloudflare:workers`).
pub(super) fn source(name: &str) -> Option<&'static str> {
    match name.strip_prefix(PREFIX) {
        Some(node) => host::node_source(node),
        None if name.starts_with(CLOUDFLARE) => host::node_source(name),
        None => None,
    }
}

/// Why a specifier that names a built-in does not load.
pub(super) enum Refusal {
    /// Node.js compatibility is off for this Worker.
    Off,
    /// `node:<name>` is no module Isolane has.
    Unknown,
    /// The module has a flag of its own, which the settings leave off.
    Gated(&'static ModuleGate),
}

/// The registry name (`node:buffer`) of the built-in `specifier` names, if
/// it names one: `node:<name>` always, a bare `<name>` only when the
/// settings allow bare names (a bundle's own module of that name wins,
/// the caller looks there first).
pub(super) fn builtin(specifier: &str, compat: &Compat) -> Option<Result<String, Refusal>> {
    if specifier.starts_with(CLOUDFLARE) {
        return Some(match source(specifier) {
            Some(_) => Ok(specifier.to_owned()),
            None => Err(Refusal::Unknown),
        });
    }
    let (name, prefixed) = match specifier.strip_prefix(PREFIX) {
        Some(name) => (name, true),
        None => (specifier, false),
    };
    // `internal/` built-ins are the others' parts, not Node's modules.
    let known = !name.starts_with("internal/") && host::node_source(name).is_some();
    let gate = compat.module_gate(name);
    if !prefixed {
        return (known && compat.node.bare_names() && gate.is_ok())
            .then(|| Ok(format!("{PREFIX}{name}")));
    }
    let allowed = if name == "async_hooks" {
        compat.node.async_hooks()
    } else {
        compat.node.modules()
    };
    Some(match (known, allowed, gate) {
        (_, false, _) => Err(Refusal::Off),
        (false, true, _) => Err(Refusal::Unknown),
        (true, true, Err(gate)) => Err(Refusal::Gated(gate)),
        (true, true, Ok(())) => Ok(specifier.to_owned()),
    })
}

/// The message for a refused built-in.
pub(super) fn refusal_message(refusal: &Refusal, specifier: &str, referrer: &str) -> String {
    match refusal {
        Refusal::Off => format!(
            "Cannot load {specifier:?} imported by {referrer:?}: Node.js modules need the \
             nodejs_compat compatibility flag (or a compatibility date from 2026-08-04)"
        ),
        Refusal::Unknown => format!("No such module {specifier:?} (imported by {referrer:?})"),
        Refusal::Gated(gate) => format!(
            "Cannot load {specifier:?} imported by {referrer:?}: it needs the {} compatibility \
             flag (or, with Node.js compatibility, a compatibility date from {})",
            gate.on, gate.since
        ),
    }
}
