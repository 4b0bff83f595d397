//! Bodies between gRPC frames and the engine's [`Body`]: [`RequestBody`]
//! reads `body` frames as the worker pulls them; [`Frames`] encodes an
//! answer as head, body and end frames, pulled by tonic as the router reads
//! them. No task, no extra queue: when the router cancels the call, tonic
//! drops the stream and with it the engine's body (the worker's writes then
//! fail) and the request's admission permit.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt as _;
use isolane_proto::Outcome;
use isolane_proto::call::{Answer, Failed};
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse, ResponseHead, execute_request};
use tonic::Status;

use super::answered::Answered;
use super::{ExecuteStream, InboundFrames};

/// Response body chunks larger than this are sent as several frames, so no
/// message nears a client's decoding limit (tonic's default is 4 MiB).
pub const MAX_CHUNK_BYTES: usize = 1 << 20;

/// Why the request stream did not deliver a whole body.
#[derive(Debug, thiserror::Error)]
pub enum RequestBodyError {
    #[error("the request stream ended without its end frame: the body is truncated")]
    Truncated,
    #[error("the request stream sent a second head")]
    SecondHead,
    #[error("the request stream failed")]
    Stream(#[source] Status),
}

/// The request body, read from `body` frames until `end`.
pub struct RequestBody {
    inbound: InboundFrames,
    ended: bool,
}

impl RequestBody {
    pub fn new(inbound: InboundFrames) -> Self {
        Self {
            inbound,
            ended: false,
        }
    }
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = RequestBodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RequestBodyError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        loop {
            let message = match self.inbound.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(message) => message,
            };
            let frame = match message {
                None => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(RequestBodyError::Truncated)));
                }
                Some(Err(status)) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(RequestBodyError::Stream(status))));
                }
                Some(Ok(ExecuteRequest { frame })) => frame,
            };
            match frame {
                Some(execute_request::Frame::Body(chunk)) if chunk.is_empty() => continue,
                Some(execute_request::Frame::Body(chunk)) => {
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Some(execute_request::Frame::End(_)) => {
                    self.ended = true;
                    return Poll::Ready(None);
                }
                Some(execute_request::Frame::Head(_)) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(RequestBodyError::SecondHead)));
                }
                // WebSocket messages belong to a 101's call, not a body; a
                // frame from a newer peer that this node does not know.
                Some(execute_request::Frame::Socket(_)) | None => continue,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// Encodes an answer as `Execute` response frames: the head, the body in
/// chunks of at most [`MAX_CHUNK_BYTES`], then the end frame with how the
/// body ended. Pulled by tonic as the router reads it.
pub struct Frames {
    head: Option<ResponseHead>,
    body: Answered,
    pending: Bytes,
    done: bool,
    /// The request stream of a bodyless request, held open until the end
    /// (dropping it early could reset the call).
    _inbound: Option<InboundFrames>,
}

impl Frames {
    pub fn new(answer: &Answer, body: Answered, inbound: Option<InboundFrames>) -> Self {
        Self {
            head: Some(answer.encode()),
            body,
            pending: Bytes::new(),
            done: false,
            _inbound: inbound,
        }
    }

    pub fn into_stream(self) -> ExecuteStream {
        Box::pin(futures::stream::unfold(self, |mut frames| async move {
            let frame = frames.next_frame().await?;
            Some((Ok(frame), frames))
        }))
    }

    async fn next_frame(&mut self) -> Option<ExecuteResponse> {
        if self.done {
            return None;
        }
        if let Some(head) = self.head.take() {
            return Some(ExecuteResponse::head(head));
        }
        if self.pending.is_empty() {
            match self.body.frame().await {
                Some(Ok(frame)) => self.pending = frame.into_data().unwrap_or_default(),
                None => {
                    self.done = true;
                    return Some(ExecuteResponse::end(Outcome::Ok, String::new(), 0));
                }
                Some(Err(Failed { outcome, reason })) => {
                    self.done = true;
                    // The engine reports CPU time to metrics, not per
                    // response; see docs/node.md.
                    return Some(ExecuteResponse::end(outcome, reason, 0));
                }
            }
        }
        let take = self.pending.len().min(MAX_CHUNK_BYTES);
        Some(ExecuteResponse::body(self.pending.split_to(take)))
    }
}
