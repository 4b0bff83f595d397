//! One Worker's requests in flight through this router, on any node: what
//! tells a lone request from one of a busy Worker when the fleet places it
//! (`Fleet::pick`). Kept across route and fleet snapshots: the router's
//! per-Worker slot holds it, and each request's `InFlight` guard too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::thread_spread::ThreadSpread;

/// A Worker's requests in flight.
#[derive(Debug, Default)]
pub struct WorkerLoad {
    in_flight: AtomicU64,
    /// Whether this router has sent the Worker's standby prewarm
    /// (`proxy/standby.rs`).
    standby_sent: AtomicBool,
    /// Its connections per engine thread of an in-process node
    /// (`thread_spread.rs`).
    spread: ThreadSpread,
}

impl WorkerLoad {
    /// The Worker's requests in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// One more request in flight.
    pub(crate) fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// One request fewer in flight.
    pub(crate) fn ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Its connections per engine thread (`thread_spread.rs`).
    pub fn spread(&self) -> &ThreadSpread {
        &self.spread
    }

    /// True once, for the caller that is to send the Worker's standby
    /// prewarm; false ever after.
    pub(crate) fn claim_standby(&self) -> bool {
        !self.standby_sent.load(Ordering::Relaxed)
            && !self.standby_sent.swap(true, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standby_is_claimed_once() {
        let load = WorkerLoad::default();
        assert!(load.claim_standby());
        assert!(!load.claim_standby());
        assert!(!load.claim_standby());
    }
}
