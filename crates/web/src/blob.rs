//! Blob and File (`js/09_blob.js`, the File API kept in memory): JavaScript
//! only. Their bytes cross to the host through the encoding unit's
//! `utf8Encode`/`utf8Decode`; the core's bodies, `structuredClone` and the
//! bindings' RPC reach them through `internal.isBlob`, `internal.blobBytes`
//! and `internal.newBlob` when a body is made or read, never at load time.

use isolane_engine::api::Unit;

pub(crate) fn unit() -> Unit {
    Unit::new("blob").js(&["09_blob.js"])
}
