//! Workflows' runner (docs/workflows.md): a loop that asks the store for
//! the instances due to run (created, woken by a sleep's end, an event, a
//! retry's delay, or left running by a process that stopped) and runs each
//! as an `isolane_engine::Work::WorkflowRun` on the thread its Worker runs
//! on, one run of an instance at a time. A run records how it ended itself
//! (`isolane-bindings`' `js/40_workflow.js`); one that ends otherwise (a
//! limit, an exception outside a step) is recorded here as a failed run,
//! run again after its step's retry delay (`Store::workflow_failed`).
//!
//! In `isolane dev` one loop runs every instance, and sleeps until the next
//! instance is due (a stored wake-up time), a workflow operation of this
//! process or the end of a run it started: an idle `isolane dev` asks the
//! store nothing.
//!
//! On a node, each workflow (a workflow of a namespace: one shard) is run
//! only by its owner node: the first node of its key ([`workflow_key`]) on
//! the ring of the live, non-draining nodes, the ring Durable Objects and
//! queues are owned on (`peers.rs`). Before running it, the owner takes the
//! workflow's owner epoch in the store (`Store::workflow_take`) and fences
//! each claim of due instances with it, so a node that lost the workflow
//! starts no run of it once the new owner took it. An instance its owner
//! was running when it died is due at once for the next owner, which
//! replays it from its step log: steps already stored are not run again.
//! Operations from other nodes (a `create`, a `sendEvent`) are seen within
//! [`CLUSTER_IDLE`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use isolane_engine::{Engine, Work};
use isolane_storage::{Store, StoreError, WorkflowDue, WorkflowError, WorkflowScope};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::BundleIndex;
use crate::alarms::{HeldWorkers, Owner};
use crate::metrics::WorkflowMetrics;
use crate::peers::Peers;
use crate::queues::now_ms;

/// The longest the runner sleeps when nothing is due: a safety net, not
/// how it learns of work (each workflow operation of this process, and each
/// run's end, wakes it; a stored wake-up time is slept until).
const IDLE: Duration = Duration::from_secs(30);

/// The longest a node's loop of one workflow sleeps: operations on other
/// nodes do not wake it.
const CLUSTER_IDLE: Duration = Duration::from_secs(1);

/// How often a node counts the instances of the workflows it owns (the
/// metrics), in [`CLUSTER_IDLE`]s.
const COUNT_EVERY: u32 = 5;

/// Instances asked for at once.
const BATCH: u32 = 64;

/// The placement key workflow `scope` is owned by on the ring.
pub fn workflow_key(scope: &WorkflowScope) -> String {
    format!("workflow/{}/{}", scope.namespace, scope.workflow)
}

/// Starts running the workflow instances of every Worker in `bundles`
/// (`isolane dev`), when the engine has a store; abort the handle to stop.
pub fn spawn_workflows(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let host = Arc::new(HeldWorkers::new(engine, bundles, Owner::Alone));
    Some(tokio::spawn(run(engine.clone(), store, host)))
}

/// Starts running the workflows `peers` names this node the owner of (the
/// ring `alarms::spawn_node_alarms` feeds), when the engine has a store.
pub(crate) fn spawn_node_workflows(
    engine: &Engine,
    bundles: Arc<BundleIndex>,
    peers: &Peers,
    metrics: Arc<WorkflowMetrics>,
) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let owner = Owner::Ring(peers.clone());
    let host = Arc::new(HeldWorkers::new(engine, bundles, owner));
    let runs = Runs::new(engine.clone(), store, host);
    Some(tokio::spawn(supervise(
        runs,
        peers.me().to_owned(),
        metrics,
    )))
}

/// An instance, by its workflow and id.
type Key = (WorkflowScope, String);

/// The runner's state: the instances it is running, and what wakes it when
/// one of those runs ends.
#[derive(Clone)]
struct Runs {
    engine: Engine,
    store: Store,
    host: Arc<HeldWorkers>,
    running: Arc<Mutex<HashSet<Key>>>,
    ended: Arc<Notify>,
}

