//! The response side of a call: the node's head as HTTP, and its body
//! streamed to the client frame by frame.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::StatusCode;
use http::header::{HeaderMap, HeaderName};
use http_body::{Body, Frame, SizeHint};
use isolane_proto::Outcome;
use isolane_proto::call::Failed;
use isolane_proto::runtime::v1::{ResponseEnd, execute_response};
use tokio::time::Sleep;

use super::body::Source;
use super::outgoing::{is_always_hop_by_hop, is_hop_by_hop};
use crate::error::BoxError;
use crate::fleet::InFlight;
use crate::metrics::RouterMetrics;
use crate::routes::Backend;

/// Removes hop-by-hop headers from a node's answer: they describe the
/// node's connection, not the client's.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most answers have none, and no `Connection` header naming more: look
    // before allocating.
    let names_more = headers.contains_key(http::header::CONNECTION);
    if !names_more && !headers.keys().any(is_always_hop_by_hop) {
        return;
    }
    let hop: Vec<HeaderName> = headers
        .keys()
        .filter(|name| is_hop_by_hop(name, headers))
        .cloned()
        .collect();
    for name in hop {
        headers.remove(name);
    }
}

/// A node's `end` frame: the body failed unless its outcome is OK; after an
/// OK one the stream is read on to the gRPC trailers, so the call ends
/// cleanly rather than being reset by the router.
fn end_frame(end: ResponseEnd) -> Result<(), BodyError> {
    let outcome = Outcome::try_from(end.outcome).unwrap_or(Outcome::Unspecified);
    if outcome != Outcome::Ok {
        return Err(BodyError::Failed {
            outcome,
            reason: end.reason,
        });
    }
    Ok(())
}

/// What a response holds until its body is finished or dropped: the
/// node's in-flight slot, and the request's record in the metrics (none for
/// a request that does not count, such as a prewarm), written then.
#[derive(Debug)]
pub struct Completion {
    in_flight: InFlight,
    record: Option<Record>,
}

#[derive(Debug)]
struct Record {
    metrics: Arc<RouterMetrics>,
    backend: Arc<Backend>,
    revision: crate::split::Revision,
    status: StatusCode,
    started: Instant,
    /// The request's trace when sampled: the latency bucket's exemplar.
    trace: Option<isolane_telemetry::TraceId>,
}

impl Completion {
    /// A request answered with `status` by the node of `in_flight`, counted
    /// when it completes (with `trace`, a sampled request's, as the
    /// latency's exemplar).
    pub fn counted(
        in_flight: InFlight,
        metrics: Arc<RouterMetrics>,
        backend: Arc<Backend>,
        revision: crate::split::Revision,
        status: StatusCode,
        started: Instant,
        trace: Option<isolane_telemetry::TraceId>,
    ) -> Self {
        Self {
            in_flight,
            record: Some(Record {
                metrics,
                backend,
                revision,
                status,
                started,
                trace,
            }),
        }
    }

