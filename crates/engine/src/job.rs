//! [`Job`]: one [`Work`] on its way to an engine thread, over the thread's
//! bounded channel (from `dispatch::run_on`, `Engine::retire`, or in shared
//! mode from the thread that handed it over).

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::outcome::ExecuteError;
use crate::work::Work;

pub(crate) type Reply = oneshot::Sender<Result<http::Response<Body>, ExecuteError>>;

/// One piece of work for a thread, and where its answer goes.
pub(crate) struct Job {
    pub(crate) bundle: Arc<WorkerBundle>,
    pub(crate) work: Work,
    pub(crate) reply: Reply,
    /// Already handed over by another thread (shared mode): run it here.
    pub(crate) forwarded: bool,
}
