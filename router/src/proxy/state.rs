//! The state the watches write and every request reads: the route table
//! (from the Worker watch, through the prewarm gate) and the fleet (from the
//! Lease watch), each an immutable snapshot a request loads without a lock,
//! with the inputs they are built from. The per-request trip (`trip.rs`)
//! only reads it: [`Proxy::routes`], [`Proxy::fleet`], and
//! [`Proxy::fleet_changed`] while it waits for a node.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use arc_swap::ArcSwap;
use isolane_membership::NodeMember;
use isolane_worker::{Claim, HostOwner};
use tracing::{debug, info, warn};

use super::Proxy;
use crate::fleet::{Fleet, FleetBuilder, Pick, WorkerLoad, placement_moves};
use crate::prewarm::{Gate, Target};
use crate::routes::{RoutableWorker, RouteTable};
use crate::thread_spread::SpreadHold;

/// What the watches write.
#[derive(Debug)]
pub(super) struct State {
    pub(super) routes: ArcSwap<RouteTable>,
    fleet: ArcSwap<Fleet>,
    builder: Mutex<FleetBuilder>,
    /// Bumped after every fleet change, for requests waiting for a node.
    fleet_changes: tokio::sync::watch::Sender<u64>,
    /// Hosts recorded as namespaces' by the operator (`watch::host_owners`).
    /// Written under the gate's lock.
    owners: ArcSwap<Vec<HostOwner>>,
    /// The Workers of the route table now (the cron scheduler reads their
    /// schedules).
    published: ArcSwap<Vec<RoutableWorker>>,
    /// The claims of Workers requests cannot go to yet: they hold routes
    /// all the same (`routes.rs`). Written under the gate's lock.
    claimants: ArcSwap<Vec<Claim>>,
    /// New splits wait for their revisions' prewarms (`prewarm.rs`).
    gate: Mutex<Gate>,
}

impl Default for State {
    /// No routes and no nodes yet.
    fn default() -> Self {
        Self {
            routes: ArcSwap::from_pointee(RouteTable::default()),
            fleet: ArcSwap::from_pointee(Fleet::empty()),
            builder: Mutex::new(FleetBuilder::default()),
            fleet_changes: tokio::sync::watch::Sender::new(0),
            owners: ArcSwap::from_pointee(Vec::new()),
            published: ArcSwap::from_pointee(Vec::new()),
            claimants: ArcSwap::from_pointee(Vec::new()),
            gate: Mutex::new(Gate::default()),
        }
    }
}

