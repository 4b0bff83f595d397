//! A real local Kubernetes control plane (etcd + kube-apiserver) for tests.
//!
//! [`ControlPlane::start`] starts etcd and a kube-apiserver (built by
//! `hack/build-apiserver.sh` at the version matching the `k8s-openapi` feature)
//! on random local ports with a throwaway PKI, waits for `/readyz`, and writes a
//! kubeconfig that kubectl and kube-rs both use. Dropping the [`ControlPlane`]
//! kills both processes and removes the temporary directory, unless the test
//! panicked (or `ISOLANE_KEEP_TEST_LOGS=1`), in which case the logs are kept and
//! their path printed. With `ISOLANE_TEST_KUBECONFIG` set, it uses that existing
//! cluster instead and starts nothing.
//!
//! Without a cluster, it is also the tests' support: [`wait_until`] (the one
//! deadline poll), [`Process`] (the one process supervisor) and the test PKI
//! ([`TestCa`]), a throwaway PostgreSQL server ([`Postgres`]), an OCI
//! registry ([`Registry`]) and a Gateway API implementation ([`Traefik`]). What the e2e
//! tests and the benchmarks share lives here too:
//! [`workers`] (Workers, bundles and conditions through the API),
//! [`big_module`] (the big JavaScript modules of the code cache tests and
//! the bundle benchmark),
//! [`grpc_tls`] (the router↔node PKI as flags), [`http_probe`] (a GET for
//! admin endpoints), [`h2_websocket`] (a WebSocket over HTTP/2, RFC 8441)
//! [`workerd`] (the behavioural peer, launched from one place) and
//! [`frameworks`] (the compat suite's framework apps built by their CLIs).
//!
//! There is no scheduler, controller-manager or kubelet: objects are stored and
//! validated (CRDs, webhooks, RBAC, leases), but Deployments never get Pods and
//! namespaces get no `default` ServiceAccount. The operator, router, node and e2e
//! tests compose this; `docs/testing.md` covers the environment variables.
//!
//! ```no_run
//! # async fn example() -> Result<(), isolane_testenv::Error> {
//! let cp = isolane_testenv::ControlPlane::start().await?;
//! cp.create_namespace("demo").await?;
//! let client = cp.client();
//! # drop(client);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod acme;
pub mod big_module;
pub mod collector;
mod component;
mod config;
mod deadline;
mod error;
pub mod frameworks;
pub mod grpc_tls;
pub mod h2_websocket;
pub mod http_probe;
mod kubeconfig;
mod local;
mod network;
mod node;
mod pki;
mod port;
mod postgres;
mod process;
mod registry;
mod seaweedfs;
mod slow_lines;
mod traefik;
pub mod workerd;
pub mod workers;
pub mod wrangler;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, PostParams};
use tracing::{info, warn};

pub use acme::{CERT_MANAGER_VERSION, CertManager, PEBBLE_VERSION, Pebble};
pub use collector::Collector;
pub use component::Component;
pub use config::NodeConfig;
pub use config::{
    Config, DEFAULT_READY_TIMEOUT, ENV_CACHE_DIR, ENV_ETCD, ENV_KEEP_TEST_LOGS, ENV_KUBE_APISERVER,
    ENV_TEST_KUBECONFIG, KUBE_VERSION,
};
pub use deadline::{Probe, wait_until, wait_until_blocking};
pub use error::Error;
pub use network::{BRIDGE, CGROUP_ROOT, NODE_IP, NODE_NAME, POD_SUBNET};
pub use node::host::leftovers as node_leftovers;
pub use pki::{
    FRONT_PROXY_CLIENT, GrpcPkiFiles, Leaf, TENANT_USER, TestCa, TestCert, Usage,
    write_grpc as write_grpc_pki,
};
pub use port::free_port;
pub use postgres::Postgres;
pub use process::Process;
pub use registry::{REGISTRY_VERSION, Registry};
pub use seaweedfs::{S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY, SEAWEEDFS_VERSION, SeaweedFs};
pub use traefik::{TRAEFIK_CONTROLLER, TRAEFIK_VERSION, Traefik};

use local::LocalCluster;

/// The workspace root (two levels above this crate's folder).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// A Kubernetes API server for a test: started here, or an existing cluster.
pub struct ControlPlane {
    client: kube::Client,
    kubeconfig: PathBuf,
    /// `None` on an existing cluster.
    local: Option<LocalCluster>,
    keep: bool,
    startup_time: Duration,
    /// Created by [`ControlPlane::create_namespace`]; deleted on drop on an existing cluster.
    namespaces: Mutex<Vec<String>>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("kubeconfig", &self.kubeconfig)
            .field("local", &self.local)
            .field("startup_time", &self.startup_time)
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// Starts a control plane configured by the `ISOLANE_*` environment variables
    /// ([`Config::from_env`]).
    pub async fn start() -> Result<Self, Error> {
        Self::start_with(Config::from_env()).await
    }

