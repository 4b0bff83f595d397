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
//! A cluster does not run workflows yet: the operator refuses their
//! bindings, so only `isolane dev` spawns this.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use isolane_engine::{Engine, Work};
use isolane_storage::{Store, WorkflowDue, WorkflowScope};
use tokio::task::JoinHandle;

use crate::BundleIndex;
use crate::alarms::{HeldWorkers, Owner};
use crate::queues::now_ms;

/// How often the store is asked for instances due.
const POLL: Duration = Duration::from_millis(50);

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

async fn run(engine: Engine, store: Store, host: Arc<HeldWorkers>) {
    let running: Arc<Mutex<HashSet<Key>>> = Arc::default();
    loop {
        match store.workflow_due(now_ms(), BATCH).await {
            Ok(due) => {
                for instance in due {
                    let key = (instance.scope.clone(), instance.id.clone());
                    let fresh = running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key.clone());
                    if fresh {
                        let (engine, store, host) = (engine.clone(), store.clone(), host.clone());
                        let running = running.clone();
                        tokio::spawn(async move {
                            run_once(&engine, &store, &host, instance).await;
                            running
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .remove(&key);
                        });
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "workflows: the store did not answer"),
        }
        tokio::time::sleep(POLL).await;
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
