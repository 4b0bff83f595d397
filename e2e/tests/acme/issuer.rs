//! The ACME ClusterIssuer against Pebble, its readiness, Pebble's issuing
//! root and its log of validations, a namespace's Certificates, and a
//! forced renewal as `cmctl renew` does it.

use std::time::Duration;

use isolane_testenv::{ControlPlane, Pebble, wait_until};
use k8s_openapi::ByteString;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use super::client::{Connection, H1};

/// cert-manager's `Certificate` resource.
pub fn certificate_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate");
    ApiResource::from_gvk_with_plural(&gvk, "certificates")
}

/// `namespace`'s Certificates (none when the list fails).
pub async fn certificates(cp: &ControlPlane, namespace: &str) -> Vec<DynamicObject> {
    let resource = certificate_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(cp.client(), namespace, &resource);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// Pebble's log shows an HTTP-01 validation of `host` on port 80 and an
/// authorization made valid by it; returns how many authorizations were.
pub fn assert_validated(pebble: &Pebble, host: &str) -> usize {
    let log = pebble.process().log();
    let asked =
        format!("Attempting to validate w/ HTTP: http://{host}:80/.well-known/acme-challenge/");
    assert!(
        log.contains(&asked),
        "no HTTP-01 validation of {host}:\n{log}"
    );
    let valid = log.matches("set VALID by completed challenge").count();
    assert!(valid > 0, "not valid:\n{log}");
    valid
}

/// cert-manager's `ClusterIssuer` resource.
pub fn cluster_issuer() -> ApiResource {
    let gvk = GroupVersionKind::gvk("cert-manager.io", "v1", "ClusterIssuer");
    ApiResource::from_gvk_with_plural(&gvk, "clusterissuers")
}

/// Creates ClusterIssuer `name`: ACME at Pebble's directory (its API's CA
/// as the caBundle), HTTP-01 through an ingress solver.
pub async fn create(cp: &ControlPlane, name: &str, pebble: &Pebble) {
    let ca_bundle =
        serde_json::to_value(ByteString(pebble.api_ca_pem().into_bytes())).expect("base64");
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
        "metadata": {"name": name},
        "spec": {"acme": {
            "server": pebble.directory_url(),
            "caBundle": ca_bundle,
            "email": "ops@acme.test",
            "privateKeySecretRef": {"name": format!("{name}-account")},
            "solvers": [{"http01": {"ingress": {"ingressClassName": "isolane"}}}],
        }},
    }))
    .expect("a ClusterIssuer");
    let api: Api<DynamicObject> = Api::all_with(cp.client(), &cluster_issuer());
    api.create(&PostParams::default(), &object)
        .await
        .expect("create the ClusterIssuer");
}

/// The `status` of condition `type_` of `object`.
fn condition_status(object: &DynamicObject, type_: &str) -> Option<String> {
    let conditions = object.data.pointer("/status/conditions")?.as_array()?;
    let found = conditions.iter().find(|c| c["type"] == type_)?;
    Some(found["status"].as_str()?.to_owned())
}

/// Waits until ClusterIssuer `name` is Ready (its ACME account registered).
pub async fn wait_ready(cp: &ControlPlane, name: &str, timeout: Duration) {
    let api: Api<DynamicObject> = Api::all_with(cp.client(), &cluster_issuer());
    wait_until("the ClusterIssuer to be Ready", timeout, || async {
        let issuer = api.get(name).await.map_err(|e| e.to_string())?;
        match condition_status(&issuer, "Ready").as_deref() {
            Some("True") => Ok(()),
            _ => Err(format!("{:?}", issuer.data.get("status"))),
        }
    })
    .await;
}

/// Gives ClusterIssuer `name` a new ACME account (a new private key
/// Secret) and waits until it is registered and Ready. Pebble reuses an
/// account's valid authorization for a new order 1 time in 100 even with
/// `PEBBLE_AUTHZREUSE=0` (its test is `rand.Intn(100) > percent`); an order
/// from a new account is always validated anew.
pub async fn new_account(cp: &ControlPlane, name: &str, timeout: Duration) {
    let api: Api<DynamicObject> = Api::all_with(cp.client(), &cluster_issuer());
    let account = |issuer: &DynamicObject| issuer.data.pointer("/status/acme/uri").cloned();
    let before = account(&api.get(name).await.expect("the ClusterIssuer"));
    let secret = format!("{name}-account-renewal");
    let patch = serde_json::json!({"spec": {"acme": {"privateKeySecretRef": {"name": secret}}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("a new account key for the ClusterIssuer");
    wait_until("the ClusterIssuer's new account", timeout, || async {
        let issuer = api.get(name).await.map_err(|e| e.to_string())?;
        let now = account(&issuer);
        let ready = condition_status(&issuer, "Ready").as_deref() == Some("True");
        if ready && now.is_some() && now != before {
            Ok(())
        } else {
            Err(format!("{:?}", issuer.data.get("status")))
        }
    })
    .await;
}

/// Pebble's issuing root (PEM), from its management API.
pub async fn issuing_root(pebble: &Pebble) -> String {
    let url = pebble.issuing_root_url();
    let rest = url.trim_start_matches("https://localhost:");
    let (port, path) = rest.split_once('/').expect("a port and a path");
    let addr = ([127, 0, 0, 1], port.parse::<u16>().expect("a port")).into();
    let mut connection = Connection::open_trusting(addr, "localhost", &pebble.api_ca_pem(), H1)
        .await
        .expect("Pebble's management API");
    let (status, pem) = connection.get(&format!("/{path}")).await.expect("the root");
    assert_eq!(status, 200, "{pem}");
    pem
}

/// Asks cert-manager to issue Certificate `namespace/name` again now, as
/// `cmctl renew` does: an `Issuing` condition, True, on its status.
pub async fn renew(cp: &ControlPlane, namespace: &str, name: &str) {
    let resource = certificate_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(cp.client(), namespace, &resource);
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = serde_json::json!({"status": {"conditions": [
        {"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
         "message": "renewal forced by the test", "lastTransitionTime": now}
    ]}});
    let current = api.get_status(name).await.expect("the Certificate");
    let mut conditions: Vec<serde_json::Value> = current
        .data
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "Issuing");
    conditions.extend(
        patch["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    let body = serde_json::json!({"status": {"conditions": conditions}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .expect("mark the Certificate Issuing");
}
