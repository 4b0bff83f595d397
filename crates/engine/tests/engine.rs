//! The engine against real V8: one test binary (V8 links are expensive), one
//! module per concern under `tests/engine/`.

#[path = "engine/support.rs"]
mod support;

#[path = "engine/basics.rs"]
mod basics;
