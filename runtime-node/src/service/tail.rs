//! `Tail`: one Worker's invocations on this node, as the router's tail
//! fan-in reads them (docs/tail.md). The engine's subscription does the
//! bounding: a caller that reads slowly loses events and reads a `dropped`
//! frame; requests never wait. Cancelling the call unsubscribes.

use std::pin::Pin;

use futures::Stream;
use isolane_engine::{Engine, TailItem};
use isolane_proto::runtime::v1::{TailFrame, tail_frame};
use tonic::Status;

/// The frames of one tail.
pub type TailStream = Pin<Box<dyn Stream<Item = Result<TailFrame, Status>> + Send>>;

/// Subscribes to `worker_id`'s invocations on `engine`, each event named
/// with this `node`.
pub(super) fn open(engine: &Engine, node: &str, worker_id: &str) -> Result<TailStream, Status> {
    if worker_id
        .split_once('/')
        .is_none_or(|(ns, name)| ns.is_empty() || name.is_empty())
    {
        return Err(Status::invalid_argument("worker_id must be namespace/name"));
    }
    let subscription = engine
        .tail(Some(worker_id))
        .map_err(|error| Status::resource_exhausted(error.to_string()))?;
    // One line per tail (at most MAX_TAILS_PER_WORKER open per Worker).
    tracing::info!(worker.id = %worker_id, "tail opened");
    let node = node.to_owned();
    let frames = futures::stream::unfold(subscription, move |mut subscription| {
        let node = node.clone();
        async move {
            let frame = match subscription.next().await? {
                TailItem::Event(event) => {
                    let mut event = (*event).clone();
                    event.node = node;
                    match serde_json::to_vec(&event) {
                        Ok(json) => tail_frame::Frame::EventJson(json.into()),
                        Err(_) => tail_frame::Frame::Dropped(1),
                    }
                }
                TailItem::Dropped(n) => tail_frame::Frame::Dropped(n),
            };
            Some((Ok(TailFrame { frame: Some(frame) }), subscription))
        }
    });
    Ok(Box::pin(frames))
}
