//! The cap on a request's body: a client's oversized upload is that
//! request's failure, answered `413 Payload Too Large` — never the Worker's
//! (no limit of its isolate is reached on the client's behalf, nothing is
//! held against it) and never another request's.
//!
//! A request whose `Content-Length` is over the cap is refused at once
//! ([`ExecuteError::BodyTooLarge`]), without touching an isolate. A body that
//! passes the cap while being read (chunked, or lying about its length)
//! breaks there: the Worker's read rejects, and unless the Worker answered by
//! itself, the request is refused the same way.
//! `EngineConfig::max_request_body_bytes` (node `--max-request-body-mib`).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use crate::body::{Body, BodyError};
use crate::outcome::ExecuteError;

/// A body over the cap, as its reader sees it.
#[derive(Debug, thiserror::Error)]
#[error("the request body is larger than {limit} bytes")]
pub(crate) struct TooLarge {
    limit: u64,
}

/// Whether a request's body broke at the cap.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tripped(Arc<AtomicBool>);

impl Tripped {
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Whether the request declares a body over `limit` (0: no cap).
pub(crate) fn declared_over(headers: &http::HeaderMap, limit: u64) -> bool {
    limit != 0
        && headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
            .is_some_and(|length| length > limit)
}

/// `body`, breaking once more than `limit` bytes came through.
pub(crate) fn cap(body: Body, limit: u64) -> (Body, Tripped) {
    let tripped = Tripped::default();
    if limit == 0 {
        return (body, tripped);
    }
    let capped = Capped {
        inner: body,
        left: limit,
        limit,
        tripped: tripped.clone(),
    };
    (Body::wrap(capped), tripped)
}

/// The engine's refusal of a body over the cap.
pub(crate) fn refusal(limit: u64) -> ExecuteError {
    ExecuteError::BodyTooLarge { limit }
}

struct Capped {
    inner: Body,
    left: u64,
    limit: u64,
    tripped: Tripped,
}

impl http_body::Body for Capped {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.tripped.get() {
            return Poll::Ready(None);
        }
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let len = frame.data_ref().map_or(0, |data| data.len() as u64);
        if len > self.left {
            self.tripped.0.store(true, Ordering::Relaxed);
            let limit = self.limit;
            return Poll::Ready(Some(Err(BodyError::Source(Box::new(TooLarge { limit })))));
        }
        self.left -= len;
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.tripped.get() || http_body::Body::is_end_stream(&self.inner)
    }

    fn size_hint(&self) -> SizeHint {
        http_body::Body::size_hint(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_breaks_past_the_cap_and_says_so() {
        let (sender, body) = Body::channel(4);
        let (mut body, tripped) = cap(body, 10);
        tokio::spawn(async move {
            for _ in 0..3 {
                if sender.send(Bytes::from_static(b"12345")).await.is_err() {
                    return;
                }
            }
        });
        assert_eq!(body.next_chunk().await.unwrap().unwrap().len(), 5);
        assert_eq!(body.next_chunk().await.unwrap().unwrap().len(), 5);
        assert!(!tripped.get(), "exactly the cap passes");
        assert!(body.next_chunk().await.unwrap().is_err());
        assert!(tripped.get());
        assert!(body.next_chunk().await.is_none());
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(11));
        assert!(declared_over(&headers, 10));
        assert!(!declared_over(&headers, 0), "0 is no cap");
        assert!(!declared_over(&headers, 11));
        assert_eq!(refusal(10).status(), 413);
    }
}
