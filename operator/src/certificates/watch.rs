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
            let group = owner.api_version.split_once('/').map(|(group, _)| group);
            owner.kind == "Worker" && group == Some(isolane_crds::GROUP)
        })
        .map(|owner| WorkerKey::new(&namespace, &owner.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(metadata: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": metadata,
        }))
        .unwrap()
    }

    #[test]
    fn a_certificate_reconciles_its_worker_or_its_owners() {
        let own = certificate(serde_json::json!({
            "name": "c", "namespace": "team-a", "labels": {WORKER_LABEL: "shop"},
        }));
        assert_eq!(workers_of(&own), [WorkerKey::new("team-a", "shop")]);
        let owner = |kind: &str, name: &str| serde_json::json!({"apiVersion": "isolane.dev/v1alpha1", "kind": kind, "name": name, "uid": name});
        let shared = certificate(serde_json::json!({
            "name": "w", "namespace": "team-a", "labels": {WILDCARD_LABEL: "true"},
            "ownerReferences": [owner("Worker", "a"), owner("ConfigMap", "x"), owner("Worker", "b")],
        }));
        let expected = [WorkerKey::new("team-a", "a"), WorkerKey::new("team-a", "b")];
        assert_eq!(workers_of(&shared), expected);
    }
}
