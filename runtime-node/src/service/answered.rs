//! [`Answered`]: a response on its way out of the node, whichever way it
//! travels (gRPC frames, or handed to a router in this process). It streams
//! the engine's body, ends it at the router's deadline, and counts the call
//! in `isolane_node_requests_total` exactly once, holding its admission
//! permit until it is dropped.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use isolane_engine::{Body, BodyError};
use isolane_proto::Outcome;
use isolane_proto::call::Failed;
use tokio::time::{Instant, Sleep};

use crate::admission::Permit;
use crate::metrics::NodeMetrics;

/// The body of an answer, counted once.
///
/// How the call is counted: the head's outcome when the body ends, the
/// failure's when it fails; `canceled` when it is dropped before its end,
/// unless nothing was left to send (every announced byte was read — a
/// reader may stop there — or the request was a HEAD, whose body nobody
/// reads).
pub struct Answered {
    body: Body,
    /// The head's outcome.
    outcome: Outcome,
    deadline: Option<Instant>,
    /// The deadline's timer, made the first time the body waits.
    sleep: Option<Pin<Box<Sleep>>>,
    /// Bytes still to send, when the length was announced.
    remaining: Option<u64>,
    /// A HEAD request: the body is never read.
    head_only: bool,
    metrics: Arc<NodeMetrics>,
    thread: usize,
    /// Whether the call has been counted.
    counted: bool,
    /// Held until this body is dropped — over gRPC, until the response
    /// stream is done with, end frame included — so a draining node does not
    /// see the call finished (and close its server) before its last frames
    /// went out.
    _permit: Permit,
}

impl Answered {
    /// The body of a response to a call admitted with `permit`, whose
    /// head says `outcome`.
    pub fn new(
        body: Body,
        outcome: Outcome,
        permit: Permit,
        metrics: Arc<NodeMetrics>,
        deadline: Option<Instant>,
        head_only: bool,
    ) -> Self {
        Self {
            remaining: http_body::Body::size_hint(&body).exact(),
            body,
            outcome,
            deadline,
            sleep: None,
            head_only,
            metrics,
            thread: permit.thread(),
            counted: false,
            _permit: permit,
        }
    }

    /// Counts the call as `outcome` and releases the Worker's body (and its
    /// writer).
    fn finish(&mut self, outcome: Outcome) {
        if !self.counted {
            self.counted = true;
            self.metrics.request(self.thread, outcome.label());
        }
        self.body = Body::empty();
    }

    fn fail(&mut self, outcome: Outcome, reason: String) -> Failed {
        self.finish(outcome);
        Failed { outcome, reason }
    }

    fn done(&self) -> bool {
        self.counted
    }

    /// Whether the router's deadline has passed (arming its timer the first
    /// time the body waits).
    fn deadline_passed(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(deadline) = self.deadline else {
            return false;
        };
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        sleep.as_mut().poll(cx).is_ready()
    }
}

impl http_body::Body for Answered {
    type Data = Bytes;
    type Error = Failed;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Failed>>> {
        let this = self.get_mut();
        if this.done() {
            return Poll::Ready(None);
        }
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers are not sent on.
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    if data.is_empty() {
                        continue;
                    }
                    if let Some(remaining) = this.remaining.as_mut() {
                        *remaining = remaining.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(Some(Err(error))) => {
                    // A Worker's stream that threw or was cut by a limit (the
                    // engine aborts it with the reason), or an upstream body
                    // that failed.
                    let outcome = match error {
                        BodyError::Aborted { .. } => Outcome::Exception,
                        BodyError::Source(_) => Outcome::Internal,
                    };
                    return Poll::Ready(Some(Err(this.fail(outcome, error.to_string()))));
                }
                Poll::Ready(None) => {
                    this.finish(this.outcome);
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    if this.deadline_passed(cx) {
                        let reason = "the router's deadline passed while streaming".to_owned();
                        return Poll::Ready(Some(Err(this.fail(Outcome::WallTimeout, reason))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done() || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.done() {
            SizeHint::with_exact(0)
        } else {
            self.body.size_hint()
        }
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        if self.done() {
            return;
        }
        let complete = self.head_only || self.remaining == Some(0);
        self.finish(if complete {
            self.outcome
        } else {
            Outcome::Canceled
        });
    }
}
