//! Where the control plane comes from: an existing cluster, or local binaries.
//!
//! Every setting is an environment variable named by a constant here, read once
//! by [`Config::from_env`]. Tests that need something else build a [`Config`]
//! directly and call [`ControlPlane::start_with`](crate::ControlPlane::start_with).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Error;

/// Path of a kubeconfig for an existing cluster to use instead of starting one.
pub const ENV_TEST_KUBECONFIG: &str = "ISOLANE_TEST_KUBECONFIG";
/// Path of the kube-apiserver binary (default: the build cache, see [`ENV_CACHE_DIR`]).
pub const ENV_KUBE_APISERVER: &str = "ISOLANE_KUBE_APISERVER";
/// Path of the etcd binary (default: `etcd` on `PATH`).
pub const ENV_ETCD: &str = "ISOLANE_ETCD";
/// `1` (or `true`) keeps the temporary directory with the logs even when the test passed.
pub const ENV_KEEP_TEST_LOGS: &str = "ISOLANE_KEEP_TEST_LOGS";
/// Cache directory of `hack/build-apiserver.sh` (default: `$HOME/.cache/isolane`).
pub const ENV_CACHE_DIR: &str = "ISOLANE_CACHE_DIR";

/// The Kubernetes version `hack/build-apiserver.sh` builds; it matches the
/// `k8s-openapi` feature (`v1_33`) the workspace compiles against.
pub const KUBE_VERSION: &str = "v1.33.13";

/// How long [`ControlPlane::start`](crate::ControlPlane::start) waits for `/readyz`.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How to get a control plane.
#[derive(Clone, Debug)]
pub struct Config {
    /// Use this existing cluster; start no processes.
    pub existing_kubeconfig: Option<PathBuf>,
    /// The kube-apiserver binary; `None` looks in the cache directory.
    pub kube_apiserver: Option<PathBuf>,
    /// The etcd binary; `None` looks for `etcd` on `PATH`.
    pub etcd: Option<PathBuf>,
    /// Where `hack/build-apiserver.sh` caches the apiserver; `None` means `$HOME/.cache/isolane`.
    pub cache_dir: Option<PathBuf>,
    /// Keep the temporary directory (logs, certificates, kubeconfig) after a passing test.
    pub keep_logs: bool,
    /// Deadline for the apiserver to report ready.
    pub ready_timeout: Duration,
    /// Also run a whole node (controllers, containerd, kubelet, kube-proxy)
    /// with these images; needs root. Ignored on an existing cluster.
    pub node: Option<NodeConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            existing_kubeconfig: None,
            kube_apiserver: None,
            etcd: None,
            cache_dir: None,
            keep_logs: false,
            ready_timeout: DEFAULT_READY_TIMEOUT,
            node: None,
        }
    }
}

impl Config {
    /// Reads the `ISOLANE_*` variables above; empty values count as unset.
    pub fn from_env() -> Self {
        let path = |name: &str| non_empty(name).map(PathBuf::from);
        Self {
            existing_kubeconfig: path(ENV_TEST_KUBECONFIG),
            kube_apiserver: path(ENV_KUBE_APISERVER),
            etcd: path(ENV_ETCD),
            cache_dir: path(ENV_CACHE_DIR),
            keep_logs: non_empty(ENV_KEEP_TEST_LOGS)
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            node: None,
        }
    }

    /// The cache directory of `hack/build-apiserver.sh`.
    pub(crate) fn cache_dir(&self) -> Result<PathBuf, Error> {
        match &self.cache_dir {
            Some(dir) => Ok(dir.clone()),
            None => std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| Path::new(&home).join(".cache").join("isolane"))
                .ok_or(Error::NoCacheDir),
        }
    }

    /// `<cache>/<name>-<KUBE_VERSION>`, built by `hack/build-apiserver.sh <name>`,
    /// which must exist.
    pub(crate) fn cache_binary(&self, name: &'static str) -> Result<PathBuf, Error> {
        self.cached(name, KUBE_VERSION)
    }

    /// `<cache>/<name>-<version>`, which must exist.
    pub(crate) fn cached(&self, name: &'static str, version: &str) -> Result<PathBuf, Error> {
        let path = self.cache_dir()?.join(format!("{name}-{version}"));
        if path.is_file() {
            Ok(path)
        } else {
            Err(Error::BinaryNotFound { name, path })
        }
    }

    /// The kube-apiserver binary to run, which must exist.
    pub(crate) fn kube_apiserver_binary(&self) -> Result<PathBuf, Error> {
        let path = match &self.kube_apiserver {
            Some(path) => path.clone(),
            None => self
                .cache_dir()?
                .join(format!("kube-apiserver-{KUBE_VERSION}")),
        };
        if path.is_file() {
            Ok(path)
        } else {
            Err(Error::ApiserverNotFound { path })
        }
    }

    /// The etcd binary to run, which must exist.
    pub(crate) fn etcd_binary(&self) -> Result<PathBuf, Error> {
        match &self.etcd {
            Some(path) if path.is_file() => Ok(path.clone()),
            Some(path) => Err(Error::EtcdNotFound {
                searched: path.display().to_string(),
            }),
            None => find_on_path("etcd").ok_or_else(|| Error::EtcdNotFound {
                searched: "etcd on PATH".to_owned(),
            }),
        }
    }
}

fn non_empty(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// The first executable file called `program` in a `PATH` directory.
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// What the node runs: images to load into containerd before the kubelet starts.
#[derive(Clone, Debug, Default)]
pub struct NodeConfig {
    /// OCI image archives (`make images`) imported into containerd.
    pub images: Vec<PathBuf>,
    /// The pod sandbox image, which must be one of `images`
    /// (`hack/build-images.sh` builds `isolane-pause`).
    pub pause_image: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_apiserver_names_the_install_script() {
        let config = Config {
            kube_apiserver: Some(PathBuf::from("/nonexistent/kube-apiserver")),
            ..Config::default()
        };
        let error = config.kube_apiserver_binary().unwrap_err();
        assert_eq!(error.kind(), "apiserver_not_found");
        assert!(
            error.to_string().contains("hack/install-deps.sh"),
            "{error}"
        );
    }

    #[test]
    fn cache_dir_decides_the_default_apiserver_path() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join(format!("kube-apiserver-{KUBE_VERSION}"));
        std::fs::write(&binary, b"").unwrap();
        let config = Config {
            cache_dir: Some(dir.path().to_owned()),
            ..Config::default()
        };
        assert_eq!(config.kube_apiserver_binary().unwrap(), binary);
    }

    #[test]
    fn missing_etcd_names_the_install_script() {
        let config = Config {
            etcd: Some(PathBuf::from("/nonexistent/etcd")),
            ..Config::default()
        };
        let error = config.etcd_binary().unwrap_err();
        assert!(
            error.to_string().contains("hack/install-deps.sh"),
            "{error}"
        );
    }
}
