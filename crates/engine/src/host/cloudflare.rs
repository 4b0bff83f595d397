//! The `cloudflare:` built-in modules (js/cloudflare/): `cloudflare:workers`,
//! the base classes a Worker extends (`WorkerEntrypoint`, `DurableObject`,
//! `WorkflowEntrypoint`, `RpcTarget`); `cloudflare:node`, whose
//! `httpServerHandler` serves the Worker's requests with a `node:http`
//! server. Loaded like Node's built-ins, lazily
//! and outside the snapshot (`modules/node.rs`), whatever the Worker's
//! compatibility settings, as in workerd.

use crate::unit::Unit;

/// `cloudflare:workers`.
pub(super) fn workers() -> Unit {
    Unit::new("cloudflare:workers").node_module(
        "cloudflare:workers",
        include_str!("../../js/cloudflare/workers.js"),
    )
}

/// `cloudflare:node`: `httpServerHandler`.
pub(super) fn node() -> Unit {
    Unit::new("cloudflare:node").node_module(
        "cloudflare:node",
        include_str!("../../js/cloudflare/node.js"),
    )
}
