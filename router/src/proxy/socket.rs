//! A WebSocket to a node over gRPC, from the router's side: the handshake's
//! `Execute` call stays open after a 101, and its frames become the same
//! channels ([`SocketChannels`]) a node in this process hands over, so the
//! front end (`websocket.rs`) pumps both alike.
//!
//! Bounded both ways, and never stalling the HTTP/2 connection the call
//! shares with other requests: the client's messages wait in a channel of
//! [`SOCKET_BUFFER`] (while it is full the front end stops reading the
//! client), and go out only while fewer than [`UNACKNOWLEDGED`] are
//! unacknowledged by the node (which reads them all at once); the Worker's
//! are read off the call at once into another, and when a client that does
//! not read has let it fill, the socket is dropped (1011 to the client, 1006
//! to the Worker), as the engine drops it when its own queue fills.

use std::time::Duration;

use futures::StreamExt as _;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse, execute_response};
use std::sync::Arc;

use isolane_proto::socket::{SocketChannels, SocketMessage, UNACKNOWLEDGED, Upgrade};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{Semaphore, mpsc};

use super::body::{FrameStream, ResponseFrames};
use crate::sockets::SocketLimits;

/// Messages buffered each way per socket at the router (the engine's own
/// per-socket buffer).
pub const SOCKET_BUFFER: usize = 16;

/// How long a call whose client has gone is kept, so the client's close
/// (or the end of its messages) reaches the Worker before the call is
/// dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The client's side of a socket that may open on a call.
#[derive(Debug)]
pub struct Opening {
    to_worker: mpsc::Sender<SocketMessage>,
    /// Client messages that may go out before the node acknowledges more.
    credit: Arc<Semaphore>,
}

/// `frames` (a handshake's head and `end`), then the client's messages once
/// the socket opens, each within the node's credit; the call's request
/// stream ends when the [`Opening`] (or the socket made of it) is dropped.
pub fn request_frames(frames: FrameStream) -> (FrameStream, Opening) {
    let (to_worker, from_client) = mpsc::channel::<SocketMessage>(SOCKET_BUFFER);
    let credit = Arc::new(Semaphore::new(UNACKNOWLEDGED));
    let messages = futures::stream::unfold(
        (from_client, Arc::clone(&credit)),
        |(mut from_client, credit)| async move {
            // Spent here, given back by the node's acknowledgements.
            credit.acquire().await.ok()?.forget();
            let message = from_client.recv().await?;
            Some((ExecuteRequest::socket(message), (from_client, credit)))
        },
    );
    (frames.then(messages), Opening { to_worker, credit })
}

impl Opening {
    /// The socket of a call answered `101`, whose remaining response frames
    /// are `frames`.
    pub fn open(self, frames: ResponseFrames, limits: SocketLimits) -> Upgrade {
        let (to_client, from_worker) = mpsc::channel(SOCKET_BUFFER);
        tokio::spawn(worker_messages(frames, to_client, self.credit));
        Upgrade::new(SocketChannels {
            to_worker: self.to_worker,
            from_worker,
            max_message_bytes: limits.max_message_bytes,
            write_timeout: limits.write_timeout,
        })
    }
}

/// Moves the Worker's messages off the call until it ends, the front end
/// goes, or the front end's client has let [`SOCKET_BUFFER`] of them wait.
/// Returning drops the call (cancelling it on the node) and `to_client`
/// (without a close: 1011 to the client).
async fn worker_messages(
    mut frames: ResponseFrames,
    to_client: mpsc::Sender<SocketMessage>,
    credit: Arc<Semaphore>,
) {
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame,
            () = to_client.closed() => {
                // The front end is done (the client closed or left): the
                // call ends once the Worker has seen it, within a bound.
                let rest = async { while let Some(Ok(_)) = frames.next().await {} };
                let _ = tokio::time::timeout(CLOSE_GRACE, rest).await;
                return;
            }
        };
        let message = match frame {
            Some(Ok(ExecuteResponse {
                frame: Some(execute_response::Frame::Socket(frame)),
            })) => frame.into_message(),
            Some(Ok(ExecuteResponse {
                frame: Some(execute_response::Frame::SocketAck(ack)),
            })) => {
                // Never more than was spent: a node's excess is ignored.
                let spent = UNACKNOWLEDGED.saturating_sub(credit.available_permits());
                credit.add_permits((ack.messages as usize).min(spent));
                None
            }
            // Frames this router does not know.
            Some(Ok(ExecuteResponse {
                frame: None | Some(execute_response::Frame::Body(_)),
            })) => None,
            // The end, a second head, the node gone.
            Some(Ok(_) | Err(_)) | None => return,
        };
        let Some(message) = message else { continue };
        match to_client.try_send(message) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                tracing::debug!("a WebSocket client does not read; dropping its socket");
                return;
            }
            Err(TrySendError::Closed(_)) => return,
        }
    }
}
