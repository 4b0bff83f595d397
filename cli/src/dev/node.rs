//! The runtime node of `isolane dev`, in process: the node's own call path
//! (admission per thread, the bundle index, outcome mapping, node metrics)
//! over the engine, handed the proxy's calls as they are — no connection,
//! no frames. A Worker's static assets answer first (`crate::assets`): only
//! what they leave to the Worker reaches the node.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use futures::future::BoxFuture;
use http_body_util::BodyExt as _;
use isolane_engine::Body;
use isolane_node::NodeService;
use isolane_proto::call::{Answer, AnswerBody, Call, Failed};
use isolane_router::proxy::{CallBody, LocalNode};

use isolane_assets::{Answered, Site};

/// The node's name in `x-isolane-node` and the metrics.
pub const NODE_NAME: &str = "local";

/// Each Worker's static assets, by Worker id; set from the project at
/// start and on reload (`serving.rs`).
pub type AssetsByWorker = Arc<ArcSwap<HashMap<String, Arc<Site>>>>;

/// [`NodeService`] as the proxy's [`LocalNode`], behind the Workers' assets.
#[derive(Debug, Clone)]
pub struct InProcessNode {
    pub service: NodeService,
    pub assets: AssetsByWorker,
}

impl LocalNode for InProcessNode {
    fn call(
        &self,
        call: Call,
        body: CallBody,
    ) -> BoxFuture<'static, Result<(Answer, AnswerBody), tonic::Status>> {
        if call.scheduled.is_none()
            && !call.prewarm
            && let Some(assets) = self.assets.load().get(&call.worker_id)
            && let Some(answered) = assets.answer(&call.request)
        {
            return Box::pin(std::future::ready(Ok(answer(answered))));
        }
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
}

/// An asset's (or a redirect's, or a bare 404's) answer, as the node's.
fn answer(answered: Answered) -> (Answer, AnswerBody) {
    let length = answered.body.len() as u64;
    let head = Answer::ok(answered.status, answered.headers, length);
    let body = http_body_util::Full::new(answered.body)
        .map_err(|never: std::convert::Infallible| -> Failed { match never {} });
    (head, Box::pin(body) as AnswerBody)
}
