//! `structuredClone` (`js/18_structured_clone.js`): JavaScript only, on the
//! core's `host.structuredClone` (V8's ValueSerializer round trip, in the
//! core's `serializer` unit beside `serialize` and `deserialize`, which
//! Durable Objects' storage, RPC, queues and hibernatable WebSockets'
//! attachments use as their wire). `MessagePort` clones with it
//! (`internal.structuredClone`).

use isolane_engine::api::Unit;

pub(crate) fn unit() -> Unit {
    Unit::new("structured_clone").js(&["18_structured_clone.js"])
}
