//! cert-manager's controller (hack/cert-manager), watching every namespace
//! through a kubeconfig, its HTTP-01 self-checks resolving names through
//! the given DNS server, each Certificate the owner of its Secret (as
//! cert-manager's chart's `enableCertificateOwnerRef: true` does), so the
//! garbage collector deletes the Secret with it where a
//! kube-controller-manager runs. Its CRDs must be applied first
//! ([`super::cert_manager_crds`]).

use std::path::Path;

use tempfile::TempDir;

use super::{READY_WITHIN, binary};
use crate::Error;
use crate::component::Component;
use crate::port::free_port;
use crate::process::Process;

/// A running cert-manager controller.
pub struct CertManager {
    process: Process,
    _dir: TempDir,
}

impl std::fmt::Debug for CertManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertManager")
            .field("pid", &self.process.pid())
            .finish_non_exhaustive()
    }
}

impl CertManager {
    /// Starts the controller against `kubeconfig`, the Secrets of
    /// ClusterIssuers in `cluster_resource_namespace`, self-checks through
    /// `nameserver` (`host:port`); returns once its caches have synced.
    pub fn start(
        kubeconfig: &Path,
        cluster_resource_namespace: &str,
        nameserver: &str,
    ) -> Result<Self, Error> {
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let healthz = free_port().map_err(Error::FreePort)?;
        let args = [
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--cluster-resource-namespace={cluster_resource_namespace}"),
            format!("--acme-http01-solver-nameservers={nameserver}"),
            format!("--healthz-addr=127.0.0.1:{healthz}"),
            "--enable-certificate-owner-ref".to_owned(),
            "-v=2".to_owned(),
        ];
        let log = dir.path().join("cert-manager.log");
        let program = binary("cert-manager-controller")?;
        let mut process = Process::spawn("cert-manager", &program, args, &[], &log)?;
        process.wait_listening(Component::CertManager, &[healthz], READY_WITHIN)?;
        Ok(Self { process, _dir: dir })
    }

    /// The controller's process (its log tells each control loop's work).
    pub fn process(&self) -> &Process {
        &self.process
    }
}
