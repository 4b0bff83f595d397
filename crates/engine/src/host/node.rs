//! Node's built-in modules, one unit each: the module's JavaScript
//! (`js/node/<name>.js`, loaded lazily, see `modules/node.rs`) and the host
//! functions it calls. Which ones a Worker may import is its compatibility
//! settings' business (docs/nodejs.md).

mod buffer;

use super::unit::Unit;

/// `node:buffer`: `Buffer` and its encodings.
pub(super) fn buffer() -> Unit {
    Unit::new("node:buffer")
        .node_module("buffer", include_str!("../../js/node/buffer.js"))
        .function("bufferFromString", buffer::from_string)
        .function("bufferToString", buffer::to_string)
}

