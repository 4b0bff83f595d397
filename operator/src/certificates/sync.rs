//! Brings a Worker's Certificates to what its admitted hosts ask for, and
//! writes its `CertificateReady` condition (field manager
//! [`CONDITION_MANAGER`], so the reconcile's own status writes leave it be).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use isolane_crds::Worker;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};
use tracing::info;

use super::{
    CERTIFICATE_READY, CertificateSettings, Mode, Observed, WORKER_LABEL, certificate_resource,
    condition, desired, split,
};
use crate::index::WorkerIndex;
use crate::routes::{Holder, WorkerKey};
use crate::{Error, FIELD_MANAGER};

/// The field manager of the `CertificateReady` condition.
pub const CONDITION_MANAGER: &str = "isolane-operator-certificates";

/// The operator's certificate requests, when they are on.
#[derive(Clone)]
pub struct Certificates {
    client: Client,
    pub(super) settings: CertificateSettings,
    /// The route claims and their decision: who else in a namespace uses
    /// its wildcard Certificate.
    pub(super) index: Arc<Mutex<WorkerIndex>>,
    /// The Workers, for the wildcard Certificates' owner references.
    pub(super) workers: Store<Worker>,
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

pub(super) fn failed(key: &WorkerKey, action: &'static str) -> impl FnOnce(kube::Error) -> Error {
    let worker_id = key.to_string();
    move |source| Error::Certificates {
        worker_id,
        action,
        source: Box::new(source),
    }
}

impl Certificates {
    /// Certificates from the issuer of `settings`, through `client`; the
    /// Workers sharing a wildcard Certificate come from `index` and
    /// `workers`.
    pub fn new(
        client: Client,
        settings: CertificateSettings,
        index: Arc<Mutex<WorkerIndex>>,
        workers: Store<Worker>,
    ) -> Self {
        Self {
            client,
            settings,
            index,
            workers,
        }
    }

    pub(super) fn api(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &certificate_resource())
    }

    /// Applies the Certificates of `worker`'s admitted hosts (the routes
    /// in `lost` are not its) and its namespace's wildcard Certificates,
    /// deletes the others, and writes its condition.
    pub async fn sync(
        &self,
        worker: &Worker,
        key: &WorkerKey,
        lost: &[(isolane_worker::Route, Holder)],
    ) -> Result<(), Error> {
        let (admitted, lost_hosts) = hosts(&worker.spec.routes, lost);
        let split = split(&admitted, &key.namespace, &self.settings);
        let wildcards = self.sync_wildcards(key).await?;
        // A covered host keeps a Certificate of its own it has (made in
        // per-host mode) until its wildcard is Ready: the router serves one
        // or the other throughout a switch of mode.
        let interim: Vec<String> = (split.wildcard.iter())
            .filter(|(domain, _)| !Observed::read("", wildcards.get(*domain)).is_ready())
            .flat_map(|(_, hosts)| hosts.iter().cloned())
            .collect();
        let mut observed = (self.sync_per_host(worker, key, &split.per_host, &interim)).await?;
        for (domain, hosts) in &split.wildcard {
            observed.extend(hosts.iter().map(|host| {
                Observed::read(&format!("{host} (*.{domain})"), wildcards.get(domain))
            }));
        }
        let uncovered = uncovered_note(&split.uncovered, self.settings.mode);
        let wanted = condition(&observed, &lost_hosts, uncovered.as_deref());
        self.write_condition(worker, key, wanted).await
    }

    /// Applies the Certificates of `hosts` (`worker`'s own) and keeps
    /// those of `interim` it has, deletes the others it has; returns what
    /// cert-manager says of each of `hosts`'.
    async fn sync_per_host(
        &self,
        worker: &Worker,
        key: &WorkerKey,
        hosts: &[String],
        interim: &[String],
    ) -> Result<Vec<Observed>, Error> {
        let api = self.api(&key.namespace);
        let selector = format!("{WORKER_LABEL}={}", key.name);
        let existing = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(failed(key, "list"))?;
        let wanted = desired(worker, key, hosts, &self.settings);
        let has = |w: &DynamicObject| existing.items.iter().any(|e| e.name_any() == w.name_any());
        let kept: Vec<DynamicObject> = (desired(worker, key, interim, &self.settings).into_iter())
            .filter(has)
            .collect();
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let unchanged = |w: &DynamicObject| existing.items.iter().any(|e| is_current(e, w));
        for certificate in wanted.iter().chain(&kept).filter(|w| !unchanged(w)) {
            api.patch(&certificate.name_any(), &params, &Patch::Apply(certificate))
                .await
                .map_err(failed(key, "apply"))?;
        }
        let names: BTreeSet<String> = (wanted.iter().chain(&kept))
            .map(ResourceExt::name_any)
            .collect();
        for stale in existing
            .items
            .iter()
            .filter(|c| !names.contains(&c.name_any()))
        {
            info!(worker.id = %key, certificate = %stale.name_any(), "deleting a Certificate whose host the Worker no longer has its own");
            delete(&api, key, &stale.name_any()).await?;
        }
        Ok(wanted
            .iter()
            .map(|w| {
                let host = w.data.pointer("/spec/dnsNames/0").and_then(|h| h.as_str());
                let found = existing.items.iter().find(|c| c.name_any() == w.name_any());
                Observed::read(host.unwrap_or_default(), found)
            })
            .collect())
    }

