//! Reconciles a Worker when one of its Certificates changes (cert-manager
//! writes their status as issuance goes), so its condition follows.

use futures::StreamExt;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use super::{WORKER_LABEL, certificate_resource};
use crate::routes::WorkerKey;
use crate::triggers::Triggers;

/// Watches the operator's Certificates (in every namespace) until the
/// stream ends, sending their Workers to `triggers`.
pub async fn run(client: Client, triggers: Triggers) {
    let api: Api<DynamicObject> = Api::all_with(client, &certificate_resource());
    let config = watcher::Config::default().labels(WORKER_LABEL);
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(
                watcher::Event::Apply(c) | watcher::Event::Delete(c) | watcher::Event::InitApply(c),
            ) => {
                let worker = c.labels().get(WORKER_LABEL).cloned();
                if let (Some(namespace), Some(worker)) = (c.namespace(), worker) {
                    triggers.workers(vec![WorkerKey::new(&namespace, &worker)]);
                }
            }
            Ok(_) => {}
            Err(error) => {
                warn!(%error, "Certificate watch failed; retrying");
            }
        }
    }
}
