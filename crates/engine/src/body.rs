//! [`Body`]: the streaming body of requests and responses.
//!
//! Bodies move in chunks over bounded channels and are never buffered whole:
//! a streamed response blocks its writer (JS `responseWrite` back-pressure)
//! while the reader is slow, and a request body is read chunk by chunk as the
//! worker asks for it.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::mpsc;

type BoxError = Box<dyn StdError + Send + Sync + 'static>;
type BoxBody = Pin<Box<dyn http_body::Body<Data = Bytes, Error = BodyError> + Send + 'static>>;

/// A streaming HTTP body: empty, one buffer, a channel of chunks, or any
/// wrapped `http_body::Body` (e.g. hyper's `Incoming`).
pub struct Body {
    inner: Inner,
}

enum Inner {
    Empty,
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<Result<Bytes, BodyError>>),
    Boxed(BoxBody),
}

/// Why a body stream broke.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The writer aborted the stream (a worker's `responseEnd` with an error).
    #[error("body stream aborted: {message}")]
    Aborted { message: String },
    /// The wrapped body failed (e.g. the client went away mid-upload).
    #[error("reading the body failed")]
    Source(#[source] BoxError),
}

/// The reader of a channel body is gone.
#[derive(Debug, thiserror::Error)]
#[error("the body's reader is gone")]
pub struct BodyClosed;

/// The writing half of [`Body::channel`].
#[derive(Debug, Clone)]
pub struct BodySender {
    tx: mpsc::Sender<Result<Bytes, BodyError>>,
}

// === impl Body ===

impl Body {
    pub fn empty() -> Self {
        Self {
            inner: Inner::Empty,
        }
    }

    /// A body fed chunk by chunk through the returned sender; at most
    /// `capacity` chunks wait between writer and reader.
    pub fn channel(capacity: usize) -> (BodySender, Body) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (
            BodySender { tx },
            Body {
                inner: Inner::Channel(rx),
            },
        )
    }

    /// Wraps any `http_body::Body` (hyper's `Incoming`, a tonic stream …).
    pub fn wrap<B>(body: B) -> Self
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let mapped = body
            .map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
            .map_err(|error| BodyError::Source(error.into()));
        Self {
            inner: Inner::Boxed(Box::pin(mapped)),
        }
    }

    /// The whole body when it is one buffer of at most `max` bytes, taken
    /// without a read; the body as it was otherwise.
    pub fn whole(self, max: usize) -> Result<Bytes, Self> {
        match self.inner {
            Inner::Full(Some(bytes)) if bytes.len() <= max => Ok(bytes),
            inner => Err(Self { inner }),
        }
    }

    /// The next data chunk (trailers are skipped), or `None` at the end.
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes, BodyError>> {
        loop {
            match self.frame().await? {
                Ok(frame) => match frame.into_data() {
                    Ok(data) if data.is_empty() => continue,
                    Ok(data) => return Some(Ok(data)),
                    Err(_trailers) => continue,
                },
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.inner {
            Inner::Empty => "empty",
            Inner::Full(_) => "full",
            Inner::Channel(_) => "channel",
            Inner::Boxed(_) => "wrapped",
        };
        f.debug_struct("Body").field("kind", &kind).finish()
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Self {
            inner: Inner::Full(Some(bytes)),
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes::from(bytes).into()
    }
}

impl From<String> for Body {
    fn from(s: String) -> Self {
        Bytes::from(s).into()
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Self {
        Bytes::from_static(s.as_bytes()).into()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match &mut self.inner {
            Inner::Empty => Poll::Ready(None),
            Inner::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Channel(rx) => rx
                .poll_recv(cx)
                .map(|chunk| chunk.map(|result| result.map(Frame::data))),
            Inner::Boxed(body) => body.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Empty => true,
            Inner::Full(bytes) => bytes.is_none(),
            Inner::Channel(_) => false,
            Inner::Boxed(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Empty => SizeHint::with_exact(0),
            Inner::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Inner::Channel(_) => SizeHint::default(),
            Inner::Boxed(body) => body.size_hint(),
        }
    }
}

// === impl BodySender ===

impl BodySender {
    /// Sends one chunk, waiting while the channel is full (back-pressure).
    pub async fn send(&self, chunk: Bytes) -> Result<(), BodyClosed> {
        self.tx.send(Ok(chunk)).await.map_err(|_| BodyClosed)
    }

    /// Ends the stream with an error the reader will see.
    pub async fn abort(&self, message: String) {
        // The reader may be gone already; then there is nobody to tell.
        let _ = self.tx.send(Err(BodyError::Aborted { message })).await;
    }

    /// Whether the reader has gone away.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Completes once the reader has gone away.
    pub async fn closed(&self) {
        self.tx.closed().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn channel_bodies_stream_in_order() {
        let (tx, mut body) = Body::channel(1);
        let writer = tokio::spawn(async move {
            for i in 0..3u8 {
                tx.send(Bytes::from(vec![i])).await.unwrap();
            }
        });
        let mut got = Vec::new();
        while let Some(chunk) = body.next_chunk().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        writer.await.unwrap();
        assert_eq!(got, vec![0, 1, 2]);
    }

    #[tokio::test]
    async fn wrapped_bodies_read_through() {
        let inner = http_body_util::Full::new(Bytes::from_static(b"hello"));
        let body = Body::wrap(inner);
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(&collected[..], b"hello");
    }
}
