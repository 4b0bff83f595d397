//! A Worker's static assets answered on the node, before the engine: when
//! its bundle has assets (its artifact's assets layer, or `isolane dev`'s
//! project folder), a client's request is decided by `isolane-assets`
//! first, and an asset, a redirect, a 304 or a bare 404 is answered from
//! memory: no isolate, no CPU charged to the Worker. What the assets leave
//! to the Worker (`run_worker_first`, a path no asset answers) goes on to
//! the engine as any request.

use isolane_assets::Answered as FromAssets;
use isolane_engine::{Body, WorkerBundle};
use isolane_proto::call::{Answer, Call};

/// The assets' answer to `call`, when they answer it.
pub(super) fn answer(call: &Call, bundle: &WorkerBundle) -> Option<FromAssets> {
    if call.prewarm || call.scheduled.is_some() {
        return None;
    }
    bundle.assets.as_ref()?.0.answer(&call.request)
}

/// The head and body the node sends for the assets' answer.
pub(super) fn head_and_body(answered: FromAssets) -> (Answer, Body) {
    let length = answered.body.len() as u64;
    let head = Answer::ok(answered.status, answered.headers, length);
    (head, Body::wrap(http_body_util::Full::new(answered.body)))
}
