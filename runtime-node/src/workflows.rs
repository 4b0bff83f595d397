//! Workflows' runner in `isolane dev` (docs/workflows.md): a loop that asks
//! the store for the instances due to run (created, woken by a sleep's end,
//! an event, a retry's delay, or left running by a process that stopped)
//! and runs each as an `isolane_engine::Work::WorkflowRun` on the thread its
//! Worker runs on, one run of an instance at a time. A run records how it
//! ended itself (`isolane-bindings`' `js/40_workflow.js`); one that ends
//! otherwise (a limit, an exception outside a step) is recorded here as a
//! failed run, run again after its step's retry delay
//! (`Store::workflow_failed`).
//!
//! The runner sleeps until the next instance is due (a stored wake-up
//! time), a workflow operation of this process or the end of a run it
//! started: an idle `isolane dev` asks the store nothing.
//!
//! A cluster does not run workflows yet: the operator refuses their
//! bindings, so only `isolane dev` spawns this.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use isolane_engine::{Engine, Work};
use isolane_storage::{Store, WorkflowDue, WorkflowScope};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::BundleIndex;
use crate::alarms::{HeldWorkers, Owner};
use crate::queues::now_ms;

/// The longest the runner sleeps when nothing is due: a safety net, not
/// how it learns of work (each workflow operation of this process, and each
/// run's end, wakes it; a stored wake-up time is slept until).
const IDLE: Duration = Duration::from_secs(30);

/// Instances asked for at once.
const BATCH: u32 = 64;

/// Starts running the workflow instances of every Worker in `bundles`
/// (`isolane dev`), when the engine has a store; abort the handle to stop.
pub fn spawn_workflows(engine: &Engine, bundles: Arc<BundleIndex>) -> Option<JoinHandle<()>> {
    let store = engine.config().store.clone()?;
    let host = Arc::new(HeldWorkers::new(engine, bundles, Owner::Alone));
    Some(tokio::spawn(run(engine.clone(), store, host)))
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
    let runs = Runs {
        engine,
        store,
        host,
        running: Arc::default(),
        ended: Arc::default(),
    };
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
        let wait = match runs.store.workflow_next_wake(now).await {
            Ok(next) => next.map_or(IDLE, |at| {
                Duration::from_millis(u64::try_from(at - now).unwrap_or(0)).min(IDLE)
            }),
            Err(_) => IDLE,
        };
        tokio::select! {
            _ = changes.changed() => {}
            () = runs.ended.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

impl Runs {
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
