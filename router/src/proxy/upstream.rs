//! Where a call goes: a node over gRPC (the cluster), or a node served in
//! this process (`isolane dev`). Both speak the same frames: the request's
//! head, body and end in, the response's head, body and end out, so the
//! proxy places, retries, maps outcomes and counts the same way for both.

use std::fmt::Debug;
use std::pin::Pin;

use futures::Stream;
use futures::future::BoxFuture;
use isolane_proto::runtime::v1::{ExecuteResponse, ResponseHead, execute_response};
use tonic::Status;

use super::outgoing::FrameStream;
use crate::Error;

/// The response frames of one call.
pub type ResponseFrames = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

/// A runtime node in this process: the proxy hands it a call's request
/// frames directly, without a connection (`isolane dev` runs the node's
/// service this way). It answers as the node's gRPC service does: a refusal
/// is a gRPC status, anything else a stream starting with the head.
pub trait LocalNode: Debug + Send + Sync + 'static {
    /// Runs one call.
    fn execute(&self, frames: FrameStream) -> BoxFuture<'static, Result<ResponseFrames, Status>>;
}

/// Reads the response head, the first frame of every answer.
pub(super) async fn response_head(
    mut stream: ResponseFrames,
    node: &str,
) -> Result<(ResponseHead, ResponseFrames), Error> {
    use futures::StreamExt as _;
    match stream.next().await {
        Some(Ok(ExecuteResponse {
            frame: Some(execute_response::Frame::Head(head)),
        })) => Ok((head, stream)),
        Some(Ok(_)) | None => Err(Error::Protocol {
            node: node.to_owned(),
            detail: "the first response frame is not a head",
        }),
        Some(Err(status)) => Err(Error::from_status(node, &status)),
    }
}
