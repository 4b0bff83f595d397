//! How a bundle travels from the operator to the nodes: one Secret per
//! revision, labelled [`BUNDLE_LABEL`]`=true`, annotated with the worker id,
//! the revision and a digest of the bundle, its JSON under [`BUNDLE_KEY`].
//! [`BundleSecret::encode`] is what the operator writes and
//! [`BundleSecret::decode`] what a node accepts; both sides use these two
//! functions, and a test round-trips them.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::{BUNDLE_KEY, BUNDLE_LABEL, Bundle, REVISION_ANNOTATION, WORKER_ID_ANNOTATION};

/// Annotation on a bundle Secret: the first 16 hex digits of the SHA-256 of
/// its JSON (the operator skips a write when it is unchanged).
pub const DIGEST_ANNOTATION: &str = "isolane.dev/bundle-digest";

/// A bundle Secret's name, labels, annotations and data, without Kubernetes
/// types (the operator and the node convert them to and from a `Secret`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSecret {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub data: BTreeMap<String, Vec<u8>>,
}

/// Why a bundle Secret cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("secret {secret} has no {BUNDLE_KEY} data")]
    MissingData { secret: String },
    #[error("secret {secret}: {BUNDLE_KEY} is not a bundle")]
    InvalidJson {
        secret: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("secret {secret}: the bundle has an empty {field}")]
    EmptyField { secret: String, field: &'static str },
    #[error("secret {secret} is annotated for worker {annotated} but holds {bundle}")]
    WorkerIdMismatch {
        secret: String,
        annotated: String,
        bundle: String,
    },
}

impl SecretError {
    /// A bounded label for metrics (`reason`).
    pub fn kind(&self) -> &'static str {
        match self {
            SecretError::MissingData { .. } => "missing_data",
            SecretError::InvalidJson { .. } => "invalid_json",
            SecretError::EmptyField { .. } => "empty_field",
            SecretError::WorkerIdMismatch { .. } => "worker_id_mismatch",
        }
    }
}

impl BundleSecret {
    /// The Secret of `bundle`'s revision.
    pub fn encode(bundle: &Bundle) -> Result<Self, serde_json::Error> {
        let json = serde_json::to_vec(bundle)?;
        let digest = Sha256::digest(&json);
        let (namespace, name) = bundle
            .worker_id
            .split_once('/')
            .unwrap_or(("", bundle.worker_id.as_str()));
        Ok(Self {
            name: Bundle::revision_secret_name(namespace, name, &bundle.revision),
            labels: BTreeMap::from([(BUNDLE_LABEL.to_owned(), "true".to_owned())]),
            annotations: BTreeMap::from([
                (WORKER_ID_ANNOTATION.to_owned(), bundle.worker_id.clone()),
                (REVISION_ANNOTATION.to_owned(), bundle.revision.clone()),
                (DIGEST_ANNOTATION.to_owned(), hex::encode(&digest[..8])),
            ]),
            data: BTreeMap::from([(BUNDLE_KEY.to_owned(), json)]),
        })
    }

