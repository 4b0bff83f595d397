//! Constructors for the stream frames, so callers need not spell out the
//! `oneof` wrapping.

use prost::bytes::Bytes;

use crate::runtime::v1::{
    BodyEnd, ExecuteRequest, ExecuteResponse, Header, Outcome, RequestHead, ResponseEnd,
    ResponseHead, execute_request, execute_response,
};

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
}

// === impl ExecuteResponse ===

impl ExecuteResponse {
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
