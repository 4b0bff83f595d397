//! A Worker's WebSocket from the engine's end ([`isolane_engine::SocketEnd`])
//! to the call's ([`isolane_proto::socket::SocketChannels`]): two small
//! forwarding tasks, each ending when either side goes (which the other side
//! sees as its channel ending). Over gRPC these tasks are where the
//! bidirectional stream's frames will be read and written.

use isolane_engine::{CloseFrame, SocketEnd, SocketMessage};
use isolane_proto::socket::{self, SocketChannels, Upgrade};
use tokio::sync::mpsc;

/// Each way, one message in flight between the two channels: the engine's
/// own queues are the buffer.
const HANDOFF: usize = 1;

/// The call's end of `end`.
pub(crate) fn bridge(end: SocketEnd) -> Upgrade {
    let SocketEnd {
        to_worker,
        mut from_worker,
        config,
    } = end;
    let (client_tx, mut client_rx) = mpsc::channel::<socket::SocketMessage>(HANDOFF);
    let (worker_tx, worker_rx) = mpsc::channel::<socket::SocketMessage>(HANDOFF);
    tokio::spawn(async move {
        while let Some(message) = client_rx.recv().await {
            if to_worker.send(to_engine(message)).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(message) = from_worker.recv().await {
            if worker_tx.send(to_call(message)).await.is_err() {
                return;
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
