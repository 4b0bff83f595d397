//! Bodies between gRPC frames and the engine's [`Body`]: [`RequestBody`]
//! reads `body` frames as the worker pulls them; [`Responder`] turns the
//! engine's response into head, body and end frames, pulled by tonic as the
//! router reads them. No task, no extra queue: when the router cancels the
//! call, tonic drops the stream and with it the engine's body (the worker's
//! writes then fail) and the request's admission permit.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use isolane_engine::{Body, BodyError};
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::{
    ExecuteRequest, ExecuteResponse, Header, ResponseHead, execute_request,
};
use tokio::time::Instant;
use tonic::Status;

use super::{ExecuteStream, InboundFrames};
use crate::admission::Permit;
use crate::metrics::NodeMetrics;

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
                // A frame from a newer peer that this node does not know.
                None => continue,
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

/// Counts the call in `isolane_node_requests_total` once, when it ends or is
/// dropped (`canceled`), and holds its admission permit until then.
struct Finish {
    _permit: Permit,
    thread: usize,
    metrics: Arc<NodeMetrics>,
    label: Option<&'static str>,
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.metrics
            .request(self.thread, self.label.unwrap_or("canceled"));
    }
}

/// Produces the frames of one response.
pub struct Responder {
    head: Option<ResponseHead>,
    body: Body,
    pending: Bytes,
    /// The head's outcome: the metric label of the call.
    outcome: Outcome,
    deadline: Option<Instant>,
    finish: Finish,
    done: bool,
    /// The request stream of a bodyless request, held open until the end.
    _inbound: Option<InboundFrames>,
}

enum Next {
    Chunk(Bytes),
    End,
    Failed(BodyError),
    Deadline,
}

impl Responder {
    pub fn new(
        permit: Permit,
        metrics: Arc<NodeMetrics>,
        deadline: Option<Instant>,
        inbound: Option<InboundFrames>,
    ) -> Self {
        let thread = permit.thread();
        Self {
            head: None,
            body: Body::empty(),
            pending: Bytes::new(),
            outcome: Outcome::Ok,
            deadline,
            finish: Finish {
                _permit: permit,
                thread,
                metrics,
                label: None,
            },
            done: false,
            _inbound: inbound,
        }
    }

    /// Sets the response to send: the worker's (`Outcome::Ok`) or the
    /// engine's error page for `outcome`.
    pub fn start(&mut self, response: http::Response<Body>, outcome: Outcome, reason: String) {
        let (parts, body) = response.into_parts();
        let headers = parts
            .headers
            .iter()
            .map(|(name, value)| {
                Header::new(name.as_str(), Bytes::copy_from_slice(value.as_bytes()))
            })
            .collect();
        self.head = Some(ResponseHead {
            status: u32::from(parts.status.as_u16()),
            headers,
            outcome: outcome.into(),
            reason,
            // The engine's error page says how long to wait (quarantine).
            retry_after_ms: (outcome != Outcome::Ok)
                .then(|| parts.headers.get(http::header::RETRY_AFTER))
                .flatten()
                .and_then(|v| v.to_str().ok()?.parse::<u32>().ok())
                .map(|secs| secs.saturating_mul(1000)),
            body_length: http_body::Body::size_hint(&body).exact(),
        });
        self.body = body;
        self.outcome = outcome;
    }

    pub fn into_stream(self) -> ExecuteStream {
        Box::pin(futures::stream::unfold(self, |mut responder| async move {
            let frame = responder.next_frame().await?;
            Some((Ok(frame), responder))
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
            match self.next_chunk().await {
                Next::Chunk(chunk) => self.pending = chunk,
                Next::End => return Some(self.end(Outcome::Ok, String::new())),
                Next::Failed(error) => {
                    // A worker's stream that threw or was cut by a limit
                    // (the engine aborts it with the reason), or an upstream
                    // body that failed.
                    let outcome = match error {
                        BodyError::Aborted { .. } => Outcome::Exception,
                        BodyError::Source(_) => Outcome::Internal,
                    };
                    return Some(self.end(outcome, error.to_string()));
                }
                Next::Deadline => {
                    let reason = "the router's deadline passed while streaming".to_owned();
                    return Some(self.end(Outcome::WallTimeout, reason));
                }
            }
        }
        let take = self.pending.len().min(MAX_CHUNK_BYTES);
        Some(ExecuteResponse::body(self.pending.split_to(take)))
    }

    async fn next_chunk(&mut self) -> Next {
        let next = match self.deadline {
            Some(deadline) => {
                match tokio::time::timeout_at(deadline, self.body.next_chunk()).await {
                    Ok(next) => next,
                    Err(_) => return Next::Deadline,
                }
            }
            None => self.body.next_chunk().await,
        };
        match next {
            Some(Ok(chunk)) => Next::Chunk(chunk),
            Some(Err(error)) => Next::Failed(error),
            None => Next::End,
        }
    }

    fn end(&mut self, outcome: Outcome, reason: String) -> ExecuteResponse {
        self.done = true;
        // The call's label: how the worker did (the head), unless the body
        // then failed.
        let label = if outcome == Outcome::Ok {
            self.outcome
        } else {
            outcome
        };
        self.finish.label = Some(label.label());
        // Release the body (and the worker's writer) before the last frame.
        self.body = Body::empty();
        // The engine reports CPU time to metrics, not per response; see
        // docs/node.md.
        ExecuteResponse::end(outcome, reason, 0)
    }
}
