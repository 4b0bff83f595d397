//! Retiring a deleted worker: [`crate::Engine::retire`] sends each engine
//! thread a [`crate::Work::Retire`] job, which drops the worker's warm isolates
//! from that thread's pool (eviction reason `retired`). What they held — up
//! to the worker's memory limit each, resizable buffers included — goes
//! back at once, not when the pool's LRU or its memory budget reaches them.
//! Requests still running in one keep it (`Rc`) until they finish.

use std::sync::Arc;

use crate::bundle::{Limits, WorkerBundle};

/// What a retirement job carries: the worker's id, nothing to run.
pub(crate) fn bundle(worker_id: &str) -> Arc<WorkerBundle> {
    Arc::new(WorkerBundle {
        assets: None,
        id: worker_id.to_owned(),
        revision: String::new(),
        script: String::new(),
        modules: None,
        env: Default::default(),
        kv: Default::default(),
        durable_objects: Default::default(),
        sqlite_classes: Default::default(),
        hosted_objects: Default::default(),
        services: Default::default(),
        dispatchers: Default::default(),
        queues: Default::default(),
        d1: Default::default(),
        images: Default::default(),
        r2: Default::default(),
        queue_consumers: Default::default(),
        limits: Limits::default(),
        allowed_hosts: Vec::new(),
        compat: Default::default(),
        json_env: Default::default(),
    })
}
