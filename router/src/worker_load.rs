//! One Worker's requests in flight through this router, on any node: what
//! tells a lone request from one of a busy Worker when the fleet places it
//! (`Fleet::pick`). Kept across route and fleet snapshots: the router's
//! per-Worker slot holds it, and each request's `InFlight` guard too.

use std::sync::atomic::{AtomicU64, Ordering};

/// A Worker's requests in flight.
#[derive(Debug, Default)]
pub struct WorkerLoad(AtomicU64);

impl WorkerLoad {
    /// The Worker's requests in flight now.
    pub fn in_flight(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// One more request in flight.
    pub(crate) fn started(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// One request fewer in flight.
    pub(crate) fn ended(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