    /// Writes `wanted` as the Worker's condition (removes it when `None`),
    /// unless the status says so already.
    async fn write_condition(
        &self,
        worker: &Worker,
        key: &WorkerKey,
        wanted: Option<(&'static str, &'static str, String)>,
    ) -> Result<(), Error> {
        let current = worker
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == CERTIFICATE_READY));
        let same = match (&wanted, current) {
            (None, None) => true,
            (Some((status, reason, message)), Some(c)) => {
                c.status == *status && c.reason == *reason && c.message == *message
            }
            _ => false,
        };
        if same {
            return Ok(());
        }
        let conditions: Vec<serde_json::Value> = wanted
            .into_iter()
            .map(|(status, reason, message)| {
                let since = current
                    .filter(|c| c.status == status)
                    .map_or(Time(Timestamp::now()), |c| c.last_transition_time.clone());
                serde_json::json!({"type": CERTIFICATE_READY, "status": status, "reason": reason,
                    "message": message, "lastTransitionTime": since,
                    "observedGeneration": worker.metadata.generation})
            })
            .collect();
        let body = serde_json::json!({
            "apiVersion": format!("{}/{}", isolane_crds::GROUP, isolane_crds::VERSION),
            "kind": "Worker",
            "status": {"conditions": conditions},
        });
        let api: Api<Worker> = Api::namespaced(self.client.clone(), &key.namespace);
        let params = PatchParams::apply(CONDITION_MANAGER).force();
        api.patch_status(&key.name, &params, &Patch::Apply(body))
            .await
            .map_err(failed(key, "write the condition of"))?;
        Ok(())
    }

    /// Deletes every Certificate of the deleted Worker `key`, and its
    /// namespace's wildcard Certificates it alone used (it claims nothing
    /// while being deleted).
    pub async fn cleanup(&self, key: &WorkerKey) -> Result<(), Error> {
        let selector = format!("{WORKER_LABEL}={}", key.name);
        self.api(&key.namespace)
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&selector),
            )
            .await
            .map(|_| ())
            .or_else(ignore_not_found)
            .map_err(failed(key, "delete"))?;
        self.sync_wildcards(key).await.map(|_| ())
    }
}

/// Deletes Certificate `name` through `api` (for `key`'s reconcile); one
/// gone already is no error.
pub(super) async fn delete(
    api: &Api<DynamicObject>,
    key: &WorkerKey,
    name: &str,
) -> Result<(), Error> {
    api.delete(name, &DeleteParams::default())
        .await
        .map(|_| ())
        .or_else(ignore_not_found)
        .map_err(failed(key, "delete"))
}

/// Why the admitted wildcard hosts `uncovered` get no Certificate.
fn uncovered_note(uncovered: &[String], mode: Mode) -> Option<String> {
    if uncovered.is_empty() {
        return None;
    }
    let why = match mode {
        Mode::PerHost => "HTTP-01 cannot prove a wildcard (certificates mode perHost)",
        Mode::Wildcard => {
            "only a *.<domain> reservation of the namespace, with the host itself *.<domain>, gets a wildcard Certificate"
        }
    };
    Some(format!(
        "no certificate for wildcard hosts {}: {why}",
        uncovered.join(", ")
    ))
}

/// Whether `existing` says what `wanted` does (each field of its spec,
/// its labels and owners): no write needed.
pub(super) fn is_current(existing: &DynamicObject, wanted: &DynamicObject) -> bool {
    let spec_holds = match (wanted.data.get("spec"), existing.data.get("spec")) {
        (Some(serde_json::Value::Object(want)), Some(have)) => want
            .iter()
            .all(|(field, value)| have.get(field) == Some(value)),
        _ => false,
    };
    existing.name_any() == wanted.name_any()
        && spec_holds
        && existing.metadata.labels == wanted.metadata.labels
        && existing.metadata.owner_references == wanted.metadata.owner_references
}

fn ignore_not_found(error: kube::Error) -> Result<(), kube::Error> {
    match &error {
        kube::Error::Api(response) if response.code == 404 => Ok(()),
        _ => Err(error),
    }
}

/// The hosts a Worker with `routes` is admitted to (at least one of its
/// routes on it is not in `lost`), and the hosts it declares but holds no
/// route of, with who holds them.
pub(super) fn hosts(
    routes: &[isolane_worker::Route],
    lost: &[(isolane_worker::Route, Holder)],
) -> (Vec<String>, Vec<(String, Holder)>) {
    let mut admitted = BTreeSet::new();
    for route in routes {
        if !lost.iter().any(|(r, _)| r == route) {
            admitted.insert(route.host.clone());
        }
    }
    let mut lost_hosts: Vec<(String, Holder)> = Vec::new();
    for (route, holder) in lost {
        if !admitted.contains(&route.host) && !lost_hosts.iter().any(|(h, _)| *h == route.host) {
            lost_hosts.push((route.host.clone(), holder.clone()));
        }
    }
    (admitted.into_iter().collect(), lost_hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(issuer: &str, extra_status: bool) -> DynamicObject {
        let mut object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "c", "namespace": "a", "labels": {WORKER_LABEL: "w"}},
            "spec": {"dnsNames": ["a.example"], "issuerRef": {"name": issuer}},
        }))
        .unwrap();
        if extra_status {
            object.data["status"] = serde_json::json!({"conditions": []});
            object.data["spec"]["duration"] = serde_json::json!("2160h");
        }
        object
    }

    #[test]
    fn a_certificate_saying_the_same_is_not_written_again() {
        let wanted = certificate("pebble", false);
        // What cert-manager adds (status, defaults) does not count.
        assert!(is_current(&certificate("pebble", true), &wanted));
        assert!(!is_current(&certificate("other", true), &wanted));
        let mut relabelled = certificate("pebble", true);
        relabelled.metadata.labels = None;
        assert!(!is_current(&relabelled, &wanted));
    }
}
