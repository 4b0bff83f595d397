//! Readiness made of parts: the process is ready when every registered part says so.
//!
//! Each component registers a [`Part`] (initially not ready) and flips it as it
//! initialises; `/readyz` answers 200 only when all are ready. In the operator
//! the parts are leader election (it has observed the Lease at least once) and
//! the controller (its watch streams have listed everything, or it is a standby
//! and has nothing to sync).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The readiness of the whole process.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    parts: Arc<Mutex<BTreeMap<&'static str, bool>>>,
}

/// One part of the process's readiness.
#[derive(Clone, Debug)]
pub struct Part {
    name: &'static str,
    parts: Arc<Mutex<BTreeMap<&'static str, bool>>>,
}

impl Readiness {
    /// Registers a part, not ready yet.
    pub fn part(&self, name: &'static str) -> Part {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, false);
        Part {
            name,
            parts: Arc::clone(&self.parts),
        }
    }

    /// True when every registered part is ready.
    pub fn is_ready(&self) -> bool {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .all(|ready| *ready)
    }

    /// The parts that are not ready, for the /readyz body.
    pub fn pending(&self) -> Vec<&'static str> {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, ready)| !**ready)
            .map(|(name, _)| *name)
            .collect()
    }
}

impl Part {
    /// Sets this part's readiness.
    pub fn set(&self, ready: bool) {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.name, ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_part_is() {
        let readiness = Readiness::default();
        assert!(readiness.is_ready(), "nothing registered, nothing pending");
        let a = readiness.part("a");
        let b = readiness.part("b");
        assert!(!readiness.is_ready());
        a.set(true);
        assert_eq!(readiness.pending(), vec!["b"]);
        b.set(true);
        assert!(readiness.is_ready());
        a.set(false);
        assert!(!readiness.is_ready());
    }
}
