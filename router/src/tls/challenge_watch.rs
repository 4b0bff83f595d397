//! The watch of cert-manager's ACME `Challenge`s (acme.cert-manager.io/v1)
//! in the namespaces whose Workers the router routes. After each change
//! (once listed) the open HTTP-01 challenges are swapped into [`Http01`];
//! other types (DNS-01) and challenges missing a field are skipped.

use std::sync::Arc;

use futures::StreamExt;
use isolane_telemetry::ReadyHandle;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tracing::{info, warn};

use super::challenges::{Challenge, ChallengeSet, HTTP01, Http01};
use crate::RouterMetrics;
use crate::routes::normalize_host;
use crate::watch::Relist;

/// cert-manager's `Challenge` resource.
pub fn challenge_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("acme.cert-manager.io", "v1", "Challenge");
    ApiResource::from_gvk_with_plural(&gvk, "challenges")
}

/// `object`'s key (`namespace/name`) and the HTTP-01 challenge it holds,
/// if it is one the router can answer.
pub fn read(object: &DynamicObject) -> (String, Option<Challenge>) {
    let namespace = object.namespace().unwrap_or_default();
    let key = format!("{namespace}/{}", object.name_any());
    let spec = object.data.get("spec");
    let field = |name: &str| spec?.get(name)?.as_str().map(str::to_owned);
    let challenge = match field("type").as_deref() {
        Some(HTTP01) => (|| {
            Some(Challenge {
                host: normalize_host(&field("dnsName")?),
                token: field("token")?,
                key: field("key")?,
                namespace,
            })
        })(),
        _ => None,
    };
    (key, challenge)
}

/// Watches the Challenges (in `namespace`, or all) into `http01` until the
/// watch stream ends; `ready` after the first list.
pub async fn challenges(
    client: Client,
    namespace: Option<&str>,
    http01: Arc<Http01>,
    metrics: Arc<RouterMetrics>,
    ready: ReadyHandle,
) {
    let resource = challenge_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client, ns, &resource),
        None => Api::all_with(client, &resource),
    };
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut state = Relist::<Option<Challenge>>::default();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                if state.apply(event, read) && state.synced {
                    let set = ChallengeSet::new(state.objects.values().flatten().cloned());
                    info!(open = set.len(), "ACME HTTP-01 challenges loaded");
                    http01.replace(set);
                    ready.set_ready();
                }
            }
            Err(error) => {
                metrics.watch_error("acme_challenges");
                warn!(%error, "ACME Challenge watch failed; retrying");
            }
        }
    }
}
