//! Prewarming: a [`crate::Work::Prewarm`] makes the engine
//! load the worker's revision into the thread's pool (snapshot → context →
//! script, top-level code included, under the worker's limits) and answer a
//! bodiless 204 without calling any handler.
//!
//! A router sends a [`Prewarm::Load`] to the node and thread that will serve
//! a revision before it shifts traffic there, so the shift itself causes no
//! cold start. It sends a [`Prewarm::Standby`] to the node a Worker's
//! requests would spill to, the first time it sees the Worker with two
//! requests in flight, so that a spill finds it warm: that one loads only
//! when the thread's warm pool has room for it without evicting any
//! isolate, so it can never push a warm neighbour out.

/// How a prewarm loads (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prewarm {
    /// Load the revision, evicting what the pool's policy picks if full.
    #[default]
    Load,
    /// Load it only if the warm pool has room without evicting anything.
    Standby,
}

/// What a prewarm did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrewarmOutcome {
    /// The revision was warm on the thread already.
    Warm,
    /// It was compiled and is warm now.
    Compiled,
    /// A standby found no room (before loading, or once loaded: then the
    /// isolate was dropped).
    NoRoom,
}

impl PrewarmOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            PrewarmOutcome::Warm => "warm",
            PrewarmOutcome::Compiled => "compiled",
            PrewarmOutcome::NoRoom => "no_room",
        }
    }
}
