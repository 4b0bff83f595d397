//! Readiness: ready once every component says it is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The set of components whose readiness makes up the process's `/ready`.
///
/// Cheap to clone (all clones share one set). Each component
/// [`register`](Readiness::register)s once, at startup, before the admin
/// server can be asked, and keeps the [`ReadyHandle`] to report through. The
/// process is ready when every registered component is: none registered
/// means ready.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    components: Arc<Mutex<Vec<Component>>>,
}

#[derive(Debug)]
struct Component {
    name: String,
    ready: Arc<AtomicBool>,
}

/// One component's say in [`Readiness`]; starts not ready.
#[derive(Clone, Debug)]
pub struct ReadyHandle {
    ready: Arc<AtomicBool>,
}

// === impl Readiness ===

impl Readiness {
    /// An empty set: ready until a component registers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a component called `name`, not ready yet.
    ///
    /// Registering the same name twice adds a second component of that name:
    /// both must turn ready.
    pub fn register(&self, name: impl Into<String>) -> ReadyHandle {
        let ready = Arc::new(AtomicBool::new(false));
        self.lock().push(Component {
            name: name.into(),
            ready: ready.clone(),
        });
        ReadyHandle { ready }
    }

    /// Whether every registered component is ready.
    pub fn is_ready(&self) -> bool {
        self.lock().iter().all(|c| c.ready.load(Ordering::Acquire))
    }

    /// The names of the components that are not ready, in registration order.
    pub fn not_ready(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|c| !c.ready.load(Ordering::Acquire))
            .map(|c| c.name.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Component>> {
        // The list is only ever pushed to: a panic elsewhere cannot leave it
        // half-updated, so a poisoned lock is still good.
        self.components
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

// === impl ReadyHandle ===

impl ReadyHandle {
    /// The component is ready.
    pub fn set_ready(&self) {
        self.set(true);
    }

    /// The component is (again) not ready, e.g. it lost its watch.
    pub fn set_not_ready(&self) {
        self.set(false);
    }

    /// Sets the component's readiness.
    pub fn set(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// The component's current readiness.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_component_is() {
        let readiness = Readiness::new();
        assert!(readiness.is_ready(), "nothing registered: ready");
        let watch = readiness.register("worker-watch");
        let leases = readiness.clone().register("leases");
        assert!(!readiness.is_ready());
        assert_eq!(readiness.not_ready(), ["worker-watch", "leases"]);
        watch.set_ready();
        assert_eq!(readiness.not_ready(), ["leases"]);
        leases.clone().set_ready();
        assert!(readiness.is_ready());
        watch.set_not_ready();
        assert!(!readiness.is_ready());
        assert_eq!(readiness.not_ready(), ["worker-watch"]);
    }
}
