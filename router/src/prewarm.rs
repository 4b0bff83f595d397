//! The prewarm gate: a Worker's new split takes effect on this router only
//! once every revision it newly sends traffic to has been compiled on the
//! node and thread that will serve it (a prewarm request, answered 204
//! without running a handler), so a rollout or a rollback causes no cold
//! start. Until then the Worker keeps its current split; everything else
//! about it (routes, affinity, overrides) changes at once.
//!
//! A prewarm that fails or runs out of time (the request timeout) opens the
//! gate anyway, counted in `isolane_router_prewarms_total{outcome}`: a
//! rollout is delayed by a slow node, never stopped by one. New Workers,
//! and every Worker while no node is live, are not gated: there is no warm
//! split to keep.

use std::collections::HashSet;

use crate::routes::{RoutableWorker, RouteTable};

/// Marks a request (in process only) as a prewarm.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrewarmRequest {
    /// A standby (`proxy/prewarming.rs`): sent to where the Worker's requests
    /// would spill to, loaded there only if it fits without evicting.
    pub standby: bool,
}

/// A worker id and revision.
pub type Target = (String, String);

/// What the gate remembers between route-table builds.
#[derive(Debug, Default)]
pub struct Gate {
    /// Revisions prewarmed (or tried) already.
    warmed: HashSet<Target>,
    /// Prewarms under way.
    pending: HashSet<Target>,
    /// The newest Workers the watch delivered, to publish again when a
    /// prewarm ends.
    latest: Vec<RoutableWorker>,
}

impl Gate {
    /// The Workers to publish for `workers`, and the prewarms to start. A
    /// Worker routable in `current` whose new split sends traffic to a
    /// revision that is neither serving there nor warmed keeps its current
    /// shares (when `gate` is on).
    pub fn admit(
        &mut self,
        workers: Vec<RoutableWorker>,
        current: &RouteTable,
        gate: bool,
    ) -> (Vec<RoutableWorker>, Vec<Target>) {
        self.latest = workers.clone();
        // Forget revisions no Worker keeps any more.
        let serving: HashSet<Target> = workers
            .iter()
            .flat_map(|w| {
                let id = w.worker_id();
                w.split.serving().map(move |r| (id.clone(), r.to_owned()))
            })
            .collect();
        self.warmed.retain(|target| serving.contains(target));
        let mut start = Vec::new();
        let publish = workers
            .into_iter()
            .map(|worker| {
                let id = worker.worker_id();
                let Some(old) = current.backend(&id).filter(|_| gate) else {
                    return worker;
                };
                let cold: Vec<Target> = worker
                    .split
                    .serving()
                    .filter(|r| !old.split.serving().any(|s| s == *r))
                    .map(|r| (id.clone(), r.to_owned()))
                    .filter(|target| !self.warmed.contains(target))
                    .collect();
                if cold.is_empty() {
                    return worker;
                }
                for target in cold {
                    if self.pending.insert(target.clone()) {
                        start.push(target);
                    }
                }
                let split = worker.split.with_shares_of(&old.split);
                RoutableWorker { split, ..worker }
            })
            .collect();
        (publish, start)
    }

    /// A prewarm ended: its revision may take traffic. Returns the Workers
    /// to publish again.
    pub fn done(&mut self, target: Target) -> Vec<RoutableWorker> {
        self.pending.remove(&target);
        self.warmed.insert(target);
        self.latest.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::metrics::WorkerSlot;
    use crate::split::Split;

    fn worker(revision: &str) -> RoutableWorker {
        RoutableWorker {
            claim: isolane_worker::Claim {
                worker: isolane_worker::WorkerKey::new("ns", "w"),
                since: None,
                routes: vec![isolane_worker::Route::new("w.test", "/")],
            },
            split: Split::single(revision),
            triggers: None,
        }
    }

    fn table(workers: Vec<RoutableWorker>) -> RouteTable {
        RouteTable::build(workers, |_| Arc::new(WorkerSlot::default())).0
    }

    fn serving(workers: &[RoutableWorker]) -> Vec<&str> {
        workers[0].split.serving().collect()
    }

    #[test]
    fn a_new_revision_waits_for_its_prewarm() {
        let mut gate = Gate::default();
        // A new Worker is published at once.
        let (publish, start) = gate.admit(vec![worker("r1")], &RouteTable::default(), true);
        assert_eq!(serving(&publish), ["r1"]);
        assert!(start.is_empty());
        let current = table(publish);
        // r2 replaces r1: r1 keeps serving, one prewarm starts.
        let (publish, start) = gate.admit(vec![worker("r2")], &current, true);
        assert_eq!(serving(&publish), ["r1"]);
        assert_eq!(start, [("ns/w".to_owned(), "r2".to_owned())]);
        // The watch delivers the same again: no second prewarm.
        let (publish, again) = gate.admit(vec![worker("r2")], &current, true);
        assert_eq!(serving(&publish), ["r1"]);
        assert!(again.is_empty());
        // Warm: r2 takes over.
        let latest = gate.done(("ns/w".into(), "r2".into()));
        let (publish, start) = gate.admit(latest, &current, true);
        assert_eq!(serving(&publish), ["r2"]);
        assert!(start.is_empty());
        // The gate off (no live node): at once.
        let (publish, start) = gate.admit(vec![worker("r3")], &table(publish), false);
        assert_eq!(serving(&publish), ["r3"]);
        assert!(start.is_empty());
    }
}
