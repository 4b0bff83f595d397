//! Retiring a deleted worker: [`crate::Engine::retire`] sends each engine
//! thread a [`crate::Work::Retire`] job, which drops the worker's warm isolates
//! from that thread's pool (eviction reason `retired`). What they held — up
//! to the worker's memory limit each, resizable buffers included — goes
//! back at once, not when the pool's LRU or its memory budget reaches them.
//! Requests still running in one keep it (`Rc`) until they finish.

use std::sync::Arc;

use crate::bundle::WorkerBundle;

/// What a retirement job carries: the worker's id, nothing to run.
pub(crate) fn bundle(worker_id: &str) -> Arc<WorkerBundle> {
    Arc::new(WorkerBundle::new(worker_id, "", ""))
}
