//! Hostile memory tests that also bound the process's resident memory
//! (`tests/engine/hostile.rs`, `hostile_memory.rs`, `hostile_transient.rs`,
//! `hostile_wasm.rs`,
//! `hostile_wasm_tables.rs`, `hostile_wasm_shapes.rs`, `kv_hostile.rs`), in a
//! binary of their own: in the
//! `engine` binary, its other tests' attacks (zlib and brotli bombs,
//! hoarders, key generation) grow the same process at the same time, and
//! an RSS bound there measures them too (once seen: 176 MiB against 160).

// Helpers outside `#[test]` functions unwrap too; this is test code.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

#[path = "engine/support.rs"]
mod support;

#[path = "engine/peak_rss.rs"]
mod peak_rss;

#[path = "engine/hostile.rs"]
mod hostile;
#[path = "engine/hostile_memory.rs"]
mod hostile_memory;
#[path = "engine/hostile_transient.rs"]
mod hostile_transient;
#[path = "engine/hostile_wasm.rs"]
mod hostile_wasm;
#[path = "engine/hostile_wasm_shapes.rs"]
mod hostile_wasm_shapes;
#[path = "engine/hostile_wasm_tables.rs"]
mod hostile_wasm_tables;
#[path = "engine/kv_hostile.rs"]
mod kv_hostile;
