//! Who calls whom through service bindings, so that a Worker made or
//! deleted re-reconciles the Workers bound to it (their `ServicesBound`
//! condition changes), without scanning every Worker.

use std::collections::{BTreeSet, HashMap};

use isolane_crds::WorkerSpec;

use crate::routes::WorkerKey;

/// The Workers a spec's service bindings name, in `namespace` (a service
/// binding never names another namespace: the webhook refuses it).
pub fn targets(namespace: &str, spec: &WorkerSpec) -> Vec<WorkerKey> {
    let mut targets: Vec<WorkerKey> = spec
        .bindings
        .iter()
        .filter_map(|binding| binding.service.as_ref())
        .map(|service| WorkerKey::new(namespace, &service.name))
        .collect();
    targets.sort();
    targets.dedup();
    targets
}

/// For each Worker named by a service binding, the Workers whose bindings
/// name it.
#[derive(Debug, Default)]
pub struct Callers(HashMap<WorkerKey, BTreeSet<WorkerKey>>);

impl Callers {
    /// Records that `caller` names each of `targets`.
    pub fn add(&mut self, caller: &WorkerKey, targets: &[WorkerKey]) {
        for target in targets {
            self.0
                .entry(target.clone())
                .or_default()
                .insert(caller.clone());
        }
    }

    /// Forgets that `caller` names each of `targets`.
    pub fn forget(&mut self, caller: &WorkerKey, targets: &[WorkerKey]) {
        for target in targets {
            if let Some(callers) = self.0.get_mut(target) {
                callers.remove(caller);
                if callers.is_empty() {
                    self.0.remove(target);
                }
            }
        }
    }

    /// The Workers whose service bindings name `target`.
    pub fn of(&self, target: &WorkerKey) -> impl Iterator<Item = &WorkerKey> {
        self.0.get(target).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_are_kept_per_target_and_forgotten() {
        let (gateway, admin, auth) = (
            WorkerKey::new("ns", "gateway"),
            WorkerKey::new("ns", "admin"),
            WorkerKey::new("ns", "auth"),
        );
        let mut callers = Callers::default();
        callers.add(&gateway, std::slice::from_ref(&auth));
        callers.add(&admin, std::slice::from_ref(&auth));
        let of: Vec<_> = callers.of(&auth).cloned().collect();
        assert_eq!(of, vec![admin.clone(), gateway.clone()]);
        callers.forget(&gateway, std::slice::from_ref(&auth));
        callers.forget(&admin, std::slice::from_ref(&auth));
        assert_eq!(callers.of(&auth).count(), 0);
        assert!(callers.0.is_empty());
    }
}