/// Looks for instances due, starts them, and sleeps until the next stored
/// wake-up, a workflow operation or a run's end, whichever comes first.
async fn run(engine: Engine, store: Store, host: Arc<HeldWorkers>) {
    let mut changes = store.workflow_changes();
    let runs = Runs::new(engine, store, host);
    loop {
        changes.borrow_and_update();
        let now = now_ms();
        let full = match runs.store.workflow_due(now, BATCH).await {
            Ok(due) => {
                let full = due.len() >= BATCH as usize;
                due.into_iter().for_each(|instance| runs.start(instance));
                full
            }
            Err(error) => {
                tracing::warn!(%error, "workflows: the store did not answer");
                false
            }
        };
        if full {
            continue;
        }
        let next = runs.store.workflow_next_wake(now).await;
        let wait = wait_until(next.ok().flatten(), now, IDLE);
        tokio::select! {
            _ = changes.changed() => {}
            () = runs.ended.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The workflows of the Workers `host` holds that it owns now.
fn owned(host: &HeldWorkers) -> HashSet<WorkflowScope> {
    host.bundles
        .worker_ids()
        .into_iter()
        .filter_map(|id| host.bundles.get(&id, ""))
        .flat_map(|bundle| {
            let namespace = isolane_engine::namespace_of(&bundle.id).to_owned();
            bundle
                .workflows
                .values()
                .map(|target| WorkflowScope::new(namespace.clone(), &target.workflow))
                .collect::<Vec<_>>()
        })
        .filter(|scope| host.owns_key(&workflow_key(scope)))
        .collect()
}

/// A node's runner: a loop for each workflow it owns, started when the
/// ring names it the owner (again, when its loop ended: fenced), stopped
/// when it no longer does (a run under way finishes).
async fn supervise(runs: Runs, me: String, metrics: Arc<WorkflowMetrics>) {
    let mut loops: HashMap<WorkflowScope, tokio::task::AbortHandle> = HashMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    for tick in 0u32.. {
        if tick % COUNT_EVERY == 0 {
            count(&runs.store, &metrics, loops.keys().cloned().collect()).await;
        }
        while tasks.try_join_next().is_some() {}
        let wanted = owned(&runs.host);
        loops.retain(|scope, task| {
            let keep = wanted.contains(scope) && !task.is_finished();
            if !keep && !task.is_finished() {
                tracing::info!(namespace = %scope.namespace, workflow = %scope.workflow, "workflows: stopped running the workflow here (not its owner any more)");
                task.abort();
            }
            keep
        });
        for scope in wanted {
            if let std::collections::hash_map::Entry::Vacant(slot) = loops.entry(scope) {
                let run = runs.clone().own(slot.key().clone(), me.clone());
                slot.insert(tasks.spawn(run));
            }
        }
        tokio::time::sleep(CLUSTER_IDLE).await;
    }
}

impl Runs {
    fn new(engine: Engine, store: Store, host: Arc<HeldWorkers>) -> Self {
        Self {
            engine,
            store,
            host,
            running: Arc::default(),
            ended: Arc::default(),
        }
    }

    /// One owned workflow's loop: takes its owner epoch, then claims its
    /// instances due under it until another node takes it.
    async fn own(self, scope: WorkflowScope, me: String) {
        let fence = match self.store.workflow_take(scope.clone(), me.clone()).await {
            Ok(epoch) => epoch,
            Err(error) => {
                tracing::warn!(%error, workflow = %scope.workflow, "workflows: could not take the workflow");
                return;
            }
        };
        tracing::info!(node = %me, namespace = %scope.namespace, workflow = %scope.workflow, epoch = fence, "workflows: took the workflow");
        let mut changes = self.store.workflow_changes();
        loop {
            changes.borrow_and_update();
            let now = now_ms();
            match self
                .store
                .workflow_due_of(scope.clone(), fence, now, BATCH)
                .await
            {
                // Running instances stay due (this loop skips its own):
                // a full batch is not asked again at once.
                Ok(due) => due.into_iter().for_each(|instance| self.start(instance)),
                Err(StoreError::Workflow(WorkflowError::Fenced { current, .. })) => {
                    tracing::info!(namespace = %scope.namespace, workflow = %scope.workflow, current, "workflows: another node took the workflow");
                    return;
                }
                Err(error) => tracing::warn!(%error, "workflows: the store did not answer"),
            }
            let next = self.store.workflow_next_wake_of(scope.clone(), now).await;
            let wait = wait_until(next.ok().flatten(), now, CLUSTER_IDLE);
            tokio::select! {
                _ = changes.changed() => {}
                () = self.ended.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Runs `instance` unless this process already is running it.
    fn start(&self, instance: WorkflowDue) {
        let key = (instance.scope.clone(), instance.id.clone());
        let fresh = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone());
        if !fresh {
            return;
        }
        let runs = self.clone();
        tokio::spawn(async move {
            run_once(&runs.engine, &runs.store, &runs.host, instance).await;
            runs.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
            runs.ended.notify_one();
        });
    }
}

/// Sets the metrics of the workflows in `owned`, and drops those of the
/// ones this node no longer owns.
async fn count(store: &Store, metrics: &WorkflowMetrics, owned: Vec<WorkflowScope>) {
    for scope in metrics.named() {
        if !owned.contains(&scope) {
            metrics.forget(&scope);
        }
    }
    if owned.is_empty() {
        return;
    }
    match store.workflow_counts(owned).await {
        Ok(counts) => counts.iter().for_each(|counts| metrics.set(counts)),
        Err(error) => tracing::debug!(%error, "workflows: could not count the instances"),
    }
}

/// How long to sleep at `now` until `next` (ms), at most `idle`.
fn wait_until(next: Option<i64>, now: i64, idle: Duration) -> Duration {
    next.map_or(idle, |at| {
        Duration::from_millis(u64::try_from(at - now).unwrap_or(0)).min(idle)
    })
}

/// One run of `instance`; a run that recorded nothing is a failed run.
async fn run_once(engine: &Engine, store: &Store, host: &HeldWorkers, instance: WorkflowDue) {
    let failure = match host.held(&instance.worker_id) {
        None => Some(format!(
            "Worker {} (which runs the workflow) is not running",
            instance.worker_id
        )),
        Some((bundle, thread)) => {
            let work = Work::WorkflowRun(instance.clone());
            match engine.run(thread, bundle, work).await {
                Ok(answer) if answer.status().is_success() => None,
                Ok(answer) => Some(format!("the run answered {}", answer.status())),
                Err(error) => Some(error.to_string()),
            }
        }
    };
    let Some(failure) = failure else {
        return;
    };
    tracing::info!(workflow = %instance.scope.workflow, instance = %instance.id, %failure, "workflows: a run ended without recording its outcome; it runs again later");
    let (scope, id) = (instance.scope, instance.id);
    if let Err(error) = store.workflow_failed(scope, id, failure).await {
        tracing::warn!(%error, "workflows: could not record a failed run");
    }
}
