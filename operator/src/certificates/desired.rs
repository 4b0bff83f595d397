//! The Certificates a Worker should have: one per admitted host (wildcard
//! hosts excepted: HTTP-01 cannot prove them), named after the Worker and
//! the host, owned by the Worker, labelled with the Worker's name; and in
//! wildcard mode a namespace's `*.<domain>` Certificate, owned by each
//! Worker it serves, labelled [`WILDCARD_LABEL`].

use isolane_crds::Worker;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use sha2::{Digest, Sha256};

use super::{CertificateSettings, Issuer};
use crate::routes::WorkerKey;

/// The label naming the Worker a Certificate is for.
pub const WORKER_LABEL: &str = "isolane.dev/worker";
/// The label of a namespace's wildcard Certificates (and their Secrets).
pub const WILDCARD_LABEL: &str = "isolane.dev/wildcard";
/// The label the router serves Secrets by (`isolane_router::tls::TLS_SECRET_LABEL`).
const TLS_LABEL: &str = "isolane.dev/tls";
/// The longest name kept readable before the hash.
const READABLE: usize = 40;

/// cert-manager's `Certificate` resource.
pub fn certificate_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate");
    ApiResource::from_gvk_with_plural(&gvk, "certificates")
}

/// The name of `worker`'s Certificate for `host` (also its Secret's):
/// readable, at most 49 characters, unique by a hash of both.
pub fn certificate_name(worker: &str, host: &str) -> String {
    let readable: String = format!("{worker}-{}", host.replace('.', "-"))
        .chars()
        .take(READABLE)
        .collect();
    let hash = Sha256::digest(format!("{worker}\n{host}").as_bytes());
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}-{short}", readable.trim_end_matches('-'))
}

/// The name of a namespace's Certificate for `*.<domain>` (also its
/// Secret's): `wildcard-<domain>-<hash>`, at most 49 characters.
pub fn wildcard_name(domain: &str) -> String {
    let readable: String = format!("wildcard-{}", domain.replace('.', "-"))
        .chars()
        .take(READABLE)
        .collect();
    let hash = Sha256::digest(format!("*.{domain}").as_bytes());
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}-{short}", readable.trim_end_matches('-'))
}

/// `namespace`'s Certificate for `*.<domain>`, owned by `owners` (the
/// Workers it serves; none is its controller), from `issuer`.
pub fn wildcard_certificate(
    namespace: &str,
    domain: &str,
    owners: Vec<OwnerReference>,
    issuer: &Issuer,
) -> DynamicObject {
    let name = wildcard_name(domain);
    let mut object = DynamicObject::new(&name, &certificate_resource());
    object.metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(namespace.to_owned()),
        labels: Some([(WILDCARD_LABEL.to_owned(), "true".to_owned())].into()),
        // None rather than empty, as the API returns it.
        owner_references: (!owners.is_empty()).then_some(owners),
        ..ObjectMeta::default()
    };
    object.data = serde_json::json!({"spec": {
        "secretName": name,
        "dnsNames": [format!("*.{domain}")],
        "issuerRef": {"group": "cert-manager.io", "kind": issuer.kind.to_string(), "name": issuer.name},
        "secretTemplate": {"labels": {TLS_LABEL: "true", WILDCARD_LABEL: "true"}},
        "privateKey": {"rotationPolicy": "Always"},
    }});
    object
}

/// The Certificates `worker` (named `key`) should have for `hosts`.
pub fn desired(
    worker: &Worker,
    key: &WorkerKey,
    hosts: &[String],
    settings: &CertificateSettings,
) -> Vec<DynamicObject> {
    let owner = worker.controller_owner_ref(&());
    hosts
        .iter()
        .filter(|host| !host.starts_with("*."))
        .map(|host| {
            let name = certificate_name(&key.name, host);
            let mut object = DynamicObject::new(&name, &certificate_resource());
            object.metadata = ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(key.namespace.clone()),
                labels: Some([(WORKER_LABEL.to_owned(), key.name.clone())].into()),
                owner_references: owner.clone().map(|owner| vec![owner]),
                ..ObjectMeta::default()
            };
            object.data = serde_json::json!({"spec": {
                "secretName": name,
                "dnsNames": [host],
                "issuerRef": {"group": "cert-manager.io", "kind": settings.issuer_kind.to_string(), "name": settings.issuer},
                "secretTemplate": {"labels": {TLS_LABEL: "true", WORKER_LABEL: key.name}},
                "privateKey": {"rotationPolicy": "Always"},
            }});
            object
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_readable_and_distinct() {
        let a = certificate_name("hello", "app.example.com");
        assert!(a.starts_with("hello-app-example-com-"), "{a}");
        assert_ne!(a, certificate_name("hello", "app.example.org"));
        let long = certificate_name(&"w".repeat(60), &"h".repeat(200));
        assert!(long.len() <= 49, "{long}");
        let wildcard = wildcard_name("team-a.example.com");
        assert!(
            wildcard.starts_with("wildcard-team-a-example-com-"),
            "{wildcard}"
        );
        assert!(wildcard_name(&"d".repeat(200)).len() <= 49);
    }
}
