//! Where a call goes: a node over gRPC (the cluster), or a node served in
//! this process (`isolane dev`). Both take the same [`Call`] and give the
//! same [`Answer`], so the proxy places, retries, maps outcomes and counts
//! the same way for both; only the gRPC way encodes them as frames, on an
//! `Execute` call of its own or, for a request whose body it holds whole and
//! small, on the node's shared `Calls` stream (`channels/calls.rs`).

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use isolane_proto::call::{Answer, AnswerBody, Call};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{
    ExecuteResponse, Header, RequestHead, WholeAnswer, execute_response,
};
use tonic::Status;

use super::body::{CallBody, FrameStream, ResponseFrames, Source};
use crate::Error;
use crate::channels::CallStream;

/// A runtime node in this process: the proxy hands it a call as it is,
/// without a connection or frames (`isolane dev` runs the node's service
/// this way). It answers as the node's gRPC service does: a refusal is a
/// gRPC status, anything else an answer and its body.
pub trait LocalNode: Debug + Send + Sync + 'static {
    /// Runs one call.
    fn call(
        &self,
        call: Call,
        body: CallBody,
    ) -> BoxFuture<'static, Result<(Answer, AnswerBody), Status>>;

    /// Whether a request of a Worker of `namespace` may run on the thread
    /// it was read on rather than its Worker's home thread
    /// (`thread_spread.rs`).
    fn may_spread(&self, _namespace: &str) -> bool {
        true
    }
}

/// Runs `call` on a node in this process.
pub(super) async fn call_local(
    local: &dyn LocalNode,
    call: Call,
    body: CallBody,
    node: &str,
) -> Result<(Answer, Source), Error> {
    let (answer, body) = local
        .call(call, body)
        .await
        .map_err(|status| Error::from_status(node, &status))?;
    Ok((answer, Source::Local(body)))
}

/// Runs a call over gRPC: opens `Execute` with its frames and reads the
/// answer from the first response frame.
pub(super) async fn call_grpc(
    client: RuntimeClient<crate::channels::NodeChannel>,
    request: tonic::Request<FrameStream>,
    node: &str,
) -> Result<(Answer, Source), Error> {
    let mut client = client.max_decoding_message_size(crate::channels::MAX_NODE_MESSAGE);
    let stream: ResponseFrames = match client.execute(request).await {
        Ok(response) => Box::pin(response.into_inner()),
        Err(status) => return Err(Error::from_status(node, &status)),
    };
    answer_from(stream, node).await
}

/// Runs a call on the node's `Calls` stream (its `head`, the router's
/// `trace` context and its whole `body`): one message out, its answer's
/// frames back.
pub(super) async fn call_on_stream(
    calls: Arc<CallStream>,
    head: RequestHead,
    trace: Vec<Header>,
    body: Bytes,
    node: &str,
) -> Result<(Answer, Source), Error> {
    answer_from(Box::pin(calls.call(head, trace, body)), node).await
}

/// The answer whose frames `stream` carries: its head (or whole answer) is
/// the first.
async fn answer_from(mut stream: ResponseFrames, node: &str) -> Result<(Answer, Source), Error> {
    use futures::StreamExt as _;
    let (head, whole) = match stream.next().await {
        Some(Ok(ExecuteResponse {
            frame: Some(execute_response::Frame::Head(head)),
        })) => (head, None),
        Some(Ok(ExecuteResponse {
            frame:
                Some(execute_response::Frame::Whole(WholeAnswer {
                    head: Some(head),
                    body,
                })),
        })) => (head, Some(body)),
        Some(Ok(_)) | None => {
            return Err(Error::Protocol {
                node: node.to_owned(),
                detail: "the first response frame is not a head",
            });
        }
        Some(Err(status)) => return Err(Error::from_status(node, &status)),
    };
    let answer = Answer::decode(head).map_err(|_| Error::Protocol {
        node: node.to_owned(),
        detail: "the response status is not an HTTP status",
    })?;
    let source = match whole {
        Some(body) => Source::Whole(body, stream),
        None => Source::Frames(stream),
    };
    Ok((answer, source))
}
