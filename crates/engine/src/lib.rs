//! The V8 engine: isolates in per-core thread-pinned pools, Web APIs and limits.
//! This is the only crate in the workspace allowed to use `unsafe`.
#![allow(unsafe_code)]

/// The version of V8 this engine links.
pub fn v8_version() -> &'static str {
    v8::V8::get_version()
}
