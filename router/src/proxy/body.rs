//! The bodies of a call, as the proxy's modules hand them to each other:
//! the request frames sent to a node over gRPC ([`FrameStream`]), the
//! request body handed to a node in this process ([`CallBody`]), and the
//! answer's body as it comes back ([`Source`]). They are plain types here,
//! below the modules that make them (`outgoing.rs`) and use them
//! (`upstream.rs`, `response.rs`, `socket.rs`), so that none of those needs
//! another to name them.

use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use isolane_proto::call::AnswerBody;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse};
use tonic::Status;

use crate::error::BoxError;

/// The response frames of one gRPC call.
pub type ResponseFrames = Pin<Box<dyn Stream<Item = Result<ExecuteResponse, Status>> + Send>>;

/// A call's request body, as handed to a node in this process.
pub type CallBody = UnsyncBoxBody<Bytes, BoxError>;

/// The request frames of one attempt, as tonic sends them.
///
/// A named type rather than a boxed `dyn Stream` in tonic's generic call: with
/// the trait object there, rustc cannot prove the call's future `Send` (a
/// higher-ranked lifetime limitation), and the server needs it `Send`.
pub struct FrameStream(pub(super) Pin<Box<dyn Stream<Item = ExecuteRequest> + Send + 'static>>);

impl Stream for FrameStream {
    type Item = ExecuteRequest;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<ExecuteRequest>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl FrameStream {
    /// These frames, then `rest`'s.
    pub fn then(self, rest: impl Stream<Item = ExecuteRequest> + Send + 'static) -> Self {
        Self(Box::pin(self.0.chain(rest)))
    }
}

impl std::fmt::Debug for FrameStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameStream")
    }
}

/// An answer's body, as it comes from the node.
pub enum Source {
    /// The rest of a gRPC call's response frames.
    Frames(ResponseFrames),
    /// A gRPC call's whole body, sent with its head (`whole`), and the rest
    /// of the call, where only its close is left.
    Whole(Bytes, ResponseFrames),
    /// The body a node in this process gave.
    Local(AnswerBody),
}
