//! A cert-manager CA ClusterIssuer signing with the tests' own CA
//! ([`TestCa`]): no ACME server, so wildcards issue without DNS-01.

use std::collections::BTreeMap;

use isolane_testenv::{ControlPlane, TestCa};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube::core::DynamicObject;

use super::cert_manager::NAMESPACE;
use super::issuer::cluster_issuer;

/// Creates ClusterIssuer `name` signing with `ca`, whose certificate and
/// key it reads from a Secret of cert-manager's namespace.
pub async fn create(cp: &ControlPlane, name: &str, ca: &TestCa) {
    let secret_name = format!("{name}-ca");
    let data: BTreeMap<String, ByteString> =
        [("tls.crt", ca.cert_pem()), ("tls.key", ca.key_pem())]
            .into_iter()
            .map(|(key, pem)| (key.to_owned(), ByteString(pem.into_bytes())))
            .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.clone()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::namespaced(cp.client(), NAMESPACE);
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the CA's Secret");
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
        "metadata": {"name": name},
        "spec": {"ca": {"secretName": secret_name}},
    }))
    .expect("a ClusterIssuer");
    let api: Api<DynamicObject> = Api::all_with(cp.client(), &cluster_issuer());
    api.create(&PostParams::default(), &object)
        .await
        .expect("create the ClusterIssuer");
}
