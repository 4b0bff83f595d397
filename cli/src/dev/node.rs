//! The runtime node of `isolane dev`, in process: the node's own `Execute`
//! service (admission per thread, the bundle index, outcome mapping, node
//! metrics) over the engine, handed the proxy's frames without a
//! connection.

use futures::StreamExt as _;
use futures::future::BoxFuture;
use isolane_node::NodeService;
use isolane_router::proxy::{FrameStream, LocalNode, ResponseFrames};
use tokio::sync::mpsc;

/// The node's name in `x-isolane-node` and the metrics.
pub const NODE_NAME: &str = "local";

/// Response frames produced ahead of the proxy's reading, as a gRPC
/// server's flow-control window lets a node run ahead of the router.
const AHEAD: usize = 2;

/// [`NodeService`] as the proxy's [`LocalNode`].
#[derive(Debug, Clone)]
pub struct InProcessNode(pub NodeService);

impl LocalNode for InProcessNode {
    fn execute(
        &self,
        frames: FrameStream,
    ) -> BoxFuture<'static, Result<ResponseFrames, tonic::Status>> {
        let service = self.0.clone();
        Box::pin(async move {
            let mut response = service.execute_frames(Box::pin(frames.map(Ok))).await?;
            // The node's answer runs to its end frame on its own, as a gRPC
            // server sends it: the proxy stops reading once the client has
            // every byte of a body of known length, and the node must still
            // see the request end (its accounting, its permit). A proxy
            // that goes away (the client left) stops it.
            let (sender, receiver) = mpsc::channel(AHEAD);
            tokio::spawn(async move {
                while let Some(frame) = response.next().await {
                    if sender.send(frame).await.is_err() {
                        break;
                    }
                }
            });
            let frames = futures::stream::unfold(receiver, |mut receiver| async move {
                let frame = receiver.recv().await?;
                Some((frame, receiver))
            });
            Ok(Box::pin(frames) as ResponseFrames)
        })
    }
}
