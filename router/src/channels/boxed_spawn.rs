//! The executor of a node connection's HTTP/2 tasks: each future is boxed
//! before tokio spawns it.
//!
//! hyper's HTTP/2 client spawns up to two tasks per request (the body's
//! pipe and the wait for the response), all of one enum type whose size is
//! that of its largest variant: the connection task, with the TLS session
//! and the codec's buffers inline. A tokio task holds its future inline and
//! moves it whole when the task is made and when it finishes, so each
//! request copied that large value several times (callgrind put those moves
//! at about 3 % of the router's instructions per request). Boxed, tokio
//! moves a pointer; the box costs one allocation.

use std::future::Future;

/// Spawns each future on the current tokio runtime, boxed.
#[derive(Clone, Copy, Debug, Default)]
pub struct BoxedSpawn;

impl<F> hyper::rt::Executor<F> for BoxedSpawn
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        tokio::spawn(Box::pin(future));
    }
}

#[cfg(test)]
mod tests {
    use hyper::rt::Executor as _;

    use super::*;

    #[tokio::test]
    async fn a_spawned_future_runs() {
        let (done, ran) = tokio::sync::oneshot::channel();
        BoxedSpawn.execute(async move {
            let _ = done.send(7);
        });
        assert_eq!(ran.await, Ok(7));
    }
}