    /// A request that holds its node's in-flight slot and is not counted.
    pub fn uncounted(in_flight: InFlight) -> Self {
        Self {
            in_flight,
            record: None,
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        // Counted before the in-flight slot (a field) is released.
        if let Some(record) = &self.record {
            record.metrics.observe_node(
                Some(record.backend.served(&record.revision)),
                self.in_flight.series(),
                record.status,
                record.started.elapsed(),
                record.trace,
            );
        }
    }
}

/// A response body streamed from a node, over gRPC or in this process.
///
/// Ends cleanly only on the node's `end` frame with `OUTCOME_OK`; any other
/// end (a failed outcome, a broken stream, the router's deadline) is a body
/// error, so hyper aborts the client's response instead of ending it as if
/// complete. Holds the node's in-flight slot until it is finished or dropped.
///
/// A body of announced length is complete for the client with its last
/// byte, and hyper stops reading there; over gRPC the node's `end` frame
/// (its accounting, its admission permit) is then read at once when it is
/// ready, or by a small task after the body is dropped (a node in this
/// process counts such a body as complete when it is dropped). A body
/// dropped before its last byte (the client went away) is dropped with the
/// call, which cancels the request on the node.
pub struct UpstreamBody {
    source: Source,
    deadline: tokio::time::Instant,
    /// The deadline's timer, made the first time the body waits.
    sleep: Option<Pin<Box<Sleep>>>,
    /// Bytes still expected, when the node announced a length.
    remaining: Option<u64>,
    /// A whole answer's body, not yet handed to the client.
    whole: Option<Bytes>,
    /// The `end` frame was seen; waiting for the gRPC trailers.
    ended: bool,
    done: bool,
    metrics: Arc<RouterMetrics>,
    _completion: Completion,
}

impl std::fmt::Debug for UpstreamBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamBody")
            .field("remaining", &self.remaining)
            .field("ended", &self.ended)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Why a response body was aborted.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The node ended the body with a failed outcome.
    #[error("the worker's response failed midway: {outcome}: {reason}", outcome = outcome.label())]
    Failed {
        /// How it ended.
        outcome: Outcome,
        /// The node's detail.
        reason: String,
    },
    /// The gRPC stream broke.
    #[error("the node's stream broke: {0}")]
    Stream(tonic::Status),
    /// The stream ended without an `end` frame, or sent a second head.
    #[error("the node's stream is malformed: {0}")]
    Protocol(&'static str),
    /// The router's deadline passed while streaming.
    #[error("the request deadline passed while streaming the response")]
    Deadline,
}

impl BodyError {
    /// A bounded label for `isolane_router_upstream_errors_total`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Failed { .. } => "body_failed",
            Self::Stream(_) => "body_stream",
            Self::Protocol(_) => "protocol",
            Self::Deadline => "deadline",
        }
    }
}

impl UpstreamBody {
    /// The body that follows a response head.
    pub fn new(
        source: Source,
        deadline: tokio::time::Instant,
        body_length: Option<u64>,
        metrics: Arc<RouterMetrics>,
        completion: Completion,
    ) -> Self {
        // A whole answer's body is all there is: the call's close is read
        // as after an `end` frame.
        let (source, whole, remaining, ended) = match source {
            Source::Whole(body, rest) => {
                let length = Some(body.len() as u64);
                (Source::Frames(rest), Some(body), length, true)
            }
            source => (source, None, body_length, false),
        };
        Self {
            source,
            deadline,
            sleep: None,
            remaining,
            whole,
            ended,
            done: false,
            metrics,
            _completion: completion,
        }
    }

    /// After the last announced byte: reads the `end` frame and the
    /// stream's close if they are ready, without waiting.
    fn read_ahead(&mut self, cx: &mut Context<'_>) {
        let Source::Frames(stream) = &mut self.source else {
            // A node in this process counts a body read to its announced
            // length as complete when it is dropped.
            return;
        };
        while !self.done {
            match stream.as_mut().poll_next(cx) {
                Poll::Pending => return,
                Poll::Ready(Some(Ok(message))) => match message.frame {
                    Some(execute_response::Frame::End(end)) if !self.ended => {
                        self.ended = true;
                        if let Err(error) = end_frame(end) {
                            // Every byte was sent: nothing to abort, but count it.
                            self.metrics.upstream_error(error.kind());
                            self.done = true;
                        }
                    }
                    Some(execute_response::Frame::Body(chunk)) if chunk.is_empty() => {}
                    _ => {
                        self.metrics.upstream_error("protocol");
                        self.done = true;
                    }
                },
                Poll::Ready(Some(Err(_)) | None) => self.done = true,
            }
        }
    }

    /// The node's stream ended (`status`: with an error) before the body did.
    fn stream_closed(
        &mut self,
        status: Option<tonic::Status>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // After the `end` frame the body was complete: a reset while waiting
        // for the trailers does not matter.
        if self.ended {
            self.done = true;
            return Poll::Ready(None);
        }
        // Every announced byte went out: the client has its answer, and an
        // error now would only make hyper drop a connection the client
        // already reuses. Counted, not passed on.
        if self.remaining == Some(0) {
            self.metrics.upstream_error("body_stream");
            self.done = true;
            return Poll::Ready(None);
        }
        match status {
            Some(status) => self.fail(BodyError::Stream(status)),
            None => self.fail(BodyError::Protocol("stream closed before its end frame")),
        }
    }