    /// The bundle the Secret called `name` holds, given its annotations and
    /// its [`BUNDLE_KEY`] data: refused when the data is missing or not a
    /// bundle, when the worker id, revision or script is empty, or when the
    /// Secret is annotated for another worker.
    pub fn decode(
        name: &str,
        annotations: &BTreeMap<String, String>,
        data: Option<&[u8]>,
    ) -> Result<Bundle, SecretError> {
        let data = data.ok_or_else(|| SecretError::MissingData {
            secret: name.to_owned(),
        })?;
        let bundle: Bundle =
            serde_json::from_slice(data).map_err(|source| SecretError::InvalidJson {
                secret: name.to_owned(),
                source,
            })?;
        for (field, value) in [
            ("workerId", &bundle.worker_id),
            ("revision", &bundle.revision),
            ("script", &bundle.script),
        ] {
            // A bundle of modules runs its main module, not `script`; one
            // named by digest is pulled by the node.
            let modular = bundle.modules.is_some() || bundle.artifact.is_some();
            if value.is_empty() && !(field == "script" && modular) {
                return Err(SecretError::EmptyField {
                    secret: name.to_owned(),
                    field,
                });
            }
        }
        if let Some(annotated) = annotations.get(WORKER_ID_ANNOTATION)
            && *annotated != bundle.worker_id
        {
            return Err(SecretError::WorkerIdMismatch {
                secret: name.to_owned(),
                annotated: annotated.clone(),
                bundle: bundle.worker_id,
            });
        }
        Ok(bundle)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{Limits, Route};

    fn decode(secret: &BundleSecret) -> Result<Bundle, SecretError> {
        BundleSecret::decode(
            &secret.name,
            &secret.annotations,
            secret.data.get(BUNDLE_KEY).map(Vec::as_slice),
        )
    }

    proptest! {
        /// What the operator writes, a node reads back unchanged.
        #[test]
        fn a_bundle_round_trips_through_its_secret(
            namespace in "[a-z][a-z0-9-]{0,20}",
            name in "[a-z][a-z0-9-]{0,40}",
            script in "\\PC{1,200}",
            env in proptest::collection::btree_map("[A-Z_]{1,8}", "\\PC{0,20}", 0..4),
            cpu_ms in Limits::CPU_MS,
            memory_mib in Limits::MEMORY_MIB,
            hosts in proptest::collection::vec("[a-z]{1,10}\\.test", 0..3),
        ) {
            let limits = Limits { cpu_ms, wall_ms: 300_000, memory_mib, subrequests: 7 };
            let routes = vec![Route { host: format!("{name}.test"), path_prefix: "/".into() }];
            let bundle = Bundle::new(format!("{namespace}/{name}"), script, env, limits, routes)
                .with_allowed_hosts(hosts);
            let secret = BundleSecret::encode(&bundle).unwrap();
            prop_assert_eq!(&secret.annotations[REVISION_ANNOTATION], &bundle.revision);
            prop_assert_eq!(&secret.labels[BUNDLE_LABEL], "true");
            prop_assert!(secret.name.len() <= 253);
            prop_assert_eq!(decode(&secret).unwrap(), bundle);
        }
    }

    #[test]
    fn a_bundle_of_modules_round_trips_and_a_broken_one_is_refused() {
        use crate::{Module, ModuleKind, Modules};
        let modules = Modules::new(
            "main.js",
            vec![
                Module::new("main.js", ModuleKind::ESModule, "import w from './a.wasm';"),
                Module::new(
                    "a.wasm",
                    ModuleKind::CompiledWasm,
                    vec![0, 97, 115, 109, 1, 0, 0, 0],
                ),
            ],
        )
        .unwrap();
        let bundle = Bundle::new(
            "ns/w".into(),
            String::new(),
            BTreeMap::new(),
            Limits::default(),
            Vec::new(),
        )
        .with_modules(modules);
        let secret = BundleSecret::encode(&bundle).unwrap();
        assert_eq!(decode(&secret).unwrap(), bundle);
        let mut broken = secret.clone();
        let json = String::from_utf8(secret.data[BUNDLE_KEY].clone()).unwrap();
        broken.data.insert(
            BUNDLE_KEY.into(),
            json.replace(r#""main":"main.js""#, r#""main":"gone.js""#)
                .into_bytes(),
        );
        assert_eq!(decode(&broken).unwrap_err().kind(), "invalid_json");
    }

    #[test]
    fn malformed_secrets_are_refused_with_their_reason() {
        let bundle = Bundle::new(
            "ns/w".into(),
            "export default {}".into(),
            BTreeMap::new(),
            Limits::default(),
            Vec::new(),
        );
        let good = BundleSecret::encode(&bundle).unwrap();
        let kind = |secret: &BundleSecret| decode(secret).unwrap_err().kind();

        let mut missing = good.clone();
        missing.data.clear();
        assert_eq!(kind(&missing), "missing_data");

        let mut garbage = good.clone();
        garbage
            .data
            .insert(BUNDLE_KEY.into(), b"{not json".to_vec());
        assert_eq!(kind(&garbage), "invalid_json");

        let mut empty = bundle.clone();
        empty.script.clear();
        assert_eq!(kind(&BundleSecret::encode(&empty).unwrap()), "empty_field");

        let mut other = good.clone();
        other
            .annotations
            .insert(WORKER_ID_ANNOTATION.into(), "ns/other".into());
        assert_eq!(kind(&other), "worker_id_mismatch");
    }
}
