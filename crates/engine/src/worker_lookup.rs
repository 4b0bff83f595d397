//! Which Workers a process can run, by id ([`WorkerLookup`], given to the
//! engine with [`crate::Engine::set_workers`]): a Durable Object binding to
//! a class another Worker of the namespace hosts (`durableObject.worker`)
//! finds that Worker's current bundle here, and its calls run in that
//! Worker's isolate (`host/object_hosted.rs`).

use std::sync::Arc;

use crate::WorkerBundle;

/// The current bundle of each Worker this process serves.
pub trait WorkerLookup: Send + Sync + 'static {
    /// Worker `worker_id`'s (`<namespace>/<name>`) newest revision, if this
    /// process has it.
    fn current(&self, worker_id: &str) -> Option<Arc<WorkerBundle>>;
}
