//! The distributed path as processes: etcd + kube-apiserver (isolane-testenv),
//! then the operator, one runtime node and the router from `target/release`,
//! and a Worker applied through the API and served through the router.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_crds::Worker;
use isolane_testenv::grpc_tls::{node_tls_args, router_tls_args};
use isolane_testenv::workers::{OPERATOR_NAMESPACE, apply, inline_worker, prepare, wait_ready};
use isolane_testenv::{ControlPlane, Registry};
use isolane_testenv::{Process, free_port, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

use crate::servers::Server;

/// Namespace of the benchmark's Workers.
pub const NAMESPACE: &str = "bench";

/// A running control plane with operator, node and router.
pub struct Cluster {
    // Dropped in reverse order of start: router, node, operator, control plane.
    pub router: Server,
    pub node: Process,
    /// The node's admin server (`/metrics`, `/ready`).
    pub node_admin: SocketAddr,
    node_launch: NodeLaunch,
    _operator: Process,
    pub control_plane: ControlPlane,
}

impl Cluster {
    /// Kills the node (SIGKILL, as a crash) and starts it again with the
    /// same flags and `extra`, at once; the new process's log is
    /// `node-<n>.log`.
    pub fn restart_node(&mut self, extra: &[String]) -> anyhow::Result<()> {
        self.node.kill();
        self.node = self.node_launch.spawn(extra)?;
        Ok(())
    }
}

/// How the node was started, to start it again.
struct NodeLaunch {
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, OsString)>,
    dir: PathBuf,
    starts: usize,
}

impl NodeLaunch {
    fn spawn(&mut self, extra: &[String]) -> anyhow::Result<Process> {
        let log = match self.starts {
            0 => self.dir.join("node.log"),
            n => self.dir.join(format!("node-{n}.log")),
        };
        self.starts += 1;
        let envs: Vec<(&str, &OsStr)> = self
            .envs
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_os_str()))
            .collect();
        Process::spawn(
            "isolane-node",
            &self.program,
            self.args.iter().chain(extra),
            &envs,
            &log,
        )
        .context("starting isolane-node")
    }
}

/// Where the release binaries are.
#[derive(Debug, Clone)]
pub struct ClusterBinaries {
    pub operator: PathBuf,
    pub node: PathBuf,
    pub router: PathBuf,
}

impl ClusterBinaries {
    /// `isolane-operator`, `isolane-node` and `isolane-router` in `dir`.
    pub fn in_dir(dir: &Path) -> anyhow::Result<Self> {
        let found = |name: &str| {
            let path = dir.join(name);
            if path.exists() {
                Ok(path)
            } else {
                Err(anyhow::anyhow!("{} not built", path.display()))
            }
        };
        Ok(Self {
            operator: found("isolane-operator")?,
            node: found("isolane-node")?,
            router: found("isolane-router")?,
        })
    }
}

/// Starts the control plane and the operator (default flags and `extra`,
/// logs at `warn`), and waits for the operator's `/readyz`.
pub async fn control_plane_with_operator(
    operator: &Path,
    dir: &Path,
    extra: &[&str],
) -> anyhow::Result<(ControlPlane, Process)> {
    control_plane_with_operator_env(operator, dir, extra, &[]).await
}

/// [`control_plane_with_operator`], with `env` added to the operator's
/// environment.
pub async fn control_plane_with_operator_env(
    operator: &Path,
    dir: &Path,
    extra: &[&str],
    env: &[(&str, &OsStr)],
) -> anyhow::Result<(ControlPlane, Process)> {
    let control_plane = ControlPlane::start()
        .await
        .context("starting etcd + kube-apiserver (hack/install-deps.sh builds it)")?;
    prepare(&control_plane, &[NAMESPACE]).await;
    let (process, _) = spawn_operator(
        &control_plane,
        operator,
        &dir.join("operator.log"),
        extra,
        env,
    )
    .await?;
    Ok((control_plane, process))
}

/// Starts an operator against `control_plane` (default flags and `extra`,
/// logs at `warn` into `log`), waits for its `/readyz` and returns it with
/// its admin address (`/metrics`).
pub async fn spawn_operator(
    control_plane: &ControlPlane,
    operator: &Path,
    log: &Path,
    extra: &[&str],
    env: &[(&str, &OsStr)],
) -> anyhow::Result<(Process, SocketAddr)> {
    let admin: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let kubeconfig = control_plane.kubeconfig_path().as_os_str().to_owned();
    let mut envs: Vec<(&str, &OsStr)> = vec![
        ("KUBECONFIG", &kubeconfig),
        ("NO_COLOR", OsStr::new("1")),
        ("ISOLANE_LOG", OsStr::new("warn")),
    ];
    envs.extend_from_slice(env);
    let process = Process::spawn(
        "isolane-operator",
        operator,
        [
            "--namespace",
            OPERATOR_NAMESPACE,
            "--admin-addr",
            &admin.to_string(),
        ]
        .into_iter()
        .chain(extra.iter().copied()),
        &envs,
        log,
    )
    .context("starting isolane-operator")?;
    wait_until(
        "isolane-operator /readyz",
        Duration::from_secs(60),
        || async {
            let response = isolane_testenv::http_probe::get(admin, "/readyz").await?;
            (response.status == 200).then_some(())
        },
    )
    .await;
    Ok((process, admin))
}

