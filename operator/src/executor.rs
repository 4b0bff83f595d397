//! Carries out what [`crate::plan`] decided: each [`Step`] in order against
//! the API, stopping at the first write that fails (the reconcile is then
//! retried with backoff; every step is idempotent).

use std::sync::Arc;

use isolane_crds::Worker;
use isolane_worker::BUNDLE_LABEL;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams, PartialObjectMeta, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource};
use tracing::{debug, info};

use crate::bundle::{OwnWrites, digest};
use crate::metrics::Metrics;
use crate::plan::Step;
use crate::routes::WorkerKey;
use crate::status::DesiredStatus;
use crate::{Error, FIELD_MANAGER};

/// What the steps are carried out with.
pub struct Executor {
    client: Client,
    /// Namespace of the bundle Secrets.
    namespace: String,
    own_writes: OwnWrites,
    metrics: Arc<Metrics>,
    recorder: Recorder,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// Writes through `client`, bundles in `namespace`; records its bundle
    /// writes in `own_writes` (the bundle watch reads them).
    pub fn new(
        client: Client,
        namespace: String,
        own_writes: OwnWrites,
        metrics: Arc<Metrics>,
    ) -> Self {
        let recorder = crate::event_recorder(client.clone());
        Self {
            client,
            namespace,
            own_writes,
            metrics,
            recorder,
        }
    }

    /// The operator's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Carries out `steps` for `worker` (named `key`), in order.
    pub async fn execute(
        &self,
        worker: &Worker,
        key: &WorkerKey,
        steps: &[Step],
    ) -> Result<(), Error> {
        for step in steps {
            match step {
                Step::ApplyBundle(secret) => self.apply_bundle(key, secret).await?,
                Step::DeleteBundle(name) => self.delete_bundle(key, name).await?,
                Step::RecordConditions(statuses) => self.metrics.set_conditions(key, *statuses),
                Step::Warn(warning) => {
                    self.warn(worker, &warning.reason, &warning.note, "Reconcile")
                        .await;
                }
                Step::WriteStatus(desired) => self.write_status(key, desired).await?,
            }
        }
        Ok(())
    }

    async fn apply_bundle(&self, key: &WorkerKey, secret: &Secret) -> Result<(), Error> {
        let name = secret.metadata.name.clone().unwrap_or_default();
        // Recorded before the write: its watch event may arrive before the response.
        if let Some(digest) = digest(&secret.metadata) {
            self.own_writes.record(&name, digest);
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(secret),
        )
        .await
        .map_err(|source| Error::ApplyBundle {
            namespace: self.namespace.clone(),
            secret: name.clone(),
            source: Box::new(source),
        })?;
        let revision = secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(isolane_worker::REVISION_ANNOTATION));
        info!(worker.id = %key, revision = revision.map_or("", String::as_str), secret = %name, "bundle written");
        Ok(())
    }

    /// Every bundle Secret as the API holds it now (metadata only): what a
    /// deletion must clean up is read here, not from the watch's cache, which
    /// may not have caught up (e.g. just after the operator started).
    pub async fn list_bundles(&self) -> Result<Vec<PartialObjectMeta<Secret>>, Error> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().labels(&format!("{BUNDLE_LABEL}=true"));
        let list = api
            .list_metadata(&params)
            .await
            .map_err(|source| Error::ListBundles {
                namespace: self.namespace.clone(),
                source: Box::new(source),
            })?;
        Ok(list.items)
    }

    /// Deletes one bundle Secret (gone already is fine).
    pub async fn delete_bundle(&self, key: &WorkerKey, name: &str) -> Result<(), Error> {
        self.own_writes.forget(name);
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                info!(worker.id = %key, secret = %name, "bundle deleted");
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(Error::DeleteBundle {
                namespace: self.namespace.clone(),
                secret: name.to_owned(),
                source: Box::new(source),
            }),
        }
    }

    async fn write_status(&self, key: &WorkerKey, desired: &DesiredStatus) -> Result<(), Error> {
        let api: Api<Worker> = Api::namespaced(self.client.clone(), &key.namespace);
        api.patch_status(
            &key.name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(desired.apply_body()),
        )
        .await
        .map_err(|source| Error::PatchStatus {
            worker_id: key.to_string(),
            source: Box::new(source),
        })?;
        Ok(())
    }

    /// Publishes a Warning event on `worker` (a failure is logged, not returned).
    pub async fn warn(&self, worker: &Worker, reason: &str, note: &str, action: &str) {
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            note: Some(note.to_owned()),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &worker.object_ref(&())).await {
            debug!(%error, "failed to publish an event");
        }
    }
}
