//! A yield that stays inside the thread's `LocalSet`.
//!
//! While requests wait in the schedule, the engine thread starts one, then
//! lets that request's first turn run before it chooses the next
//! (`schedule.rs` charges each turn to its namespace, and the next choice
//! should see the charge). `tokio::task::yield_now` would do that, but it
//! goes back to the runtime: the runtime then runs every task outside the
//! `LocalSet` (a call's task taking its answer, the gRPC connection writing
//! it) and polls the I/O driver before the next request is chosen. Under
//! load that wrote one answer per `writev` and made one `epoll_wait` per
//! request on the node's engine thread (`perf stat` at 64 connections:
//! 0.99 of each per request).
//!
//! [`yield_local`] puts the task back at the end of the `LocalSet`'s queue
//! instead: the request started just before (queued ahead of it) runs its
//! first turn, then the next is chosen, all in the same tick of the
//! `LocalSet`. The answers of the requests started in one tick reach their
//! callers together when it ends, and the runtime writes them out together.
//! The caller goes back to the runtime itself ([`yield_to_runtime`]) before
//! a start that would take a batch past 500 µs (`start_queued`'s `BATCH`),
//! and the `LocalSet` does every 61 task polls (its tick), so I/O and
//! timers are polled between batches.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Lets the other tasks already queued in this `LocalSet` run once before
/// the calling task goes on. Call from a `spawn_local` task only (from the
/// `LocalSet`'s own `block_on` future the wake would go to the runtime).
pub(super) fn yield_local() -> YieldLocal {
    YieldLocal { yielded: false }
}

pub(super) struct YieldLocal {
    yielded: bool,
}

impl Future for YieldLocal {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // A local task's waker queues it at the back of the LocalSet's own
        // run queue (tokio's `LocalSet` schedules there when woken on its
        // thread while it is being polled).
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Goes back to the runtime until it has sent what the `LocalSet`'s tasks
/// left for it and read what its I/O driver found. One `yield_now` is not
/// enough: the runtime runs its queued tasks (the answers go out) and polls
/// its driver, but then polls its `block_on` future (the `LocalSet`) before
/// the tasks the driver woke, so a request that had arrived would be read
/// only after the next turn. The second lets those tasks run first.
pub(super) async fn yield_to_runtime() {
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::{yield_local, yield_to_runtime};

    /// A current-thread runtime and a `LocalSet`, as an engine thread has.
    fn engine_thread_like() -> (tokio::runtime::Runtime, tokio::task::LocalSet) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        (runtime, tokio::task::LocalSet::new())
    }

    /// A task that yields lets the task queued behind it run first, within
    /// the same `LocalSet` and without the runtime polling its driver in
    /// between (a task outside the `LocalSet` spawned before does not run
    /// in between either).
    #[test]
    fn a_local_yield_runs_the_queued_local_task_before_going_on() {
        let (runtime, local) = engine_thread_like();
        let order = Rc::new(RefCell::new(Vec::new()));
        let log = order.clone();
        local.block_on(&runtime, async move {
            let outer = log.clone();
            let waiting = tokio::task::spawn_local(async move {
                let inner = outer.clone();
                // Runs outside the LocalSet, on the runtime's own queue.
                let remote = tokio::spawn(async {});
                let started = tokio::task::spawn_local(async move {
                    inner.borrow_mut().push("started");
                });
                outer.borrow_mut().push("before the yield");
                yield_local().await;
                outer.borrow_mut().push("after the yield");
                let remote_done = remote.is_finished();
                let _ = started.await;
                remote_done
            });
            let remote_done = waiting.await.expect("task");
            assert!(!remote_done, "the runtime's task ran during a local yield");
        });
        assert_eq!(
            *order.borrow(),
            ["before the yield", "started", "after the yield"]
        );
    }

    /// Data that reached a socket while the `LocalSet` ran is read, by a
    /// task of the runtime, before the `LocalSet`'s task goes on from
    /// `yield_to_runtime` (with one `yield_now` it is not).
    #[test]
    fn going_back_to_the_runtime_reads_what_arrived_meanwhile() {
        let (runtime, local) = engine_thread_like();
        let read = local.block_on(&runtime, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let mut peer = std::net::TcpStream::connect(listener.local_addr().expect("addr"))
                .expect("connect");
            let (socket, _) = listener.accept().await.expect("accept");
            // Reads the first bytes (`readable` alone may answer at once for
            // a new socket, before anything arrived).
            let reader = tokio::spawn(async move {
                let mut buf = [0; 16];
                loop {
                    socket.readable().await.expect("readable");
                    match socket.try_read(&mut buf) {
                        Ok(0) => panic!("the peer closed"),
                        Ok(_) => return,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => panic!("read: {e}"),
                    }
                }
            });
            tokio::task::spawn_local(async move {
                // The reader waits on its socket (it ran once).
                tokio::task::yield_now().await;
                std::io::Write::write_all(&mut peer, b"request").expect("write");
                yield_to_runtime().await;
                reader.is_finished()
            })
            .await
            .expect("task")
        });
        assert!(read, "the runtime had not read the socket");
    }
}
