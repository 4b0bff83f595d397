//! Prewarming: a request carrying a [`Prewarm`] extension makes the engine
//! load the worker's revision into the thread's pool (snapshot → context →
//! script, top-level code included, under the worker's limits) and answer a
//! bodiless 204 without calling any handler. A router sends one to the node
//! and thread that will serve a revision before it shifts traffic there, so
//! the shift itself causes no cold start.

/// Marks a request as a prewarm (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prewarm;
