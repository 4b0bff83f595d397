//! cert-manager for the certificate tests (acme.rs, acme_wildcard.rs): its
//! CRDs applied and its controller started, and a Certificate's DNS names.

use isolane_testenv::acme::cert_manager_crds;
use isolane_testenv::{CertManager, ControlPlane};
use kube::core::DynamicObject;

/// The namespace of ClusterIssuers' Secrets.
pub const NAMESPACE: &str = "cert-manager";

/// Applies cert-manager's CRDs, makes [`NAMESPACE`] and starts the
/// controller (its HTTP-01 self-checks resolving through `nameserver`).
pub async fn start(cp: &ControlPlane, nameserver: &str) -> CertManager {
    install(cp).await;
    start_controller(cp, nameserver)
}

/// Applies cert-manager's CRDs, waits until they are established, and
/// makes [`NAMESPACE`]: what must exist before anything (a chart, an
/// issuer) uses cert-manager's kinds.
pub async fn install(cp: &ControlPlane) {
    cp.apply_file(cert_manager_crds().expect("cert-manager's CRDs are built"))
        .await
        .expect("apply cert-manager's CRDs");
    let established = cp
        .kubectl(["wait", "--for=condition=Established", "crd", "--all"])
        .output()
        .expect("kubectl runs");
    assert!(
        established.status.success(),
        "cert-manager's CRDs are established: {}",
        String::from_utf8_lossy(&established.stderr)
    );
    cp.create_namespace(NAMESPACE)
        .await
        .expect("cert-manager's namespace");
}

/// Starts cert-manager's controller, its HTTP-01 self-checks resolving
/// through `nameserver`.
pub fn start_controller(cp: &ControlPlane, nameserver: &str) -> CertManager {
    CertManager::start(cp.kubeconfig_path(), NAMESPACE, nameserver).expect("cert-manager starts")
}

/// The DNS names of `certificate`'s spec.
pub fn dns_names(certificate: &DynamicObject) -> Vec<String> {
    let names = certificate.data.pointer("/spec/dnsNames");
    let names = names
        .and_then(|n| n.as_array())
        .cloned()
        .unwrap_or_default();
    names
        .iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}
