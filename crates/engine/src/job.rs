//! [`Job`]: one request on its way to an engine thread, over the thread's
//! bounded channel (from `Engine::execute`, or in shared mode from the thread
//! that handed it over).

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::outcome::ExecuteError;

pub(crate) type Reply = oneshot::Sender<Result<http::Response<Body>, ExecuteError>>;

/// One request for a thread.
pub(crate) struct Job {
    pub(crate) bundle: Arc<WorkerBundle>,
    pub(crate) request: http::Request<Body>,
    pub(crate) reply: Reply,
    /// Already handed over by another thread (shared mode): run it here.
    pub(crate) forwarded: bool,
}