impl State {
    /// The prewarm gate, locked (a lock poisoned by a panic is taken over).
    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Proxy {
    /// The current route table.
    pub fn routes(&self) -> Arc<RouteTable> {
        self.inner.state.routes.load_full()
    }

    /// The current fleet.
    pub fn fleet(&self) -> Arc<Fleet> {
        self.inner.state.fleet.load_full()
    }

    /// The thread a new connection whose first request is for `host` and
    /// `path` is served on, by a front end serving on a node's own threads
    /// (`isolane dev`): its Worker's home thread on its first-choice node,
    /// or another thread once the Worker is busy (`thread_spread.rs`), and
    /// the hold that counts the connection there while it is open.
    pub fn steer(&self, host: &str, path: &str) -> Option<(u32, SpreadHold)> {
        let routes = self.inner.state.routes.load();
        let backend = routes.lookup(host, path)?;
        let fleet = self.inner.state.fleet.load();
        let index = fleet.first_choice(&backend.worker_id)?;
        let threads = fleet.node(index)?.member.threads;
        let home = fleet.home_thread(&backend.worker_id)?;
        Some(backend.slot.load().spread().steer(home, threads))
    }

    /// `pick`, or the engine thread of the in-process node this request is
    /// being served on, when its Worker is spread there and runs no long
    /// turns (`thread_spread.rs`): it runs where it was read, no hop.
    pub(super) fn here_if_spread(
        &self,
        worker_id: &str,
        load: &WorkerLoad,
        mut pick: Pick,
    ) -> Pick {
        if let Some(local) = &self.inner.local
            && let Some(here) = isolane_edge::current_runtime().and_then(|i| u32::try_from(i).ok())
            && here != pick.thread
            && load.spread().holds(here)
            && local.may_spread(worker_id.split('/').next().unwrap_or(worker_id))
        {
            pick.thread = here;
        }
        pick
    }

    /// The Workers of the route table now, as published (new splits only
    /// once prewarmed).
    pub fn published(&self) -> Arc<Vec<RoutableWorker>> {
        self.inner.state.published.load_full()
    }

    /// Replaces the route table (and the cron table) with one built from
    /// `workers`; a Worker whose split sends traffic to a revision not warm
    /// yet keeps its current shares until that revision is prewarmed
    /// (`prewarm.rs`).
    pub fn set_workers(&self, workers: Vec<RoutableWorker>) {
        self.set_claims(workers, Vec::new());
    }

    /// [`Proxy::set_workers`], with the claims of the Workers requests
    /// cannot go to yet (not Ready, or no revision): routes they hold are
    /// served to nobody.
    pub fn set_claims(&self, workers: Vec<RoutableWorker>, claimants: Vec<Claim>) {
        let gate = !self.fleet().is_empty() && tokio::runtime::Handle::try_current().is_ok();
        let mut state = self.inner.state.gate();
        self.inner.state.claimants.store(Arc::new(claimants));
        let (publish, start) = state.admit(workers, &self.routes(), gate);
        // Published under the gate's lock, so a prewarm ending meanwhile
        // cannot publish an older list after this one.
        self.publish(publish);
        drop(state);
        self.start_prewarms(start);
    }

    /// Replaces the host owners the operator recorded, and the route table
    /// with one that honours them.
    pub fn set_owners(&self, owners: Vec<HostOwner>) {
        let state = self.inner.state.gate();
        self.inner.state.owners.store(Arc::new(owners));
        self.publish(self.published().as_ref().clone());
        drop(state);
    }

    /// Spawns one task per prewarm, each publishing the table again when done.
    fn start_prewarms(&self, targets: Vec<Target>) {
        for target in targets {
            let proxy = self.clone();
            tokio::spawn(async move {
                let more = proxy.prewarm_then_publish(target).await;
                proxy.start_prewarms(more);
            });
        }
    }

    /// One prewarm, then the table again; returns the prewarms that asks for.
    async fn prewarm_then_publish(&self, target: Target) -> Vec<Target> {
        let (worker_id, revision) = &target;
        let started = Instant::now();
        let outcome = match self.prewarm(worker_id, revision).await {
            Ok(()) => {
                info!(worker.id = %worker_id, %revision, took_ms = started.elapsed().as_millis(), "revision prewarmed; it takes traffic now");
                "ok"
            }
            Err(error) => {
                warn!(worker.id = %worker_id, %revision, %error, "prewarm failed; the revision takes traffic anyway");
                "failed"
            }
        };
        self.inner.metrics.prewarm(outcome);
        let mut state = self.inner.state.gate();
        let latest = state.done(target);
        let gate = !self.fleet().is_empty();
        let (publish, start) = state.admit(latest, &self.routes(), gate);
        self.publish(publish);
        start
    }

    fn publish(&self, workers: Vec<RoutableWorker>) {
        self.inner.state.published.store(Arc::new(workers.clone()));
        let metrics = &self.inner.metrics;
        let claimants = self.inner.state.claimants.load();
        let owners = self.inner.state.owners.load();
        let (table, conflicts) = RouteTable::build_with(
            workers,
            &claimants,
            &self.inner.reservations,
            &owners,
            |id| metrics.workers.slot(id),
        );
        for c in &conflicts {
            debug!(
                worker.id = %c.worker, route = %c.route, holder = %c.holder,
                "route not admitted; not served for this worker"
            );
        }
        metrics.route_conflicts.set(conflicts.len() as i64);
        metrics.routable_workers.set(table.len() as i64);
        let routable = table
            .backends()
            .iter()
            .map(|b| b.worker_id.as_str())
            .collect();
        metrics.workers.retain(&routable);
        metrics.workers.retain_revisions(|worker, revision| {
            table
                .backend(worker)
                .is_some_and(|backend| backend.split.keeps(revision))
        });
        self.inner.state.routes.store(Arc::new(table));
    }

    /// Replaces the fleet with `members` (live, non-draining); returns whether
    /// the nodes changed.
    pub fn set_members(&self, members: Vec<NodeMember>) -> bool {
        // A restarted node's crash record judges the losses on it.
        for member in &members {
            if let Some(crash) = &member.crash {
                let lifted =
                    self.inner
                        .losses
                        .crash(&member.name, crash, std::time::Instant::now());
                if !lifted.is_empty() {
                    self.inner
                        .metrics
                        .quarantines_lifted
                        .inc_by(lifted.len() as u64);
                    info!(
                        node = %member.name, workers = ?lifted,
                        "a crash record shows these workers were not in a turn; quarantine lifted"
                    );
                }
            }
        }
        let mut builder = self
            .inner
            .state
            .builder
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(fleet) = builder.update(members) else {
            return false;
        };
        let before = self.inner.state.fleet.load_full();
        let routes = self.inner.state.routes.load();
        let moved = placement_moves(
            &before,
            &fleet,
            routes.backends().iter().map(|b| b.worker_id.as_str()),
        );
        let metrics = &self.inner.metrics;
        metrics.placement_moves.inc_by(moved);
        metrics.live_nodes.set(fleet.len() as i64);
        info!(
            nodes = ?fleet.nodes().iter().map(|n| n.member.name.as_str()).collect::<Vec<_>>(),
            moved_workers = moved,
            "fleet changed"
        );
        self.inner.state.fleet.store(Arc::new(fleet));
        self.inner
            .state
            .fleet_changes
            .send_modify(|n| *n = n.wrapping_add(1));
        true
    }

    /// Waits until the fleet is no longer `seen`, or until `until`; returns
    /// whether it changed. Only a request that found no node subscribes to
    /// changes, so the others touch nothing shared for it.
    pub(super) async fn fleet_changed(&self, seen: &Fleet, until: tokio::time::Instant) -> bool {
        if until <= tokio::time::Instant::now() {
            return false;
        }
        // Subscribe before comparing, so a change in between wakes the wait
        // (`set_members` stores the fleet, then bumps the counter).
        let mut changes = self.inner.state.fleet_changes.subscribe();
        let metrics = &self.inner.metrics;
        let _waiting = metrics.node_waiting();
        let changed = self.inner.state.fleet.load().generation() != seen.generation()
            || matches!(
                tokio::time::timeout_at(until, changes.changed()).await,
                Ok(Ok(()))
            );
        metrics.node_wait(if changed { "node" } else { "timeout" });
        changed
    }
}