    /// Whether the router's deadline has passed (arming its timer the first
    /// time the body waits).
    fn deadline_passed(&mut self, cx: &mut Context<'_>) -> bool {
        let deadline = self.deadline;
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        sleep.as_mut().poll(cx).is_ready()
    }

    /// The next frame of a body from a node in this process.
    fn poll_local(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Source::Local(body) = &mut self.source else {
            return Poll::Ready(None);
        };
        match body.as_mut().poll_frame(cx) {
            Poll::Pending if self.deadline_passed(cx) => self.fail(BodyError::Deadline),
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(Failed { outcome, reason }))) => {
                self.fail(BodyError::Failed { outcome, reason })
            }
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(remaining), Some(data)) = (self.remaining.as_mut(), frame.data_ref()) {
                    *remaining = remaining.saturating_sub(data.len() as u64);
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn fail(&mut self, error: BodyError) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.done = true;
        self.metrics.upstream_error(error.kind());
        tracing::debug!(%error, "response body aborted");
        Poll::Ready(Some(Err(error.into())))
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // Every announced byte reached the client, but not yet the node's end
        // frame: read it in the background so the node sees its request end.
        if self.done || self.remaining != Some(0) {
            return;
        }
        let Source::Frames(stream) = &mut self.source else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut stream = std::mem::replace(stream, Box::pin(futures::stream::empty()));
        runtime.spawn(async move {
            use futures::StreamExt as _;
            while stream.next().await.is_some() {}
        });
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(body) = this.whole.take() {
            this.remaining = Some(0);
            this.read_ahead(cx);
            return Poll::Ready(Some(Ok(Frame::data(body))));
        }
        let Source::Frames(stream) = &mut this.source else {
            return this.poll_local(cx);
        };
        loop {
            let message = match stream.as_mut().poll_next(cx) {
                Poll::Pending => {
                    if this.deadline_passed(cx) {
                        return this.fail(BodyError::Deadline);
                    }
                    return Poll::Pending;
                }
                Poll::Ready(None) => return this.stream_closed(None),
                Poll::Ready(Some(Err(status))) => return this.stream_closed(Some(status)),
                Poll::Ready(Some(Ok(message))) => message,
            };
            match message.frame {
                Some(execute_response::Frame::Body(chunk)) if !this.ended => {
                    if chunk.is_empty() {
                        continue;
                    }
                    if let Some(remaining) = this.remaining.as_mut() {
                        *remaining = remaining.saturating_sub(chunk.len() as u64);
                        if *remaining == 0 {
                            this.read_ahead(cx);
                        }
                    }
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Some(execute_response::Frame::End(end)) if !this.ended => {
                    if let Err(error) = end_frame(end) {
                        return this.fail(error);
                    }
                    this.ended = true;
                }
                _ => return this.fail(BodyError::Protocol("unexpected frame in the body")),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Past the last announced byte the client's message is complete; the
        // `end` frame is read ahead, or after the body is dropped (`Drop`).
        self.done || self.remaining == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            Some(n) if !self.done => SizeHint::with_exact(n),
            _ if self.done => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_stripped() {
        let mut plain = headers(&[("content-type", "text/plain"), ("x-a", "1")]);
        let before = plain.clone();
        strip_hop_by_hop(&mut plain);
        assert_eq!(plain, before);

        let mut fixed = headers(&[
            ("keep-alive", "5"),
            ("transfer-encoding", "chunked"),
            ("x-a", "1"),
        ]);
        strip_hop_by_hop(&mut fixed);
        assert_eq!(fixed, headers(&[("x-a", "1")]));

        let mut named = headers(&[
            ("connection", "x-private, close"),
            ("x-private", "1"),
            ("x-a", "1"),
        ]);
        strip_hop_by_hop(&mut named);
        assert_eq!(named, headers(&[("x-a", "1")]));
    }
}
