//! The runtime node of `isolane dev`, in process: the node's own call path
//! (admission per thread, the bundle index, outcome mapping, node metrics)
//! over the engine, handed the proxy's calls as they are — no connection,
//! no frames. A Worker's static assets travel in its bundle and are
//! answered by the node's own call path, before the engine.

use futures::future::BoxFuture;
use isolane_engine::{Body, Engine};
use isolane_node::NodeService;
use isolane_proto::call::{Answer, AnswerBody, Call};
use isolane_router::proxy::{CallBody, LocalNode};

/// The node's name in `x-isolane-node` and the metrics.
pub const NODE_NAME: &str = "local";

/// [`NodeService`] as the proxy's [`LocalNode`].
#[derive(Debug, Clone)]
pub struct InProcessNode {
    pub service: NodeService,
    /// The engine the service runs on.
    pub engine: Engine,
}

impl LocalNode for InProcessNode {
    fn call(
        &self,
        call: Call,
        body: CallBody,
    ) -> BoxFuture<'static, Result<(Answer, AnswerBody), tonic::Status>> {
        let service = self.service.clone();
        let body = if call.bodyless() {
            Body::empty()
        } else {
            Body::wrap(body)
        };
        Box::pin(async move {
            let (answer, body) = service.call(call, body).await?;
            Ok((answer, Box::pin(body) as AnswerBody))
        })
    }

    fn may_spread(&self, namespace: &str) -> bool {
        !self.engine.runs_long_turns(namespace)
    }
}
