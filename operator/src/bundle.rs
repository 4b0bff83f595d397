//! The bundle Secret the operator writes for each revision of a Worker, and
//! the record of its own writes that lets the bundle watch tell them from
//! changes made by someone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use isolane_crds::Worker;
use isolane_worker::{Bundle, BundleSecret, WORKER_ID_ANNOTATION};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use kube::runtime::reflector::ObjectRef;

use crate::routes::WorkerKey;
use crate::{Error, lock};

/// Annotation on a bundle Secret: a digest of its whole content (routes
/// included), so an unchanged bundle is not re-applied.
pub use isolane_worker::DIGEST_ANNOTATION;

/// The bundle Secret of `bundle`'s revision, ready for server-side apply
/// (the encoding nodes decode: `isolane_worker::BundleSecret`).
pub fn bundle_secret(namespace: &str, key: &WorkerKey, bundle: &Bundle) -> Result<Secret, Error> {
    let encoded = BundleSecret::encode(bundle).map_err(|source| Error::SerializeBundle {
        worker_id: key.to_string(),
        source,
    })?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(encoded.name),
            namespace: Some(namespace.to_owned()),
            labels: Some(encoded.labels),
            annotations: Some(encoded.annotations),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(
            encoded
                .data
                .into_iter()
                .map(|(key, value)| (key, ByteString(value)))
                .collect(),
        ),
        ..Secret::default()
    })
}

/// The digest annotation of a bundle Secret's metadata.
pub fn digest(metadata: &ObjectMeta) -> Option<&String> {
    metadata.annotations.as_ref()?.get(DIGEST_ANNOTATION)
}

/// The Worker a bundle Secret belongs to (its worker-id annotation).
pub fn bundle_owner(metadata: &ObjectMeta) -> Option<ObjectRef<Worker>> {
    let id = metadata.annotations.as_ref()?.get(WORKER_ID_ANNOTATION)?;
    let (namespace, name) = id.split_once('/')?;
    Some(ObjectRef::new(name).within(namespace))
}

/// The digest of the last bundle this controller wrote, by Secret name.
#[derive(Clone, Debug, Default)]
pub struct OwnWrites(Arc<Mutex<HashMap<String, String>>>);

impl OwnWrites {
    /// Records a write of Secret `name` with `digest` (before making it: its
    /// watch event may arrive before the response).
    pub fn record(&self, name: &str, digest: &str) {
        lock(&self.0).insert(name.to_owned(), digest.to_owned());
    }

    /// Forgets Secret `name` (it is being deleted).
    pub fn forget(&self, name: &str) {
        lock(&self.0).remove(name);
    }

    /// True when `metadata` is of a bundle Secret exactly as this controller last wrote it.
    pub fn is_own(&self, metadata: &ObjectMeta) -> bool {
        match (&metadata.name, digest(metadata)) {
            (Some(name), Some(digest)) => lock(&self.0).get(name) == Some(digest),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use isolane_worker::{BUNDLE_KEY, BUNDLE_LABEL, Limits, REVISION_ANNOTATION};

    use super::*;

    fn hello() -> (WorkerKey, Bundle) {
        let key = WorkerKey::new("default", "hello");
        let bundle = Bundle::new(
            key.to_string(),
            "export default {}".into(),
            BTreeMap::new(),
            Limits::default(),
            vec![],
        );
        (key, bundle)
    }

    #[test]
    fn bundle_secret_has_the_format_nodes_read() {
        let (key, bundle) = hello();
        let secret = bundle_secret("isolane-system", &key, &bundle).unwrap();
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some(Bundle::revision_secret_name("default", "hello", &bundle.revision).as_str())
        );
        assert_eq!(secret.metadata.namespace.as_deref(), Some("isolane-system"));
        let labels = secret.metadata.labels.unwrap();
        assert_eq!(labels.get(BUNDLE_LABEL).map(String::as_str), Some("true"));
        let annotations = secret.metadata.annotations.unwrap();
        assert_eq!(annotations[WORKER_ID_ANNOTATION], "default/hello");
        assert_eq!(annotations[REVISION_ANNOTATION], bundle.revision);
        let data = secret.data.unwrap();
        let decoded: Bundle = serde_json::from_slice(&data[BUNDLE_KEY].0).unwrap();
        assert_eq!(decoded, bundle);
        // The body carries apiVersion and kind, as server-side apply needs.
        let body = serde_json::to_value(Secret {
            metadata: ObjectMeta::default(),
            ..Secret::default()
        })
        .unwrap();
        assert_eq!(body["kind"], "Secret");
    }

    #[test]
    fn bundle_owner_reads_the_worker_id() {
        let metadata = ObjectMeta {
            annotations: Some(BTreeMap::from([(
                WORKER_ID_ANNOTATION.to_owned(),
                "ns/name".to_owned(),
            )])),
            ..ObjectMeta::default()
        };
        let owner = bundle_owner(&metadata).unwrap();
        assert_eq!(owner.name, "name");
        assert_eq!(owner.namespace.as_deref(), Some("ns"));
        assert!(bundle_owner(&ObjectMeta::default()).is_none());
    }

    #[test]
    fn own_writes_are_recognised_until_forgotten() {
        let (key, bundle) = hello();
        let secret = bundle_secret("isolane-system", &key, &bundle).unwrap();
        let name = secret.metadata.name.clone().unwrap();
        let writes = OwnWrites::default();
        assert!(!writes.is_own(&secret.metadata));
        writes.record(&name, digest(&secret.metadata).unwrap());
        assert!(writes.is_own(&secret.metadata));
        let mut edited = secret.metadata.clone();
        edited
            .annotations
            .as_mut()
            .unwrap()
            .insert(DIGEST_ANNOTATION.to_owned(), "other".to_owned());
        assert!(!writes.is_own(&edited), "changed by someone else");
        writes.forget(&name);
        assert!(!writes.is_own(&secret.metadata));
    }
}
