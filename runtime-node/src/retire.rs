//! Deleted Workers leave the engine at once: when a Worker's last bundle goes
//! from the [`BundleIndex`], its warm isolates on every engine thread are
//! dropped ([`Engine::retire`]), so what they held — up to the Worker's
//! memory limit each — is returned then, not when the pool's LRU or memory
//! budget gets to them. Used by the node and by `isolane dev` alike.

use std::sync::Arc;

use isolane_engine::Engine;
use tracing::debug;

use crate::bundles::BundleIndex;

/// Retires every worker that leaves `bundles`, until the index is dropped.
pub async fn retire_deleted(bundles: Arc<BundleIndex>, engine: Engine) {
    let mut changes = bundles.subscribe();
    let mut known = bundles.worker_ids();
    while changes.changed().await.is_ok() {
        let now = bundles.worker_ids();
        for gone in known.difference(&now) {
            debug!(worker.id = %gone, "retiring a deleted worker's isolates");
            engine.retire(gone).await;
        }
        known = now;
    }
}