/// Starts everything and serves `script` as Worker `bench/<name>` on
/// `host`, through the router.
pub async fn start(
    bins: &ClusterBinaries,
    dir: &Path,
    name: &str,
    script: &str,
    host: &str,
) -> anyhow::Result<Cluster> {
    start_with(bins, dir, name, script, host, &Flags::default()).await
}

/// Flags added to the defaults of [`start_with`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Flags<'a> {
    pub node: &'a [&'a str],
    pub operator: &'a [&'a str],
    pub router: &'a [&'a str],
}

/// [`start`], with `flags` added to the node's and the operator's.
pub async fn start_with(
    bins: &ClusterBinaries,
    dir: &Path,
    name: &str,
    script: &str,
    host: &str,
    flags: &Flags<'_>,
) -> anyhow::Result<Cluster> {
    let worker = inline_worker(name, script, &[host]);
    start_worker(bins, dir, &worker, host, flags, &[]).await
}

/// Starts everything and serves `worker` (of namespace [`NAMESPACE`]) on
/// `host`, through the router; `flags` are added to the node's and the
/// operator's flags and `env` to their environment.
pub async fn start_worker(
    bins: &ClusterBinaries,
    dir: &Path,
    worker: &Worker,
    host: &str,
    flags: &Flags<'_>,
    env: &[(&str, &OsStr)],
) -> anyhow::Result<Cluster> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = worker.metadata.name.clone().unwrap_or_default();
    let (control_plane, operator) =
        control_plane_with_operator_env(&bins.operator, dir, flags.operator, env).await?;
    let kubeconfig = control_plane.kubeconfig_path().as_os_str().to_owned();
    let mut envs: Vec<(&str, &OsStr)> = vec![
        ("KUBECONFIG", &kubeconfig),
        ("NO_COLOR", OsStr::new("1")),
        ("ISOLANE_LOG", OsStr::new("warn")),
    ];
    envs.extend_from_slice(env);
    let node_admin: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let mut node_launch = NodeLaunch {
        program: bins.node.clone(),
        args: [
            "--namespace",
            OPERATOR_NAMESPACE,
            "--node-name",
            "bench-node",
            "--grpc-addr",
            "127.0.0.1:0",
            "--admin-addr",
            &node_admin.to_string(),
        ]
        .map(str::to_owned)
        .into_iter()
        // Router↔node mTLS, as deployed.
        .chain(node_tls_args(dir))
        .chain(flags.node.iter().map(|a| (*a).to_owned()))
        .collect(),
        envs: envs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
        dir: dir.to_owned(),
        starts: 0,
    };
    let node = node_launch.spawn(&[])?;
    let router_port = free_port()?;
    let router_admin = free_port()?;
    let router_process = Process::spawn(
        "isolane-router",
        &bins.router,
        [
            "--listen-addr",
            &format!("127.0.0.1:{router_port}"),
            "--admin-addr",
            &format!("127.0.0.1:{router_admin}"),
            "--nodes-namespace",
            OPERATOR_NAMESPACE,
        ]
        .map(str::to_owned)
        .into_iter()
        .chain(router_tls_args(dir))
        .chain(flags.router.iter().map(|a| (*a).to_owned())),
        &envs,
        &dir.join("router.log"),
    )
    .context("starting isolane-router")?;
    let client = control_plane.client();
    apply(&client, NAMESPACE, worker).await;
    wait_ready(&client, NAMESPACE, &name, Duration::from_secs(60)).await;
    let router = Server {
        name: "router → node",
        addr: ([127, 0, 0, 1], router_port).into(),
        host: Some(host.to_owned()),
        process: Some(router_process),
        // The node's CPU time counts with the router's.
        helpers: vec![node.pid()],
    };
    // The router learns the Worker and the node's Lease through its watches.
    router.wait_ok(Duration::from_secs(60)).await?;
    Ok(Cluster {
        router,
        node,
        node_admin,
        node_launch,
        _operator: operator,
        control_plane,
    })
}

/// The pull secret Workers of artifacts in a registry of [`start_with_registry`] name.
pub const PULL_SECRET: &str = "registry-pull";

/// [`start_with`] serving the hello Worker on `hello.bench.test`, with the node and
/// the operator allowed to pull artifacts from `registry` over plain HTTP
/// (and `node_extra` added to the node's flags), and the pull secret
/// [`PULL_SECRET`] of the registry's user in [`NAMESPACE`].
pub async fn start_with_registry(
    bins: &ClusterBinaries,
    dir: &Path,
    registry: &Registry,
    node_extra: &[&str],
) -> anyhow::Result<Cluster> {
    let host = registry.host();
    let plain = format!("--plain-http-registry={host}");
    let allowed = format!("--bundle-registry={host}");
    let mut node_args = vec![plain.as_str(), allowed.as_str()];
    node_args.extend_from_slice(node_extra);
    let operator_args = [plain.as_str(), allowed.as_str()];
    let cluster = start_with(
        bins,
        dir,
        "hello",
        "export default { fetch() { return new Response('hello'); } };",
        "hello.bench.test",
        &Flags {
            node: &node_args,
            operator: &operator_args,
            router: &[],
        },
    )
    .await?;
    Api::<Secret>::namespaced(cluster.control_plane.client(), NAMESPACE)
        .create(&PostParams::default(), &registry.pull_secret(PULL_SECRET))
        .await
        .context("creating the pull secret")?;
    Ok(cluster)
}
