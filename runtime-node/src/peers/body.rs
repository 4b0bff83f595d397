//! The body of a peer node's answer: its `body` frames, streamed, until
//! its `end`.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use http_body::Frame;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::ExecuteResponse;
use isolane_proto::runtime::v1::execute_response::Frame as Message;

/// Why a peer's answer body broke.
#[derive(Debug, thiserror::Error)]
pub enum PeerBodyError {
    #[error("the owner node's answer ended without its end: {0}")]
    Truncated(String),
    #[error("the owner node's answer failed: {0}")]
    Failed(String),
}

/// A peer's answer body.
pub struct PeerBody {
    stream: tonic::Streaming<ExecuteResponse>,
    ended: bool,
}

impl PeerBody {
    pub fn new(stream: tonic::Streaming<ExecuteResponse>) -> Self {
        Self {
            stream,
            ended: false,
        }
    }
}

impl http_body::Body for PeerBody {
    type Data = Bytes;
    type Error = PeerBodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, PeerBodyError>>> {
        while !self.ended {
            let message = match Pin::new(&mut self.stream).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(message) => message,
            };
            let frame = match message {
                Some(Ok(ExecuteResponse { frame })) => frame,
                Some(Err(status)) => {
                    self.ended = true;
                    let reason = format!("{:?}: {}", status.code(), status.message());
                    return Poll::Ready(Some(Err(PeerBodyError::Truncated(reason))));
                }
                None => {
                    self.ended = true;
                    let reason = "the stream closed".to_owned();
                    return Poll::Ready(Some(Err(PeerBodyError::Truncated(reason))));
                }
            };
            match frame {
                Some(Message::Body(chunk)) if !chunk.is_empty() => {
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Some(Message::End(end)) => {
                    self.ended = true;
                    if end.outcome() == Outcome::Ok {
                        return Poll::Ready(None);
                    }
                    let reason = format!("{} ({})", end.reason, end.outcome().label());
                    return Poll::Ready(Some(Err(PeerBodyError::Failed(reason))));
                }
                _ => {}
            }
        }
        Poll::Ready(None)
    }
}
