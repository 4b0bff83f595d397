//! Bodies between gRPC frames and the engine's [`Body`]: [`RequestBody`]
//! reads `body` frames as the worker pulls them; [`Frames`] encodes an
//! answer as head, body and end frames, pulled by tonic as the router reads
//! them. No task, no extra queue: when the router cancels the call, tonic
//! drops the stream and with it the engine's body (the worker's writes then
//! fail) and the request's admission permit.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::FutureExt as _;
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

/// The largest body sent inside a `whole` answer.
pub const MAX_WHOLE_BYTES: u64 = 64 * 1024;

/// Encodes an answer as `Execute` response frames: the head, the body in
/// chunks of at most [`MAX_CHUNK_BYTES`], then the end frame with how the
/// body ended. Pulled by tonic as the router reads it. When the caller
/// reads `whole` answers and the body is already complete with the head
/// (a Worker's string or buffer body, at most [`MAX_WHOLE_BYTES`]), the
/// head and body leave as that one message instead: two messages fewer
/// to encode, frame and decode per request.
pub struct Frames {
    head: Option<ResponseHead>,
    /// The caller reads `whole` answers.
    whole: bool,
    body: Answered,
    pending: Bytes,
    /// How the body failed when [`Self::head_frame`] found it failed: sent
    /// as the end once `pending` is out.
    failed: Option<Failed>,
    done: bool,
    /// The request stream of a bodyless request, held open until the end
    /// (dropping it early could reset the call).
    _inbound: Option<InboundFrames>,
}

impl Frames {
    pub fn new(
        answer: &Answer,
        body: Answered,
        inbound: Option<InboundFrames>,
        whole: bool,
    ) -> Self {
        Self {
            // A 101's socket follows its head on the call: never whole.
            whole: whole && answer.status != http::StatusCode::SWITCHING_PROTOCOLS,
            head: Some(answer.encode()),
            body,
            pending: Bytes::new(),
            failed: None,
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
            return Some(self.head_frame(head));
        }
        if self.pending.is_empty() {
            // A failure `head_frame` already read is the body's next frame.
            let next = match self.failed.take() {
                Some(failed) => Some(Err(failed)),
                None => self.body.frame().await,
            };
            match next {
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

    /// The first message: `head`, or the whole answer when the caller
    /// takes one and the body is complete already. A body that is not (a
    /// stream still being written, a failure) is left as it was polled:
    /// what was taken is sent next, and the body is read on as usual.
    fn head_frame(&mut self, head: ResponseHead) -> ExecuteResponse {
        let small = http_body::Body::size_hint(&self.body)
            .exact()
            .is_some_and(|n| n <= MAX_WHOLE_BYTES);
        if !self.whole || !small {
            return ExecuteResponse::head(head);
        }
        let first = match self.body.frame().now_or_never() {
            None => return ExecuteResponse::head(head),
            Some(None) => {
                self.done = true;
                return ExecuteResponse::whole(head, Bytes::new());
            }
            Some(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
            Some(Some(Err(failed))) => {
                self.failed = Some(failed);
                return ExecuteResponse::head(head);
            }
        };
        match self.body.frame().now_or_never() {
            Some(None) => {
                self.done = true;
                return ExecuteResponse::whole(head, first);
            }
            Some(Some(Ok(frame))) => {
                let more = frame.into_data().unwrap_or_default();
                let mut joined = BytesMut::from(first);
                joined.extend_from_slice(&more);
                self.pending = joined.freeze();
            }
            Some(Some(Err(failed))) => {
                self.failed = Some(failed);
                self.pending = first;
            }
            None => self.pending = first,
        }
        ExecuteResponse::head(head)
    }
}
