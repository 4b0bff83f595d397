//! Resolving a Worker's script and env from the ConfigMaps and Secrets it names.
//!
//! [`fetch`] reads each referenced object once (a GET, so the answer is as fresh
//! as the apiserver's); [`resolve`] is the pure part that picks the keys out, so
//! it is tested without an apiserver. A missing object or key is not an error:
//! it is a [`MissingReference`] the reconcile reports as a condition.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use isolane_crds::{ObjectKind, WorkerSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};

use crate::Error;
use crate::index::{ReferenceKey, ReferenceKind, references};

/// The data of the referenced objects that exist, by reference.
pub type Sources = HashMap<ReferenceKey, BTreeMap<String, String>>;

pub use isolane_crds::Resolved;

/// A reference that could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingReference {
    /// The object.
    pub object: ReferenceKey,
    /// The key, when the object exists but lacks it.
    pub key: Option<String>,
}

impl fmt::Display for MissingReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ReferenceKey {
            kind,
            namespace,
            name,
        } = &self.object;
        match &self.key {
            None => write!(f, "{} {namespace}/{name} not found", kind.as_str()),
            Some(key) => write!(
                f,
                "key {key:?} not found in {} {namespace}/{name}",
                kind.as_str()
            ),
        }
    }
}

/// Reads every object `spec` references in `namespace`; absent ones are left out.
pub async fn fetch(client: &Client, namespace: &str, spec: &WorkerSpec) -> Result<Sources, Error> {
    let mut sources = Sources::new();
    for reference in references(namespace, spec) {
        let data = match reference.kind {
            ReferenceKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
                api.get_opt(&reference.name)
                    .await
                    .map(|found| found.map(config_map_data))
            }
            ReferenceKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
                api.get_opt(&reference.name)
                    .await
                    .map(|found| found.map(secret_data))
            }
        }
        .map_err(|source| Error::GetReference {
            kind: reference.kind.as_str(),
            namespace: namespace.to_owned(),
            name: reference.name.clone(),
            source: Box::new(source),
        })?;
        if let Some(data) = data {
            sources.insert(reference, data);
        }
    }
    Ok(sources)
}

/// Resolves `spec` against `sources` ([`isolane_crds::resolve`]): the first
/// missing reference, in spec order (script first, then env), is reported.
pub fn resolve(
    namespace: &str,
    spec: &WorkerSpec,
    sources: &Sources,
) -> Result<Resolved, MissingReference> {
    isolane_crds::resolve(spec, |reference| {
        let object = ReferenceKey {
            kind: match reference.kind {
                ObjectKind::ConfigMap => ReferenceKind::ConfigMap,
                ObjectKind::Secret => ReferenceKind::Secret,
            },
            namespace: namespace.to_owned(),
            name: reference.name.to_owned(),
        };
        let Some(data) = sources.get(&object) else {
            return Err(MissingReference { object, key: None });
        };
        data.get(reference.key)
            .cloned()
            .ok_or_else(|| MissingReference {
                object,
                key: Some(reference.key.to_owned()),
            })
    })
}

fn config_map_data(config_map: ConfigMap) -> BTreeMap<String, String> {
    let mut data = config_map.data.unwrap_or_default();
    for (key, value) in config_map.binary_data.unwrap_or_default() {
        data.entry(key)
            .or_insert_with(|| String::from_utf8_lossy(&value.0).into_owned());
    }
    data
}

/// Secret values are bytes; env bindings are strings, so invalid UTF-8 is
/// replaced (U+FFFD) rather than refused.
fn secret_data(secret: Secret) -> BTreeMap<String, String> {
    let mut data: BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, String::from_utf8_lossy(&value.0).into_owned()))
        .collect();
    for (key, value) in secret.string_data.unwrap_or_default() {
        data.entry(key).or_insert(value);
    }
    data
}

#[cfg(test)]
mod tests {
    use isolane_crds::{ConfigMapKeyRef, EnvValueFrom, EnvVar, ScriptFrom, SecretKeyRef};

    use super::*;

    fn spec() -> WorkerSpec {
        WorkerSpec {
            script: None,
            bundle: None,
            bundle_pull_secrets: Vec::new(),
            script_from: Some(ScriptFrom {
                config_map_key_ref: ConfigMapKeyRef {
                    name: "code".into(),
                    key: "index.js".into(),
                },
            }),
            env: vec![
                EnvVar {
                    name: "PLAIN".into(),
                    value: Some("v".into()),
                    value_from: None,
                    json: None,
                },
                EnvVar {
                    name: "TOKEN".into(),
                    value: None,
                    value_from: Some(EnvValueFrom {
                        secret_key_ref: Some(SecretKeyRef {
                            name: "creds".into(),
                            key: "token".into(),
                        }),
                        config_map_key_ref: None,
                    }),
                    json: None,
                },
            ],
            ..crate::fixtures::spec(None, &[])
        }
    }

    fn key(kind: ReferenceKind, name: &str) -> ReferenceKey {
        ReferenceKey {
            kind,
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn resolves_script_and_env_from_their_sources() {
        let mut sources = Sources::new();
        sources.insert(
            key(ReferenceKind::ConfigMap, "code"),
            BTreeMap::from([("index.js".into(), "export default {}".into())]),
        );
        sources.insert(
            key(ReferenceKind::Secret, "creds"),
            BTreeMap::from([("token".into(), "s3cret".into())]),
        );
        let resolved = resolve("ns", &spec(), &sources).unwrap();
        assert_eq!(resolved.script, "export default {}");
        assert_eq!(
            resolved.env,
            BTreeMap::from([
                ("PLAIN".into(), "v".into()),
                ("TOKEN".into(), "s3cret".into())
            ])
        );
    }

    #[test]
    fn names_the_first_missing_object_or_key() {
        let mut sources = Sources::new();
        let missing = resolve("ns", &spec(), &sources).unwrap_err();
        assert_eq!(missing.to_string(), "ConfigMap ns/code not found");
        sources.insert(key(ReferenceKind::ConfigMap, "code"), BTreeMap::new());
        let missing = resolve("ns", &spec(), &sources).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "key \"index.js\" not found in ConfigMap ns/code"
        );
        sources.insert(
            key(ReferenceKind::ConfigMap, "code"),
            BTreeMap::from([("index.js".into(), "x".into())]),
        );
        let missing = resolve("ns", &spec(), &sources).unwrap_err();
        assert_eq!(missing.to_string(), "Secret ns/creds not found");
    }
}
