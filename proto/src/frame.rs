//! Constructors for the stream frames, so callers need not spell out the
//! `oneof` wrapping.

use prost::bytes::Bytes;

use crate::runtime::v1::{
    BodyEnd, ExecuteRequest, ExecuteResponse, Header, Outcome, RequestHead, ResponseEnd,
    ResponseHead, SocketAck, SocketFrame, WholeAnswer, execute_request, execute_response,
};
use crate::socket::SocketMessage;

// === impl Header ===

impl Header {
    /// A header with `name` (lower-cased by the caller) and raw `value`.
    pub fn new(name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

// === impl ExecuteRequest ===

impl ExecuteRequest {
    /// The first frame of a request.
    pub fn head(head: RequestHead) -> Self {
        Self {
            frame: Some(execute_request::Frame::Head(head)),
        }
    }

    /// A body chunk.
    pub fn body(chunk: impl Into<Bytes>) -> Self {
        Self {
            frame: Some(execute_request::Frame::Body(chunk.into())),
        }
    }

    /// The end of the request body.
    pub fn end() -> Self {
        Self {
            frame: Some(execute_request::Frame::End(BodyEnd {})),
        }
    }

    /// A WebSocket message from the client, after a 101 answer.
    pub fn socket(message: SocketMessage) -> Self {
        Self {
            frame: Some(execute_request::Frame::Socket(SocketFrame::from(message))),
        }
    }
}

// === impl ExecuteResponse ===

impl ExecuteResponse {
    /// Whether nothing of the call follows this frame: an end or a whole
    /// answer (not a head, a body chunk or a socket's message).
    pub fn ends_call(&self) -> bool {
        matches!(
            self.frame,
            Some(execute_response::Frame::End(_) | execute_response::Frame::Whole(_)) | None
        )
    }

    /// The first frame of a response.
    pub fn head(head: ResponseHead) -> Self {
        Self {
            frame: Some(execute_response::Frame::Head(head)),
        }
    }

    /// A body chunk.
    pub fn body(chunk: impl Into<Bytes>) -> Self {
        Self {
            frame: Some(execute_response::Frame::Body(chunk.into())),
        }
    }

    /// The head and the whole body in one message, for a caller that set
    /// `whole_answer`.
    pub fn whole(head: ResponseHead, body: impl Into<Bytes>) -> Self {
        Self {
            frame: Some(execute_response::Frame::Whole(WholeAnswer {
                head: Some(head),
                body: body.into(),
            })),
        }
    }

    /// A WebSocket message from the Worker, after a 101 head.
    pub fn socket(message: SocketMessage) -> Self {
        Self {
            frame: Some(execute_response::Frame::Socket(SocketFrame::from(message))),
        }
    }

    /// After a 101 head: the node took `messages` more of the client's
    /// messages.
    pub fn socket_ack(messages: u32) -> Self {
        Self {
            frame: Some(execute_response::Frame::SocketAck(SocketAck { messages })),
        }
    }

    /// The last frame: how the request finished.
    pub fn end(outcome: Outcome, reason: impl Into<String>, cpu_time_us: u64) -> Self {
        Self {
            frame: Some(execute_response::Frame::End(ResponseEnd {
                outcome: outcome.into(),
                reason: reason.into(),
                cpu_time_us,
            })),
        }
    }
}
