//! Where a job's [`Work`] runs and how it gets there: an object's work (an
//! alarm, a stub call, a socket event) on the object's home thread
//! (`object_call.rs`), the rest on the thread its caller chose, or one
//! clear of a busy namespace (`fairness.rs`); then over that thread's
//! bounded queue ([`run_on`]). What the thread does with it is `thread.rs`
//! (retirements, prewarms, admission) and `thread/serve.rs` (the rest).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::job::Job;
use crate::object_call::home_thread;
use crate::observer::EngineObserver;
use crate::outcome::ExecuteError;
use crate::thread_ctx::EngineShared;
use crate::work::Work;

/// The home thread of the object `work` is for (an alarm, a forwarded
/// call, a socket event), if it is for one.
pub(crate) fn home_of(bundle: &WorkerBundle, work: &Work, threads: usize) -> Option<usize> {
    let (class, id) = work.object()?;
    Some(home_thread(&bundle.id, class, id, threads))
}

/// Runs `work` on engine thread `thread` as it is: not moved to a thread
/// clear of a busy namespace (`fairness.rs`), nor to the thread holding
/// the Worker in shared mode. `Overloaded` when its queue is full (told to
/// `observer`). `forwarded`: an object's work sent to its home thread
/// (`Job::forwarded`), which waits for room in a full queue instead;
/// `Engine::run` sends its work here too, once it has chosen its thread.
pub(crate) async fn run_on(
    shared: &EngineShared,
    observer: &dyn EngineObserver,
    thread: usize,
    bundle: Arc<WorkerBundle>,
    work: Work,
    forwarded: bool,
) -> Result<http::Response<Body>, ExecuteError> {
    let threads = shared.senders.len();
    let Some(sender) = shared.senders.get(thread) else {
        return Err(ExecuteError::UnknownThread { thread, threads });
    };
    let (reply, response) = oneshot::channel();
    let job = Job {
        bundle,
        work,
        reply,
        forwarded,
    };
    // An object's call or alarm waits for room in a full queue instead
    // of failing a request already admitted (bounded by its caller's wall
    // limit); the thread takes jobs off its queue between turns.
    let sent = if forwarded {
        sender
            .send(job)
            .await
            .map_err(|mpsc::error::SendError(job)| mpsc::error::TrySendError::Closed(job))
    } else {
        sender.try_send(job)
    };
    if let Err(error) = sent {
        let error = match error {
            mpsc::error::TrySendError::Full(_) => ExecuteError::Overloaded { thread },
            mpsc::error::TrySendError::Closed(_) => ExecuteError::Canceled {
                reason: "the engine is shut down",
            },
        };
        observer.request_finished(thread, error.outcome(), Duration::ZERO, Duration::ZERO);
        return Err(error);
    }
    response.await.unwrap_or(Err(ExecuteError::Canceled {
        reason: "the engine dropped the request",
    }))
}
