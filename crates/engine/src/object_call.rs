//! One instance of each Durable Object per process: an object lives on its
//! *home thread*, `thread_for` of its placement key
//! (`<namespace>/<worker>/<class>/<id>`, `isolane-placement`), in the
//! isolate of its Worker there. A stub call made on another thread leaves
//! the calling isolate as a request carrying an [`ObjectCall`] extension,
//! handed to the home thread (never moved by `fairness.rs`), where the
//! engine delivers it to the object through its input gate, under the
//! Worker's limits, like an [`crate::AlarmEvent`]; the answer comes back
//! as the request's response.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::job::Job;
use crate::observer::EngineObserver;
use crate::outcome::ExecuteError;
use crate::thread_ctx::EngineShared;

/// A stub call forwarded to the object's home thread: the request is the
/// `stub.fetch` request, or for a JS RPC call a `POST` whose body is the
/// V8-serialized argument array. The response to an RPC call is a 200
/// whose body is the V8-serialized `[true, result]` or
/// `[false, name, message]` (what the method threw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCall {
    /// The class as the Worker's binding names it (`durableObject.className`).
    pub class: String,
    /// The object's id (64 hex digits).
    pub id: String,
    /// The RPC method, or `None` for `stub.fetch`.
    pub method: Option<String>,
}

/// The placement key of object `id` of `class` of Worker `worker_id`
/// (`<namespace>/<name>`): `<namespace>/<worker>/<class>/<id>`.
pub fn object_key(worker_id: &str, class: &str, id: &str) -> String {
    format!("{worker_id}/{class}/{id}")
}

/// The engine thread (of `threads`) that owns object `id` of `class` of
/// Worker `worker_id`.
pub fn home_thread(worker_id: &str, class: &str, id: &str, threads: usize) -> usize {
    let threads = u32::try_from(threads).unwrap_or(u32::MAX);
    isolane_placement::thread_for(&object_key(worker_id, class, id), threads) as usize
}

/// The home thread of the object a request is for (an alarm or a
/// forwarded call), if it is for one.
pub(crate) fn home_of(
    bundle: &WorkerBundle,
    request: &http::Request<Body>,
    threads: usize,
) -> Option<usize> {
    let extensions = request.extensions();
    let (class, id) = if let Some(alarm) = extensions.get::<crate::AlarmEvent>() {
        (&alarm.class, &alarm.id)
    } else {
        let call = extensions.get::<ObjectCall>()?;
        (&call.class, &call.id)
    };
    Some(home_thread(&bundle.id, class, id, threads))
}

/// Runs `request` on engine thread `thread` as it is: not moved to a
/// thread clear of a busy namespace (`fairness.rs`), nor to the thread
/// holding the Worker in shared mode. `Overloaded` when its queue is full
/// (told to `observer`). `forwarded`: an object's call or alarm sent to
/// its home thread (`Job::forwarded`), which waits for room in a full
/// queue instead; `Engine::execute` sends its requests here too, once it
/// has chosen their thread.
pub(crate) async fn run_on(
    shared: &EngineShared,
    observer: &dyn EngineObserver,
    thread: usize,
    bundle: Arc<WorkerBundle>,
    request: http::Request<Body>,
    forwarded: bool,
) -> Result<http::Response<Body>, ExecuteError> {
    let threads = shared.senders.len();
    let Some(sender) = shared.senders.get(thread) else {
        return Err(ExecuteError::UnknownThread { thread, threads });
    };
    let (reply, response) = oneshot::channel();
    let job = Job {
        bundle,
        request,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_home_is_stable_and_spread() {
        let homes: Vec<usize> = (0..64)
            .map(|i| home_thread("shop/counter", "Counter", &format!("{i:064x}"), 4))
            .collect();
        assert!(homes.iter().all(|&t| t < 4));
        // Every thread is home to some of 64 objects.
        for t in 0..4 {
            assert!(homes.contains(&t), "{homes:?}");
        }
        assert_eq!(
            homes[7],
            home_thread("shop/counter", "Counter", &format!("{:064x}", 7), 4)
        );
        assert_eq!(home_thread("a/b", "C", "d", 1), 0);
    }
}
