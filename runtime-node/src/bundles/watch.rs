//! The watch on bundle Secrets: only those labelled `isolane.dev/bundle=true`
//! in the node's own namespace (least privilege: list and watch Secrets in
//! one namespace). A malformed Secret is logged and counted, and the worker's
//! previous good revision stays.

use std::sync::Arc;

use futures::StreamExt;
use isolane_engine::WorkerBundle;
use isolane_worker::{BUNDLE_KEY, BUNDLE_LABEL, BundleSecret, SecretError};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use super::pull::Puller;
use super::{BundleIndex, worker_bundle};
use crate::metrics::NodeMetrics;

/// Why a bundle Secret cannot be run (the decoding is the vocabulary's,
/// `isolane_worker::BundleSecret::decode`, the inverse of what the operator
/// writes).
pub type BundleError = SecretError;

/// The bundle a Secret holds.
pub fn parse_secret(secret: &Secret) -> Result<WorkerBundle, BundleError> {
    let data = secret
        .data
        .as_ref()
        .and_then(|data| data.get(BUNDLE_KEY))
        .map(|data| data.0.as_slice());
    let bundle = BundleSecret::decode(&secret.name_any(), secret.annotations(), data)?;
    Ok(worker_bundle(bundle))
}

/// Watches the bundle Secrets of `namespace` into `index` until dropped.
/// Watch errors are logged and retried with kube's default backoff. A
/// bundle that names an artifact is pulled (or read from the cache) before
/// it is added; the watch waits for the pull, bounded by the registry
/// client's timeouts (docs/bundles.md).
pub async fn watch_bundles(
    client: kube::Client,
    namespace: String,
    index: Arc<BundleIndex>,
    metrics: Arc<NodeMetrics>,
    puller: Arc<Puller>,
) {
    let api = Api::<Secret>::namespaced(client, &namespace);
    let selector = format!("{BUNDLE_LABEL}=true");
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher(api, config).default_backoff().boxed();
    // Bundles of a relist, applied at once when it is complete.
    let mut relist: Vec<(String, WorkerBundle)> = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Init) => relist.clear(),
            Ok(watcher::Event::InitApply(secret)) => {
                if let Some(bundle) = checked(&secret, &metrics, &puller).await {
                    relist.push((secret.name_any(), bundle));
                }
            }
            Ok(watcher::Event::InitDone) => {
                let bundles = std::mem::take(&mut relist);
                tracing::info!(%namespace, bundles = bundles.len(), "bundles listed");
                index.replace_all(bundles);
            }
            Ok(watcher::Event::Apply(secret)) => {
                if let Some(bundle) = checked(&secret, &metrics, &puller).await {
                    tracing::info!(worker.id = %bundle.id, revision = %bundle.revision, "bundle loaded");
                    metrics.bundle_event("applied");
                    index.insert(&secret.name_any(), bundle);
                }
            }
            Ok(watcher::Event::Delete(secret)) => {
                tracing::info!(secret = %secret.name_any(), "bundle removed");
                metrics.bundle_event("deleted");
                index.remove_secret(&secret.name_any());
            }
            Err(error) => {
                tracing::warn!(%namespace, %error, "bundle watch failed; retrying");
                metrics.bundle_watch_error();
            }
        }
        let (workers, revisions) = index.counts();
        metrics.bundles_held(workers, revisions);
    }
}

async fn checked(secret: &Secret, metrics: &NodeMetrics, puller: &Puller) -> Option<WorkerBundle> {
    let data = secret
        .data
        .as_ref()
        .and_then(|data| data.get(BUNDLE_KEY))
        .map(|data| data.0.as_slice());
    let bundle = match BundleSecret::decode(&secret.name_any(), secret.annotations(), data) {
        Ok(bundle) => bundle,
        Err(error) => {
            tracing::warn!(secret = %secret.name_any(), reason = error.kind(), %error, "ignoring a malformed bundle secret");
            metrics.bundle_error(error.kind());
            return None;
        }
    };
    match puller.complete(bundle).await {
        Ok(bundle) => Some(worker_bundle(bundle)),
        Err(error) => {
            tracing::warn!(secret = %secret.name_any(), reason = error.kind(), %error, "cannot pull a bundle");
            metrics.bundle_error(error.kind());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use isolane_worker::{Bundle, WORKER_ID_ANNOTATION};

    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    use super::*;

    fn secret(data: Option<&[u8]>, annotation: Option<&str>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("wk-a-b-1234".into()),
                annotations: annotation
                    .map(|a| BTreeMap::from([(WORKER_ID_ANNOTATION.to_owned(), a.to_owned())])),
                ..ObjectMeta::default()
            },
            data: data.map(|d| BTreeMap::from([(BUNDLE_KEY.to_owned(), ByteString(d.to_vec()))])),
            ..Secret::default()
        }
    }

    fn bundle_json() -> Vec<u8> {
        let bundle = Bundle::new(
            "a/b".into(),
            "export default { fetch() { return new Response('hi') } }".into(),
            BTreeMap::from([("K".to_owned(), "v".to_owned())]),
            isolane_worker::Limits::default(),
            Vec::new(),
        );
        serde_json::to_vec(&bundle).unwrap()
    }

    #[test]
    fn a_good_secret_becomes_a_worker_bundle() {
        let bundle = parse_secret(&secret(Some(&bundle_json()), Some("a/b"))).unwrap();
        assert_eq!(bundle.id, "a/b");
        assert_eq!(bundle.revision.len(), 16);
        assert_eq!(bundle.env["K"], "v");
        assert_eq!(bundle.limits.cpu_ms, 30_000);
    }

    #[test]
    fn malformed_secrets_are_refused_with_a_kind() {
        let cases = [
            (secret(None, None), "missing_data"),
            (secret(Some(b"{not json"), None), "invalid_json"),
            (
                secret(
                    Some(br#"{"workerId":"a/b","revision":"","script":"x","env":{},"limits":{}}"#),
                    None,
                ),
                "empty_field",
            ),
            (
                secret(Some(&bundle_json()), Some("other/worker")),
                "worker_id_mismatch",
            ),
        ];
        for (secret, kind) in cases {
            assert_eq!(parse_secret(&secret).unwrap_err().kind(), kind);
        }
    }
}