    /// Starts a control plane configured by `config`.
    pub async fn start_with(config: Config) -> Result<Self, Error> {
        let started = Instant::now();
        let (client, kubeconfig, local) = match &config.existing_kubeconfig {
            Some(path) => {
                info!(kubeconfig = %path.display(), "using an existing cluster");
                (kubeconfig::client(path).await?, path.clone(), None)
            }
            None => {
                let (local, client) = LocalCluster::start(&config).await?;
                (client, local.kubeconfig.clone(), Some(local))
            }
        };
        let startup_time = started.elapsed();
        info!(
            startup_ms = startup_time.as_millis(),
            kubeconfig = %kubeconfig.display(),
            "control plane ready"
        );
        Ok(Self {
            client,
            kubeconfig,
            local,
            keep: config.keep_logs,
            startup_time,
            namespaces: Mutex::new(Vec::new()),
        })
    }

    /// The kubeconfig file, for kubectl, helm or a process under test.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client authenticated as cluster-admin (`system:masters`) on a local control plane.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// `kubectl --kubeconfig <kubeconfig> <args…>`, ready to run.
    pub fn kubectl<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new("kubectl");
        command.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        command
    }

    /// Creates a namespace. On an existing cluster it is deleted again when the
    /// control plane is dropped (unless the test failed or logs are kept).
    pub async fn create_namespace(&self, name: &str) -> Result<(), Error> {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        kube::Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(|source| Error::CreateNamespace {
                name: name.to_owned(),
                source,
            })?;
        if let Ok(mut namespaces) = self.namespaces.lock() {
            namespaces.push(name.to_owned());
        }
        Ok(())
    }

    /// `kubectl apply --server-side` of a manifest file (or directory). Server-side
    /// apply has no `last-applied-configuration` annotation, so large CRDs fit.
    pub async fn apply_file(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let args: [&OsStr; 6] = [
            "apply".as_ref(),
            "--server-side".as_ref(),
            "--force-conflicts".as_ref(),
            "--field-manager=isolane-testenv".as_ref(),
            "-f".as_ref(),
            path.as_os_str(),
        ];
        run_kubectl(self.kubectl(args)).await
    }

    /// True when this is an existing cluster (`ISOLANE_TEST_KUBECONFIG`), not one started here.
    pub fn is_existing_cluster(&self) -> bool {
        self.local.is_none()
    }

    /// The pids of etcd and kube-apiserver (and the node's processes, when it
    /// runs one); empty on an existing cluster.
    pub fn process_ids(&self) -> Vec<u32> {
        self.local
            .as_ref()
            .map(|local| {
                let mut pids = vec![local.etcd.pid(), local.apiserver.pid()];
                pids.extend(local.node.iter().flat_map(node::LocalNode::pids));
                pids
            })
            .unwrap_or_default()
    }

    /// True when this control plane runs a node of its own (see [`NodeConfig`]).
    pub fn has_node(&self) -> bool {
        self.local
            .as_ref()
            .is_some_and(|local| local.node.is_some())
    }

    /// The temporary directory with `etcd.log`, `kube-apiserver.log`, the PKI and
    /// the kubeconfig; `None` on an existing cluster.
    pub fn log_dir(&self) -> Option<&Path> {
        self.local.as_ref().map(LocalCluster::dir_path)
    }

    /// The client certificate and key of [`TENANT_USER`] (a user RBAC grants
    /// nothing until a test binds it), signed by the apiserver's client CA;
    /// `None` on an existing cluster.
    pub fn tenant_client_cert(&self) -> Option<(PathBuf, PathBuf)> {
        let dir = self.log_dir()?;
        Some((dir.join(pki::TENANT_CERT), dir.join(pki::TENANT_KEY)))
    }

    /// How long [`ControlPlane::start`] took, until `/readyz` answered.
    pub fn startup_time(&self) -> Duration {
        self.startup_time
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.local.is_some() || self.keep || std::thread::panicking() {
            return;
        }
        let namespaces = match self.namespaces.lock() {
            Ok(mut namespaces) => std::mem::take(&mut *namespaces),
            Err(_) => return,
        };
        if namespaces.is_empty() {
            return;
        }
        let mut kubectl =
            self.kubectl(["delete", "namespace", "--wait=false", "--ignore-not-found"]);
        kubectl.args(&namespaces);
        match kubectl.output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => warn!(
                status = %output.status,
                stderr = %String::from_utf8_lossy(&output.stderr),
                "failed to delete test namespaces"
            ),
            Err(error) => warn!(%error, "failed to run kubectl to delete test namespaces"),
        }
    }
}

async fn run_kubectl(command: Command) -> Result<(), Error> {
    let args = command
        .get_args()
        .map(|arg| arg.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let output = tokio::process::Command::from(command)
        .output()
        .await
        .map_err(Error::KubectlSpawn)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Kubectl {
            args,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}
