//! [`Pool`]: who may run an expensive Web Crypto job next (RSA key
//! generation, PBKDF2), shared out per namespace, then per Worker. Engine
//! mechanics (the engine's cores shared fairly), below the core: the
//! engine makes one pool for all its threads, the jobs are `isolane-web`'s
//! (`crypto/offload.rs`), which reaches the pool through the core's door
//! (`api::offload`, `HostState::offload_pool`).
//!
//! Expected flow: a job asks [`Pool::admit`] with its [`Tenant`] and waits
//! for a [`Permit`]; the permit is the job's slot and goes back when dropped
//! (when the job's work returns), which admits the next job.
//!
//! Guarantees:
//! - at most `slots` jobs run at once in the engine (one per core);
//! - one namespace runs at most `per_namespace` of them (half the slots), so
//!   while one namespace floods the pool another still finds a slot free at
//!   once, unless two other namespaces already fill theirs;
//! - when jobs wait, namespaces take turns (round robin over the namespaces
//!   with waiting jobs), and within a namespace its Workers take turns: a
//!   job waits behind at most one job of each other namespace (and of each
//!   other Worker of its own), never behind a flood's whole queue.
//!
//! Assumptions: each isolate has at most one job waiting or running at a
//! time (`offload.rs`), so the queues are bounded by the live isolates.
//!
//! Caveats: a job cannot be preempted; how long it holds its slot is bounded
//! by its request's CPU limit (RSA key generation stops there, `aws_lc.rs`)
//! or by the size of one call (PBKDF2, `ops.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// Who a job is for: its Worker's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub namespace: Arc<str>,
    pub worker: Arc<str>,
}

impl Tenant {
    /// The tenant of a Worker id, `namespace/name` (an id without a `/` is a
    /// namespace of its own).
    pub fn of(worker_id: &str) -> Self {
        let (namespace, worker) = worker_id.split_once('/').unwrap_or((worker_id, ""));
        Self {
            namespace: namespace.into(),
            worker: worker.into(),
        }
    }
}

/// The engine's pool of slots for expensive jobs. Cheap to clone; every
/// clone is the same pool.
#[derive(Clone)]
pub struct Pool {
    state: Arc<Mutex<State>>,
}

/// A running job's slot: dropping it admits the next job.
pub struct Permit {
    state: Arc<Mutex<State>>,
    namespace: Arc<str>,
}

struct State {
    slots: usize,
    per_namespace: usize,
    running: usize,
    /// Namespaces with waiting jobs, in the order they take turns.
    turns: VecDeque<Arc<str>>,
    namespaces: HashMap<Arc<str>, Namespace>,
}

#[derive(Default)]
struct Namespace {
    running: usize,
    /// Workers with waiting jobs, in the order they take turns, each with
    /// its jobs in arrival order.
    workers: VecDeque<(Arc<str>, VecDeque<oneshot::Sender<Permit>>)>,
}

// === impl Pool ===

impl Pool {
    /// A pool of `slots` (at least one), of which one namespace may hold
    /// `per_namespace` (at least one, at most `slots`).
    pub fn new(slots: usize, per_namespace: usize) -> Self {
        let slots = slots.max(1);
        Self {
            state: Arc::new(Mutex::new(State {
                slots,
                per_namespace: per_namespace.clamp(1, slots),
                running: 0,
                turns: VecDeque::new(),
                namespaces: HashMap::new(),
            })),
        }
    }

