//! A Worker's WebSocket from the engine's end ([`isolane_engine::SocketEnd`])
//! to the call's ([`isolane_proto::socket::SocketChannels`]): two small
//! forwarding tasks, each ending when either side goes (which the other side
//! sees as its channel ending), counting the socket and its messages. When
//! the node's drain closes its sockets (its WebSocket grace over), both ends
//! get a close with 1012 (service restart), so the client reconnects to the
//! Worker's next placement. A
//! router in this process pumps the call's end itself; over gRPC it becomes
//! the call's `socket` frames (`service/socket_frames.rs`).

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{CloseFrame, SocketEnd, SocketMessage};
use isolane_proto::socket::{self, SocketChannels, Upgrade};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

use crate::metrics::SocketCounters;

/// Each way, one message in flight between the two channels: the engine's
/// own queues are the buffer.
const HANDOFF: usize = 1;

/// How long the drain's close may wait for room in a full queue; past it
/// the channel is dropped (1006 to the Worker, 1011 to the client).
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The call's end of `end`, closed with 1012 both ways when `drain` is
/// cancelled; `place` (the drain's count of open sockets) is held until
/// the socket ends.
pub(crate) fn bridge(
    end: SocketEnd,
    drain: CancellationToken,
    place: TaskTrackerToken,
    counters: SocketCounters,
) -> Upgrade {
    let SocketEnd {
        to_worker,
        mut from_worker,
        config,
    } = end;
    let counters = Arc::new(counters);
    let (client_tx, mut client_rx) = mpsc::channel::<socket::SocketMessage>(HANDOFF);
    let (worker_tx, worker_rx) = mpsc::channel::<socket::SocketMessage>(HANDOFF);
    // The drain's close to the Worker is sent by the task below, after the
    // client's: a weak handle, so the Worker's channel still ends (1006)
    // when the client goes.
    let to_worker_on_drain = to_worker.downgrade();
    tokio::spawn({
        let counters = Arc::clone(&counters);
        async move {
            while let Some(message) = client_rx.recv().await {
                counters.to_worker(&message);
                if to_worker.send(to_engine(message)).await.is_err() {
                    return;
                }
            }
        }
    });
    tokio::spawn(async move {
        let _place = place;
        loop {
            tokio::select! {
                biased;
                () = drain.cancelled() => {
                    counters.closed(socket::SERVICE_RESTART);
                    return restart(&worker_tx, &to_worker_on_drain).await;
                }
                message = from_worker.recv() => {
                    let Some(message) = message else { return };
                    if worker_tx.send(counted(&counters, message)).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Upgrade::new(SocketChannels {
        to_worker: client_tx,
        from_worker: worker_rx,
        max_message_bytes: config.max_message_bytes,
        write_timeout: config.idle_timeout,
    })
}

/// `message` for the call, counted as one to the client.
fn counted(counters: &SocketCounters, message: SocketMessage) -> socket::SocketMessage {
    let message = to_call(message);
    counters.to_client(&message);
    message
}

/// The drain's close (1012), to the client first, then to the Worker if
/// its channel is still there.
async fn restart(
    to_client: &mpsc::Sender<socket::SocketMessage>,
    to_worker: &mpsc::WeakSender<SocketMessage>,
) {
    let close = socket::SocketMessage::restart();
    let _ = tokio::time::timeout(CLOSE_WAIT, to_client.send(close)).await;
    if let Some(to_worker) = to_worker.upgrade() {
        let close = to_engine(socket::SocketMessage::restart());
        let _ = tokio::time::timeout(CLOSE_WAIT, to_worker.send(close)).await;
    }
}

fn to_engine(message: socket::SocketMessage) -> SocketMessage {
    match message {
        socket::SocketMessage::Text(text) => SocketMessage::Text(text),
        socket::SocketMessage::Binary(bytes) => SocketMessage::Binary(bytes),
        socket::SocketMessage::Close(frame) => {
            SocketMessage::Close(frame.map(|(code, reason)| CloseFrame { code, reason }))
        }
    }
}

fn to_call(message: SocketMessage) -> socket::SocketMessage {
    match message {
        SocketMessage::Text(text) => socket::SocketMessage::Text(text),
        SocketMessage::Binary(bytes) => socket::SocketMessage::Binary(bytes),
        SocketMessage::Close(frame) => {
            socket::SocketMessage::Close(frame.map(|f| (f.code, f.reason)))
        }
    }
}
