//! A whole node for a test: kube-controller-manager, kube-scheduler,
//! containerd (with runc and the CNI bridge plugin), the kubelet and kube-proxy,
//! next to the control plane's etcd and kube-apiserver.
//!
//! Networking: the node's bridge [`BRIDGE`] holds [`NODE_IP`]; the apiserver
//! listens there (so pods reach it through the `kubernetes` Service, which
//! kube-proxy sends to the node's address), pods get addresses in
//! [`POD_SUBNET`], and Services' ClusterIPs are reachable from the host
//! through kube-proxy's iptables rules. Every process runs as a child of the
//! test (killed with it, see `process.rs`); containerd's state, runc's, the
//! kubelet's and the CNI's are in the test's directory. [`NodeHost`] removes
//! what the node makes outside it (the bridge, the `KUBE-*` iptables chains, the
//! pods' cgroups under [`CGROUP_ROOT`], the mounts) when it is dropped. One node
//! runs on a machine at a time.

mod files;
pub(crate) mod host;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use tracing::{debug, info};

use crate::Error;
use crate::component::Component;
use crate::config::{Config, NodeConfig};
pub use crate::network::{BRIDGE, CGROUP_ROOT, NODE_IP, NODE_NAME, POD_SUBNET};
pub(crate) use crate::network::{POD_PREFIX_LEN, POD_RANGE_START};
use crate::pki::PkiFiles;
use crate::process::Supervised;
use files::NodeDirs;

/// How long the node gets to report Ready on a loaded machine.
const NODE_READY_TIMEOUT: Duration = Duration::from_secs(120);
/// containerd's namespace for Kubernetes (the CRI plugin's).
const CRI_NAMESPACE: &str = "k8s.io";

/// The machine-wide lock and the bridge, made before the apiserver starts
/// (it listens on the bridge's address); dropping it removes all the host
/// state the node made.
#[derive(Debug)]
pub(crate) struct NodeHost {
    dir: PathBuf,
    runc_root: PathBuf,
    kube_proxy: Option<PathBuf>,
    fixed: host::FixedDirs,
    _lock: host::NodeLock,
}

impl NodeHost {
    pub(crate) fn prepare(dir: &Path, config: &Config) -> Result<Self, Error> {
        let lock = host::NodeLock::acquire()?;
        let dirs = NodeDirs::new(dir);
        // A node of a killed test may have left state behind; start clean.
        let kube_proxy = config.cache_binary("kube-proxy").ok();
        host::clean_stale(kube_proxy.as_deref());
        let prepared = Self {
            dir: dir.join("node"),
            runc_root: dirs.runc_root,
            kube_proxy,
            fixed: host::FixedDirs::snapshot(),
            _lock: lock,
        };
        host::create_bridge()?;
        Ok(prepared)
    }

    fn clean(&mut self) {
        host::clean(
            &self.dir,
            &self.runc_root,
            self.kube_proxy.as_deref(),
            &self.fixed,
        );
    }
}

impl Drop for NodeHost {
    fn drop(&mut self) {
        self.clean();
    }
}

/// The node's processes, stopped (kubelet first) when dropped.
#[derive(Debug)]
pub(crate) struct LocalNode {
    processes: Vec<Supervised>,
}

impl LocalNode {
    /// Starts the controllers, containerd (loading the images), the kubelet and
    /// kube-proxy, and waits until the node is Ready.
    pub(crate) async fn start(
        dir: &Path,
        config: &Config,
        node: &NodeConfig,
        pki: &PkiFiles,
        kubeconfig: &Path,
        client: &kube::Client,
    ) -> Result<Self, Error> {
        let started = Instant::now();
        let dirs = NodeDirs::new(dir);
        for path in [
            &dirs.containerd_root,
            &dirs.containerd_state,
            &dirs.runc_root,
            &dirs.cni_conf_dir,
            &dirs.cni_ipam_dir,
            &dirs.kubelet_root,
        ] {
            std::fs::create_dir_all(path).map_err(|source| Error::WriteFile {
                path: path.clone(),
                source,
            })?;
        }
        let node_dir = dir.join("node");
        let write = |path: &Path, contents: &str| crate::pki::write_file(path, contents);
        write(
            &dirs.containerd_config,
            &files::containerd(&dirs, &node.pause_image),
        )?;
        write(
            &dirs.cni_conf_dir.join("10-isolane.conflist"),
            &files::cni(&dirs),
        )?;
        let [
            kubelet_port,
            proxy_healthz,
            proxy_metrics,
            kcm_port,
            scheduler_port,
        ] = crate::port::free_ports().map_err(Error::FreePort)?;
        write(
            &dirs.kubelet_config,
            &files::kubelet(&dirs, kubelet_port, &node_dir.join("pod-logs")),
        )?;
        write(
            &dirs.kube_proxy_config,
            &files::kube_proxy(kubeconfig, proxy_healthz, proxy_metrics),
        )?;

        let mut this = Self {
            processes: Vec::new(),
        };
        let log = |name: &str| dir.join(format!("{name}.log"));
        let kc = kubeconfig.as_os_str();
        let arg = |name: &str, value: &OsString| {
            let mut arg = OsString::from(format!("--{name}="));
            arg.push(value);
            arg
        };

        let kcm_certs = node_dir.join("kcm-certs");
        this.processes.push(Supervised::spawn(
            Component::KubeControllerManager,
            &config.cache_binary("kube-controller-manager")?,
            &[
                arg("kubeconfig", &kc.into()),
                arg(
                    "service-account-private-key-file",
                    &pki.service_account_key.clone().into(),
                ),
                arg("root-ca-file", &pki.ca_cert.clone().into()),
                "--leader-elect=false".into(),
                "--use-service-account-credentials=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={kcm_port}").into(),
                arg("cert-dir", &kcm_certs.into()),
                "--profiling=false".into(),
                // HorizontalPodAutoscalers act within a test's patience
                // (the default looks every 15 s).
                "--horizontal-pod-autoscaler-sync-period=5s".into(),
            ],
            &log("kube-controller-manager"),
        )?);
        let scheduler_certs = node_dir.join("scheduler-certs");
        this.processes.push(Supervised::spawn(
            Component::KubeScheduler,
            &config.cache_binary("kube-scheduler")?,
            &[
                arg("kubeconfig", &kc.into()),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={scheduler_port}").into(),
                arg("cert-dir", &scheduler_certs.into()),
                "--profiling=false".into(),
            ],
            &log("kube-scheduler"),
        )?);

