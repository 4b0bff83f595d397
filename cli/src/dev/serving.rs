//! What `isolane dev` serves now: the in-process node's bundle index and the
//! proxy's route table, both set from a [`Project`] at start and on reload.

use std::sync::Arc;

use isolane_node::BundleIndex;
use isolane_router::Proxy;

use super::project::Project;

/// The bundle index and the proxy that serve a [`Project`].
#[derive(Debug, Clone)]
pub struct Serving {
    bundles: Arc<BundleIndex>,
    proxy: Proxy,
}

impl Serving {
    pub fn new(bundles: Arc<BundleIndex>, proxy: Proxy) -> Self {
        Self { bundles, proxy }
    }

    /// Serves `project`. Its revisions go to the bundle index as a bundle
    /// Secret rewritten in place would on a node: a Worker's previous
    /// revisions stay (superseded) for requests already routed to them. Its
    /// routes go to the proxy, whose prewarm gate moves a Worker's traffic
    /// to a new revision once that revision is compiled on its thread. A
    /// Worker's static assets go with its bundle: the node answers them
    /// before the engine, and `env.<assets.binding>` answers from them, as
    /// on a node in a cluster.
    pub fn apply(&self, project: &Project) {
        let bundles = project
            .workers
            .iter()
            .map(|w| {
                let key = format!("dev:{}", w.bundle.worker_id);
                let bundle = w.bundle.clone().with_assets(w.assets.clone());
                (key, isolane_node::worker_bundle(bundle))
            })
            .collect();
        self.bundles.replace_all(bundles);
        for worker in &project.workers {
            tracing::info!(
                worker.id = %worker.bundle.worker_id,
                revision = %worker.bundle.revision,
                routes = ?worker.routes,
                assets = worker.assets.as_ref().map_or(0, |a| a.len()),
                "serving"
            );
        }
        self.proxy.set_workers(project.routable());
    }

    /// Serves `project` after a change, logging what changed.
    pub fn reload(&self, project: &Project) {
        let before = self.proxy.published();
        let changed = project
            .workers
            .iter()
            .filter(|w| {
                !before.iter().any(|old| {
                    *old.key() == w.key && old.split.main_revision() == w.bundle.revision
                })
            })
            .count();
        tracing::info!(workers = project.workers.len(), changed, "reloading");
        self.apply(project);
    }
}
