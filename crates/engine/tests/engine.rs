//! The engine against real V8: one test binary (V8 links are expensive), one
//! module per concern under `tests/engine/`.

// Helpers outside `#[test]` functions unwrap too; this is test code.
#![allow(clippy::unwrap_used)]

#[path = "engine/support.rs"]
mod support;

#[path = "engine/basics.rs"]
mod basics;
#[path = "engine/cache.rs"]
mod cache;
#[path = "engine/crypto.rs"]
mod crypto;
#[path = "engine/egress.rs"]
mod egress;
#[path = "engine/fairness.rs"]
mod fairness;
#[path = "engine/hostile.rs"]
mod hostile;
#[path = "engine/limits.rs"]
mod limits;
#[path = "engine/pool_modes.rs"]
mod pool_modes;
#[path = "engine/streaming.rs"]
mod streaming;
#[path = "engine/url.rs"]
mod url;
