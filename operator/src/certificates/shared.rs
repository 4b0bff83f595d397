//! A namespace's wildcard Certificates (wildcard mode, [`super::wildcard`]):
//! one for each domain it holds under which one of its Workers is admitted
//! to a host the Certificate covers, owned by each such Worker (none its
//! controller: Kubernetes collects it when the last is deleted), deleted by
//! the operator as soon as no such Worker is left. Every reconcile of a
//! Worker of the namespace brings them up to date from the route table; in
//! per-host mode that deletes any left from wildcard mode, once each host
//! it serves has a Ready Certificate of its own.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tracing::info;

use super::sync::{delete, failed, hosts, is_current};
use super::{
    Certificates, Mode, Observed, WILDCARD_LABEL, WORKER_LABEL, awaiting, desired_wildcards,
    held_domains, wildcard_certificate, wildcard_name,
};
use crate::routes::WorkerKey;
use crate::{Error, FIELD_MANAGER, lock};

impl Certificates {
    /// Brings the wildcard Certificates of `key`'s namespace to what its
    /// Workers' admitted hosts ask for (in `key`'s reconcile); returns
    /// them by domain, as last read or written.
    pub(super) async fn sync_wildcards(
        &self,
        key: &WorkerKey,
    ) -> Result<BTreeMap<String, DynamicObject>, Error> {
        let namespace = &key.namespace;
        let api = self.api(namespace);
        let existing = api
            .list(&ListParams::default().labels(WILDCARD_LABEL))
            .await
            .map_err(failed(key, "list"))?;
        let admitted = self.admitted_under_held_domains(namespace);
        let view = admitted.iter().map(|(key, hosts)| (key, hosts.as_slice()));
        let users = match self.settings.mode {
            Mode::Wildcard => desired_wildcards(namespace, &self.settings.reservations, view),
            Mode::PerHost => BTreeMap::new(),
        };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let issuer = &self.settings.wildcard_issuer;
        let mut current = BTreeMap::new();
        for (domain, workers) in &users {
            let owners = self.owner_references(workers);
            let wanted = wildcard_certificate(namespace, domain, owners, issuer);
            let object = match existing.items.iter().find(|e| is_current(e, &wanted)) {
                Some(object) => object.clone(),
                None => api
                    .patch(&wanted.name_any(), &params, &Patch::Apply(&wanted))
                    .await
                    .map_err(failed(key, "apply"))?,
            };
            current.insert(domain.clone(), object);
        }
        let mut keep: BTreeSet<String> = users.keys().map(|domain| wildcard_name(domain)).collect();
        let stale = |c: &&DynamicObject| !keep.contains(&c.name_any());
        if self.settings.mode == Mode::PerHost && existing.items.iter().any(|c| stale(&c)) {
            keep.extend(self.awaited(key, &admitted).await?);
        }
        for stale in existing
            .items
            .iter()
            .filter(|c| !keep.contains(&c.name_any()))
        {
            info!(namespace, certificate = %stale.name_any(), "deleting a wildcard Certificate no Worker of the namespace uses");
            delete(&api, key, &stale.name_any()).await?;
        }
        Ok(current)
    }

    /// The names of the wildcard Certificates of `key`'s namespace still
    /// serving a host of `admitted` whose own Certificate is not Ready
    /// (after a switch to per-host mode): each stays until they all are.
    async fn awaited(
        &self,
        key: &WorkerKey,
        admitted: &BTreeMap<WorkerKey, Vec<String>>,
    ) -> Result<BTreeSet<String>, Error> {
        let own = self
            .api(&key.namespace)
            .list(&ListParams::default().labels(WORKER_LABEL))
            .await
            .map_err(failed(key, "list"))?;
        let ready: BTreeSet<String> = (own.items.iter())
            .filter(|c| Observed::read("", Some(c)).is_ready())
            .map(ResourceExt::name_any)
            .collect();
        let view = admitted.iter().map(|(key, hosts)| (key, hosts.as_slice()));
        let domains = awaiting(&key.namespace, &self.settings.reservations, view, &ready);
        Ok(domains.iter().map(|domain| wildcard_name(domain)).collect())
    }

    /// Each Worker of `namespace` admitted to a host under a domain the
    /// namespace holds, with its admitted hosts, from the route table.
    fn admitted_under_held_domains(&self, namespace: &str) -> BTreeMap<WorkerKey, Vec<String>> {
        let index = lock(&self.index);
        let table = index.routes();
        let mut admitted: BTreeMap<WorkerKey, Vec<String>> = BTreeMap::new();
        for domain in held_domains(namespace, &self.settings.reservations) {
            for key in table.on_overlapping_hosts(&format!("*.{domain}")) {
                if key.namespace != namespace || admitted.contains_key(&key) {
                    continue;
                }
                if let Some(claim) = table.claim(&key) {
                    let (hosts, _) = hosts(&claim.routes, &table.lost(claim));
                    admitted.insert(key, hosts);
                }
            }
        }
        admitted
    }

    /// Owner references to `workers` (those the Worker cache holds).
    fn owner_references(&self, workers: &BTreeSet<WorkerKey>) -> Vec<OwnerReference> {
        workers
            .iter()
            .filter_map(|key| {
                let reference = ObjectRef::new(&key.name).within(&key.namespace);
                self.workers.get(&reference)?.owner_ref(&())
            })
            .collect()
    }
}
