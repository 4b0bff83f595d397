//! Every family of the engine's units, in order: what the binaries
//! (`isolane-node`, `isolane dev`, the benchmarks) and the engine's tests
//! hand `EngineConfig::families` to run Workers with the whole platform.
//!
//! The engine's core (`isolane-engine`) names no API family; each API
//! crate registers its units with it through an [`isolane_engine::Family`]
//! (docs/adr/0002-engine-crates.md). This crate only lists them.
#![forbid(unsafe_code)]

use isolane_engine::Family;

/// Every API family, in the order their units are registered (after the
/// core's, before its `finalize`).
pub fn families() -> Vec<Family> {
    vec![
        isolane_web::family(),
        isolane_bindings::family(),
        isolane_nodejs::family(),
    ]
}
