//! Reconciles a Worker when one of its Certificates changes (cert-manager
//! writes their status as issuance goes), so its condition follows: its
//! own (labelled with its name), and the wildcard Certificates of its
//! namespace it owns (each of their owners).

use futures::StreamExt;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use super::{WILDCARD_LABEL, WORKER_LABEL, certificate_resource};
use crate::routes::WorkerKey;
use crate::triggers::Triggers;

/// Watches the operator's Certificates (in every namespace) until the
/// streams end, sending their Workers to `triggers`.
pub async fn run(client: Client, triggers: Triggers) {
    let api: Api<DynamicObject> = Api::all_with(client, &certificate_resource());
    let per_host = watcher::Config::default().labels(WORKER_LABEL);
    let wildcard = watcher::Config::default().labels(WILDCARD_LABEL);
    let per_host = watcher::watcher(api.clone(), per_host).default_backoff();
    let wildcard = watcher::watcher(api, wildcard).default_backoff();
    let mut events = futures::stream::select(per_host, wildcard).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(
                watcher::Event::Apply(c) | watcher::Event::Delete(c) | watcher::Event::InitApply(c),
            ) => triggers.workers(workers_of(&c)),
            Ok(_) => {}
            Err(error) => {
                warn!(%error, "Certificate watch failed; retrying");
            }
        }
    }
}

/// The Workers whose condition reads `certificate`: the one it is labelled
/// with, or (a wildcard Certificate) the Workers owning it.
fn workers_of(certificate: &DynamicObject) -> Vec<WorkerKey> {
    let Some(namespace) = certificate.namespace() else {
        return Vec::new();
    };
    if let Some(worker) = certificate.labels().get(WORKER_LABEL) {
        return vec![WorkerKey::new(&namespace, worker)];
    }
    certificate
        .owner_references()
        .iter()
        .filter(|owner| {
            owner.kind == "Worker" && owner.api_version.starts_with(isolane_crds::GROUP)
        })
        .map(|owner| WorkerKey::new(&namespace, &owner.name))
        .collect()
}
