//! The runtime node of `isolane dev`, in process: the node's own `Execute`
//! service (admission per thread, the bundle index, outcome mapping, node
//! metrics) over the engine, handed the proxy's frames without a
//! connection.

use futures::StreamExt as _;
use futures::future::BoxFuture;
use isolane_node::NodeService;
use isolane_router::proxy::{FrameStream, LocalNode, ResponseFrames};

/// The node's name in `x-isolane-node` and the metrics.
pub const NODE_NAME: &str = "local";

/// [`NodeService`] as the proxy's [`LocalNode`]. Its response frames are
/// produced as the proxy reads them (the proxy reads a finished body's end
/// frame too: `UpstreamBody`).
#[derive(Debug, Clone)]
pub struct InProcessNode(pub NodeService);

impl LocalNode for InProcessNode {
    fn execute(
        &self,
        frames: FrameStream,
    ) -> BoxFuture<'static, Result<ResponseFrames, tonic::Status>> {
        let service = self.0.clone();
        Box::pin(async move { service.execute_frames(Box::pin(frames.map(Ok))).await })
    }
}
