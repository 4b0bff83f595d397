//! The one error type of this crate.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use crate::component::Component;

/// Why a control plane could not be started or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(
        "kube-apiserver not found at {path}: run hack/install-deps.sh (or hack/build-apiserver.sh), \
         or set ISOLANE_KUBE_APISERVER"
    )]
    ApiserverNotFound { path: PathBuf },

    #[error(
        "neither ISOLANE_CACHE_DIR nor HOME is set, so the kube-apiserver cache cannot be found; set ISOLANE_KUBE_APISERVER"
    )]
    NoCacheDir,

    #[error(
        "etcd not found ({searched}): run hack/install-deps.sh (Debian's etcd-server), or set ISOLANE_ETCD"
    )]
    EtcdNotFound { searched: String },

    #[error(
        "setpriv (util-linux) not found on PATH: it ties the processes a test starts to the test process"
    )]
    SetprivNotFound,

    #[error("{path} not found: run hack/install-deps.sh (it builds {name} into the cache)")]
    BinaryNotFound { name: &'static str, path: PathBuf },

    #[error("{program} not found on PATH: run hack/install-deps.sh")]
    NodeToolNotFound { program: &'static str },

    #[error("`{command}` failed: {detail}")]
    HostCommand { command: String, detail: String },

    #[error("{what} was not ready within {timeout:?} ({detail})")]
    NodeNotReady {
        what: &'static str,
        timeout: Duration,
        detail: String,
    },

    #[error("failed to create a temporary directory")]
    TempDir(#[source] io::Error),

    #[error("failed to generate the {what} certificate")]
    Certificate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },

    #[error("failed to write {path}")]
    WriteFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("failed to reserve a free port on 127.0.0.1")]
    FreePort(#[source] io::Error),

    #[error("failed to start {name}")]
    Spawn {
        name: String,
        #[source]
        source: io::Error,
    },

    #[error("{component} exited during startup ({status}); log: {}\n{tail}", log.display())]
    ExitedEarly {
        component: Component,
        status: ExitStatus,
        log: PathBuf,
        tail: String,
    },

    #[error("kube-apiserver was not ready within {timeout:?} (last: {last_error}); logs in {}", dir.display())]
    NotReady {
        timeout: Duration,
        last_error: String,
        dir: PathBuf,
    },

    #[error("cannot make the /readyz URL from the server URL {url}")]
    ServerUrl {
        url: String,
        #[source]
        source: http::Error,
    },

    #[error("failed to serialize the kubeconfig")]
    SerializeKubeconfig(#[source] serde_yaml::Error),

    #[error("failed to load the kubeconfig {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },

    #[error("failed to build a Kubernetes client")]
    Client(#[source] kube::Error),

    #[error("failed to create namespace {name}")]
    CreateNamespace {
        name: String,
        #[source]
        source: kube::Error,
    },

    #[error("failed to run kubectl")]
    KubectlSpawn(#[source] io::Error),

    #[error("`kubectl {args}` failed ({status}): {stderr}")]
    Kubectl {
        args: String,
        status: ExitStatus,
        stderr: String,
    },
}

impl Error {
    /// A bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ApiserverNotFound { .. } => "apiserver_not_found",
            Self::NoCacheDir => "no_cache_dir",
            Self::EtcdNotFound { .. } => "etcd_not_found",
            Self::SetprivNotFound => "setpriv_not_found",
            Self::BinaryNotFound { .. } => "binary_not_found",
            Self::NodeToolNotFound { .. } => "node_tool_not_found",
            Self::HostCommand { .. } => "host_command",
            Self::NodeNotReady { .. } => "node_not_ready",
            Self::TempDir(_) => "temp_dir",
            Self::Certificate { .. } => "certificate",
            Self::WriteFile { .. } => "write_file",
            Self::FreePort(_) => "free_port",
            Self::Spawn { .. } => "spawn",
            Self::ExitedEarly { .. } => "exited_early",
            Self::NotReady { .. } => "not_ready",
            Self::ServerUrl { .. } => "server_url",
            Self::SerializeKubeconfig(_) => "serialize_kubeconfig",
            Self::Kubeconfig { .. } => "kubeconfig",
            Self::Client(_) => "client",
            Self::CreateNamespace { .. } => "create_namespace",
            Self::KubectlSpawn(_) => "kubectl_spawn",
            Self::Kubectl { .. } => "kubectl",
        }
    }

    /// A process lost the race for a port picked by bind-and-release; worth a retry.
    pub(crate) fn is_port_conflict(&self) -> bool {
        matches!(self, Self::ExitedEarly { tail, .. } if tail.contains("address already in use"))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn exited(tail: &str) -> Error {
        Error::ExitedEarly {
            component: Component::Etcd,
            status: ExitStatus::from_raw(256),
            log: PathBuf::from("etcd.log"),
            tail: tail.to_owned(),
        }
    }

    #[test]
    fn only_a_taken_port_is_retried() {
        let taken = exited("listen tcp 127.0.0.1:2379: bind: address already in use");
        assert!(taken.is_port_conflict());
        assert!(!exited("permission denied").is_port_conflict());
        assert!(!Error::SetprivNotFound.is_port_conflict());
    }
}