        let containerd = find("containerd")?;
        this.processes.push(Supervised::spawn(
            Component::Containerd,
            &containerd,
            &[arg("config", &dirs.containerd_config.clone().into())],
            &log("containerd"),
        )?);
        this.wait_for("containerd's socket", Duration::from_secs(30), || {
            dirs.containerd_socket.exists()
        })
        .await?;
        for image in &node.images {
            import_image(&dirs.containerd_socket, image).await?;
        }
        debug!(
            elapsed_ms = started.elapsed().as_millis(),
            "images imported"
        );

        this.processes.push(Supervised::spawn(
            Component::Kubelet,
            &config.cache_binary("kubelet")?,
            &[
                arg("config", &dirs.kubelet_config.clone().into()),
                arg("kubeconfig", &kc.into()),
                arg("root-dir", &dirs.kubelet_root.clone().into()),
                arg("cert-dir", &node_dir.join("kubelet-pki").into()),
                format!("--hostname-override={NODE_NAME}").into(),
                format!("--node-ip={NODE_IP}").into(),
            ],
            &log("kubelet"),
        )?);
        this.processes.push(Supervised::spawn(
            Component::KubeProxy,
            &config.cache_binary("kube-proxy")?,
            &[arg("config", &dirs.kube_proxy_config.clone().into())],
            &log("kube-proxy"),
        )?);

        this.wait_ready(client).await?;
        info!(
            startup_ms = started.elapsed().as_millis(),
            node = NODE_NAME,
            "node ready"
        );
        Ok(this)
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(Supervised::pid).collect()
    }

    fn check_running(&mut self) -> Result<(), Error> {
        self.processes
            .iter_mut()
            .try_for_each(Supervised::check_running)
    }

    async fn wait_for(
        &mut self,
        what: &'static str,
        timeout: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_running()?;
            if done() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what,
                    timeout,
                    detail: String::new(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls the Node object until its Ready condition is True.
    async fn wait_ready(&mut self, client: &kube::Client) -> Result<(), Error> {
        let nodes = kube::Api::<Node>::all(client.clone());
        let deadline = Instant::now() + NODE_READY_TIMEOUT;
        let mut last = String::from("not registered");
        loop {
            self.check_running()?;
            match nodes.get_opt(NODE_NAME).await {
                Ok(Some(node)) => {
                    let ready = node
                        .status
                        .and_then(|status| status.conditions)
                        .and_then(|conditions| conditions.into_iter().find(|c| c.type_ == "Ready"));
                    match ready {
                        Some(condition) if condition.status == "True" => return Ok(()),
                        Some(condition) => {
                            last = format!(
                                "Ready={} {}",
                                condition.status,
                                condition.message.unwrap_or_default()
                            );
                        }
                        None => last = String::from("no Ready condition"),
                    }
                }
                Ok(None) => {}
                Err(error) => last = error.to_string(),
            }
            if Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what: "the node",
                    timeout: NODE_READY_TIMEOUT,
                    detail: last,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for LocalNode {
    fn drop(&mut self) {
        // The kubelet first (it would restart what is stopped under it), then
        // kube-proxy, containerd and the controllers.
        while let Some(mut process) = self.processes.pop() {
            process.kill();
        }
    }
}

fn find(program: &'static str) -> Result<PathBuf, Error> {
    crate::config::find_on_path(program).ok_or(Error::NodeToolNotFound { program })
}

/// `ctr images import` into the CRI plugin's namespace.
async fn import_image(socket: &Path, archive: &Path) -> Result<(), Error> {
    let ctr = find("ctr")?;
    let output = tokio::process::Command::new(ctr)
        .arg("--address")
        .arg(socket)
        .args(["--namespace", CRI_NAMESPACE, "images", "import"])
        .arg(archive)
        .output()
        .await
        .map_err(|source| Error::HostCommand {
            command: format!("ctr images import {}", archive.display()),
            detail: source.to_string(),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::HostCommand {
            command: format!("ctr images import {}", archive.display()),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}
