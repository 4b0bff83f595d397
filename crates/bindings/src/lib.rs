//! Cloudflare's bindings for the Isolane engine: what a Worker's `env`
//! reaches beyond the Web platform, and the `cloudflare:` built-in modules.
//! Today: Workers KV (`env.NAME` for a KV namespace binding: `kv.rs`,
//! `js/27_kv.js`), `cloudflare:sockets` (`connect()`, outbound TCP:
//! `tcp.rs`), `cloudflare:workers` (the base classes a Worker extends) and
//! `cloudflare:node` (`httpServerHandler`), service bindings
//! (`env.SVC.fetch` and JS RPC, `env.SVC.method(...)`, run on the
//! caller's thread: `service.rs`, `rpc.rs`, `js/30_service.js`,
//! `js/31_rpc.js`, `js/32_rpc_target.js`; functions and `RpcTarget`s
//! passed by reference: `stub.rs`, `js/31_rpc_stub.js`), SQLite-backed
//! Durable Objects' `ctx.storage.sql` (`sql.rs`, `js/34_durable_sql.js`),
//! Cloudflare Queues' producer and consumer batch (`queue.rs`,
//! `js/35_queue.js`), D1 databases (`d1.rs`, `js/36_d1.js`), Cloudflare's
//! Images binding (`images.rs`, `js/37_images.js`), R2 buckets (`r2.rs`,
//! `js/38_r2.js`), Worker Loader bindings (Dynamic Workers: `loader.rs`,
//! `js/39_loader.js`), Workflows (`workflow.rs`, `js/40_workflow.js`),
//! and Durable Objects' API (`object.rs`, `js/28_durable_object.js`) over
//! the core's mechanics of objects (`isolane_engine::api::object`).
//!
//! The main item is [`family`]: the units, in order, that a binary hands
//! the engine (`EngineConfig::families`). It depends on the core only
//! through its door, `isolane_engine::api`.
#![forbid(unsafe_code)]

#[macro_use]
extern crate isolane_engine;

mod assets;
mod d1;
mod dispatch;
mod images;
mod kv;
mod loader;
mod object;
mod queue;
mod r2;
mod rpc;
mod service;
mod sql;
mod stub;
mod tcp;
mod workflow;

use isolane_engine::Family;
use isolane_engine::api::Unit;

pub use d1::D1_CLASS;

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

/// `cloudflare:workers`: `WorkerEntrypoint`, `DurableObject`,
/// `WorkflowEntrypoint`, `RpcTarget`. Loaded like Node's built-ins, lazily
/// and outside the snapshot (the engine's `modules/node.rs`), whatever the
/// Worker's compatibility settings, as in workerd.
fn workers() -> Unit {
    Unit::new("cloudflare:workers").node_module(
        "cloudflare:workers",
        include_str!("../js/cloudflare/workers.js"),
    )
}

/// `cloudflare:node`: `httpServerHandler`, which serves the Worker's
/// requests with a `node:http` server (`isolane-nodejs`'s); loaded as
/// `cloudflare:workers` is.
fn node() -> Unit {
    Unit::new("cloudflare:node")
        .node_module("cloudflare:node", include_str!("../js/cloudflare/node.js"))
}

/// The bindings as the engine registers them: their units, in order
/// (which host functions come first), and their runtime JavaScript.
pub fn family() -> Family {
    Family {
        name: "bindings",
        fingerprint: env!("ISOLANE_BINDINGS_FINGERPRINT"),
        units,
        js: RUNTIME_JS,
    }
}

fn units() -> Vec<Unit> {
    vec![
        kv::unit(),
        object::unit(),
        workers(),
        node(),
        tcp::unit(),
        service::unit(),
        assets::unit(),
        sql::unit(),
        queue::unit(),
        d1::unit(),
        images::unit(),
        loader::unit(),
        r2::unit(),
        workflow::unit(),
    ]
}