    /// The engine's pool: one slot per core, at least two (so that a second
    /// namespace always has one), half of them for any one namespace.
    pub fn for_cores() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let slots = cores.max(2);
        Self::new(slots, slots / 2)
    }

    /// Waits for a slot for `tenant`'s job. Dropping the future gives up the
    /// place in the queue.
    pub async fn admit(&self, tenant: &Tenant) -> Permit {
        loop {
            let receiver = {
                let mut state = lock(&self.state);
                if state.may_start(&tenant.namespace) {
                    return self.start(&mut state, tenant.namespace.clone());
                }
                let (sender, receiver) = oneshot::channel();
                state.enqueue(tenant, sender);
                receiver
            };
            // The pool drops a waiter's sender unsent only when the
            // receiver is gone, so this is `Ok`; if that ever changed, a
            // slot must not be lost: ask again.
            if let Ok(permit) = receiver.await {
                return permit;
            }
        }
    }

    fn start(&self, state: &mut State, namespace: Arc<str>) -> Permit {
        state.running += 1;
        state
            .namespaces
            .entry(namespace.clone())
            .or_default()
            .running += 1;
        Permit {
            state: self.state.clone(),
            namespace,
        }
    }

    /// Admits waiting jobs while there are free slots they may take. The
    /// permits are sent after the lock is released (a permit whose waiter
    /// left is dropped there, which frees its slot again).
    fn dispatch(&self, mut state: MutexGuard<'_, State>) {
        let mut admitted = Vec::new();
        while let Some((namespace, waiter)) = state.next_waiter() {
            let permit = self.start(&mut state, namespace);
            admitted.push((waiter, permit));
        }
        drop(state);
        for (waiter, permit) in admitted {
            // A waiter that left drops the permit it was sent: released.
            let _ = waiter.send(permit);
        }
    }

    /// Jobs running and waiting, per namespace (for tests).
    #[cfg(test)]
    fn load(&self, namespace: &str) -> (usize, usize) {
        let state = lock(&self.state);
        state.namespaces.get(namespace).map_or((0, 0), |ns| {
            let waiting = ns.workers.iter().map(|(_, q)| q.len()).sum();
            (ns.running, waiting)
        })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        state.running = state.running.saturating_sub(1);
        if let Some(ns) = state.namespaces.get_mut(&self.namespace) {
            ns.running = ns.running.saturating_sub(1);
            if ns.running == 0 && ns.workers.is_empty() {
                state.namespaces.remove(&self.namespace);
            }
        }
        let pool = Pool {
            state: self.state.clone(),
        };
        pool.dispatch(state);
    }
}

/// The state is consistent after every step (no step can panic half-way),
/// so a poisoned lock is still usable.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

// === impl State ===

impl State {
    /// Whether a job of `namespace` may start now: a slot is free, the
    /// namespace is under its share, and it has no job waiting already.
    fn may_start(&self, namespace: &str) -> bool {
        let ns = self.namespaces.get(namespace);
        self.running < self.slots
            && ns.is_none_or(|ns| ns.running < self.per_namespace && ns.workers.is_empty())
    }

    fn enqueue(&mut self, tenant: &Tenant, waiter: oneshot::Sender<Permit>) {
        let ns = self.namespaces.entry(tenant.namespace.clone()).or_default();
        if ns.workers.is_empty() {
            self.turns.push_back(tenant.namespace.clone());
        }
        match ns.workers.iter_mut().find(|(w, _)| *w == tenant.worker) {
            Some((_, queue)) => queue.push_back(waiter),
            None => ns
                .workers
                .push_back((tenant.worker.clone(), VecDeque::from([waiter]))),
        }
    }

    /// The next job to admit, if a slot is free: the first namespace in turn
    /// that is under its share, then its first Worker in turn. Both go to
    /// the back of their turns. Waiters that left are dropped on the way.
    fn next_waiter(&mut self) -> Option<(Arc<str>, oneshot::Sender<Permit>)> {
        while self.running < self.slots {
            let per_namespace = self.per_namespace;
            let position = self.turns.iter().position(|name| {
                self.namespaces
                    .get(name)
                    .is_some_and(|ns| ns.running < per_namespace)
            })?;
            let name = self.turns.remove(position)?;
            let ns = self.namespaces.get_mut(&name)?;
            let waiter = ns.pop_waiter();
            if !ns.workers.is_empty() {
                self.turns.push_back(name.clone());
            } else if ns.running == 0 && waiter.is_none() {
                self.namespaces.remove(&name);
            }
            if let Some(waiter) = waiter {
                return Some((name, waiter));
            }
        }
        None
    }
}

impl Namespace {
    /// The first live waiter of the Worker whose turn it is; that Worker
    /// goes to the back of the turns if it has more.
    fn pop_waiter(&mut self) -> Option<oneshot::Sender<Permit>> {
        while let Some((worker, mut queue)) = self.workers.pop_front() {
            while let Some(waiter) = queue.pop_front() {
                if waiter.is_closed() {
                    continue;
                }
                if !queue.is_empty() {
                    self.workers.push_back((worker, queue));
                }
                return Some(waiter);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
