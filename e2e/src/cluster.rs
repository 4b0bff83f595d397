//! The whole system as processes: the operator, runtime nodes and the router,
//! against one control plane.
//!
//! [`Node`] and [`Router`] start one `isolane-node` / `isolane-router` each
//! (the binaries `ISOLANE_NODE_BIN` / `ISOLANE_ROUTER_BIN` name, see
//! [`crate::process::binary`]), on free local ports, with their
//! logs in the test's directory. [`Cluster`] composes the operator
//! ([`crate::operator`]), N nodes and a router, waits until each is ready, and
//! can add, kill or drain nodes while the test runs. Timings are short
//! (3 s node Leases, the shortest a node accepts) so that membership changes
//! are measured in seconds.
//!
//! Router↔node gRPC is mutual TLS, as deployed: the first node or router
//! started in a test's directory writes a test PKI there ([`grpc_pki`]) and
//! every node and router of that directory uses it.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use isolane_testenv::ControlPlane;
use nix::sys::signal::Signal;

use crate::http;
use crate::operator::{OPERATOR_NAMESPACE, Operator, OperatorOptions};
use isolane_testenv::{Process, free_port, wait_until};

use crate::process;

/// Environment variable naming a prebuilt node binary (skips the build).
pub const NODE_BIN_ENV: &str = "ISOLANE_NODE_BIN";
/// Environment variable naming a prebuilt router binary (skips the build).
pub const ROUTER_BIN_ENV: &str = "ISOLANE_ROUTER_BIN";

/// How long a process gets to become ready on a loaded machine.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

// === impl Node ===

/// How to start a runtime node.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// `--node-name`: also its Lease's name and its log file's.
    pub name: String,
    /// `--threads`.
    pub threads: u32,
    /// `--isolates-per-thread`.
    pub isolates_per_thread: u32,
    /// `--max-inflight-per-thread`.
    pub max_inflight_per_thread: u32,
    /// `--lease-duration` (whole seconds, at least 3 s).
    pub lease_duration: Duration,
    /// `--drain-timeout`.
    pub drain_timeout: Duration,
    /// More flags.
    pub extra_args: Vec<String>,
    /// More environment variables (`OTEL_*`).
    pub extra_env: Vec<(String, String)>,
}

impl NodeOptions {
    /// A node named `name` with the defaults below.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            ..Self::default()
        }
    }
}

impl Default for NodeOptions {
    /// Two unpinned threads (the machine is shared), a few warm isolates, a 3 s
    /// Lease and a 10 s drain.
    fn default() -> Self {
        Self {
            name: "node-a".to_owned(),
            threads: 2,
            isolates_per_thread: 16,
            max_inflight_per_thread: 64,
            lease_duration: Duration::from_secs(3),
            drain_timeout: Duration::from_secs(10),
            extra_args: Vec::new(),
            extra_env: Vec::new(),
        }
    }
}

/// A running `isolane-node`.
#[derive(Debug)]
pub struct Node {
    /// Its name (and its Lease's).
    pub name: String,
    /// Its admin address (/live, /ready, /metrics).
    pub admin: SocketAddr,
    /// Its `--state-dir` (`<dir>/state`, the same for a node started again
    /// under its name, as a pod's `emptyDir` is).
    pub state_dir: PathBuf,
    /// The process.
    pub process: Process,
}

impl Node {
    /// Starts a node serving the bundles of the operator's namespace, gRPC on
    /// free ports of 127.0.0.1, logging to `<dir>/<name>.log`.
    pub fn start(cp: &ControlPlane, dir: &Path, options: &NodeOptions) -> Self {
        let binary = process::binary("isolane-node", NODE_BIN_ENV);
        let admin: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free local port")).into();
        let mut args: Vec<String> = [
            "--namespace",
            OPERATOR_NAMESPACE,
            "--node-name",
            &options.name,
            "--grpc-addr",
            "127.0.0.1:0",
            "--threads",
            &options.threads.to_string(),
            "--pin-threads",
            "false",
            "--isolates-per-thread",
            &options.isolates_per_thread.to_string(),
            "--max-inflight-per-thread",
            &options.max_inflight_per_thread.to_string(),
            "--lease-duration",
            &humantime::format_duration(options.lease_duration).to_string(),
            "--drain-timeout",
            &humantime::format_duration(options.drain_timeout).to_string(),
            "--admin-addr",
            &admin.to_string(),
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let state_dir = dir.join("state");
        args.extend(["--state-dir".to_owned(), state_dir.display().to_string()]);
        args.extend(node_tls_args(dir));
        args.extend(options.extra_args.iter().cloned());
        let mut envs: Vec<(&str, &OsStr)> = vec![
            ("KUBECONFIG", cp.kubeconfig_path().as_os_str()),
            ("NO_COLOR", OsStr::new("1")),
            (
                "ISOLANE_LOG",
                OsStr::new("info,isolane_node=debug,kube=warn"),
            ),
        ];
        envs.extend(process::extra_env(&options.extra_env));
        let log = dir.join(format!("{}.log", options.name));
        let process =
            Process::spawn(&options.name, &binary, &args, &envs, &log).expect("the node starts");
        Self {
            name: options.name.clone(),
            admin,
            state_dir,
            process,
        }
    }

    /// Its turn map as the file reads now (`isolane_turnmap`): which
    /// Worker is in a JavaScript turn on each thread; `None` when there is
    /// no readable map.
    pub fn turn_map(&self) -> Option<isolane_turnmap::PreviousRun> {
        let path = isolane_turnmap::path_in(&self.state_dir, &self.name);
        isolane_turnmap::parse(&std::fs::read(path).ok()?).ok()
    }

    /// Waits until `/readyz` answers 200 (bundles listed, Lease written);
    /// panics if the process exits first.
    pub async fn wait_ready(&mut self, timeout: Duration) {
        wait_ready(&self.name, self.admin, &mut self.process, timeout).await;
    }

    /// Requests in flight on the node, all threads (`isolane_node_in_flight_requests`).
    pub async fn in_flight(&self) -> Option<f64> {
        let response = http::get(self.admin, "/metrics").await?;
        (response.status == 200)
            .then(|| http::sum_series(&response.body, "isolane_node_in_flight_requests"))
    }

    /// The sum of the node's series of metric `name` whose labels include
    /// every comma-separated part of `label` (e.g. `result="miss"`; empty:
    /// every series).
    pub async fn metric_sum(&self, name: &str, label: &str) -> Option<f64> {
        http::metric_sum(self.admin, name, label).await
    }

    /// Sends SIGTERM, as Kubernetes does before removing a pod: the node marks
    /// its Lease draining, finishes what is in flight, deletes the Lease and
    /// exits. Returns at once; see [`Process::try_exit`].
    pub fn drain(&self) {
        // The process may have exited already: then there is nothing to drain.
        let _ = self.process.signal(Signal::SIGTERM);
    }

    /// [`drain`](Self::drain), then waits until the node refuses new
    /// requests (its admission is closed once it has marked its Lease
    /// draining, or it has exited). The signal is handled asynchronously: on
    /// a loaded machine a node can still serve whatever is sent right after
    /// [`drain`](Self::drain) returns.
    pub async fn drain_and_wait(&mut self, timeout: Duration) {
        self.drain();
        let name = self.name.clone();
        wait_until(&format!("{name} to start draining"), timeout, || {
            let exited = self.process.try_exit().is_some();
            let log = self.process.log();
            async move { (exited || log.contains("lease marked draining")).then_some(()) }
        })
        .await;
    }
}

pub use isolane_testenv::grpc_tls::{grpc_pki, node_tls_args, router_tls_args};

// === impl Router ===

/// How to start a router.
#[derive(Clone, Debug, Default)]
pub struct RouterOptions {
    /// The name of its log file (`<name>.log`); `router` when unset.
    pub name: Option<String>,
    /// More flags.
    pub extra_args: Vec<String>,
    /// More environment variables (`OTEL_*`).
    pub extra_env: Vec<(String, String)>,
    /// Its HTTP ingress's address; a free port of 127.0.0.1 when unset.
    pub listen: Option<SocketAddr>,
}

/// A running `isolane-router`.
#[derive(Debug)]
pub struct Router {
    /// Its HTTP ingress.
    pub listen: SocketAddr,
    /// Its admin address (/live, /ready, /metrics).
    pub admin: SocketAddr,
    /// The process.
    pub process: Process,
}

impl Router {
    /// Starts a router routing every namespace's Workers to the nodes of the
    /// operator's namespace, logging to `<dir>/router.log` (or the name in
    /// `options`).
    pub fn start(cp: &ControlPlane, dir: &Path, options: &RouterOptions) -> Self {
        let binary = process::binary("isolane-router", ROUTER_BIN_ENV);
        let listen: SocketAddr = options
            .listen
            .unwrap_or_else(|| ([127, 0, 0, 1], free_port().expect("a free local port")).into());
        let admin: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free local port")).into();
        let mut args: Vec<String> = [
            "--listen-addr",
            &listen.to_string(),
            "--admin-addr",
            &admin.to_string(),
            "--nodes-namespace",
            OPERATOR_NAMESPACE,
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        args.extend(router_tls_args(dir));
        args.extend(options.extra_args.iter().cloned());
        let mut envs: Vec<(&str, &OsStr)> = vec![
            ("KUBECONFIG", cp.kubeconfig_path().as_os_str()),
            ("NO_COLOR", OsStr::new("1")),
            // Info only: the router logs each request at debug.
            ("ISOLANE_LOG", OsStr::new("info,kube=warn")),
        ];
        envs.extend(process::extra_env(&options.extra_env));
        let process = Process::spawn(
            "isolane-router",
            &binary,
            &args,
            &envs,
            &dir.join(format!(
                "{}.log",
                options.name.as_deref().unwrap_or("router")
            )),
        )
        .expect("the router starts");
        Self {
            listen,
            admin,
            process,
        }
    }

    /// Waits until `/readyz` answers 200 (Workers and Leases listed); panics if
    /// the process exits first.
    pub async fn wait_ready(&mut self, timeout: Duration) {
        wait_ready("isolane-router", self.admin, &mut self.process, timeout).await;
    }

    /// The value of one series of the router's `/metrics`.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        let response = http::get(self.admin, "/metrics").await?;
        (response.status == 200)
            .then(|| http::metric(&response.body, series))
            .flatten()
    }

    /// The sum of the router's series of metric `name` whose labels include
    /// every comma-separated part of `label` (e.g. `outcome="ok"`).
    pub async fn metric_sum(&self, name: &str, label: &str) -> Option<f64> {
        http::metric_sum(self.admin, name, label).await
    }

    /// Live, non-draining nodes as the router sees them (`isolane_router_live_nodes`).
    pub async fn live_nodes(&self) -> Option<usize> {
        let nodes = self.metric("isolane_router_live_nodes").await?;
        // A gauge of a small count: exact in an f64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(nodes as usize)
    }
}

/// Polls `/readyz` of `process` on `admin` until 200.
async fn wait_ready(name: &str, admin: SocketAddr, process: &mut Process, timeout: Duration) {
    wait_until(&format!("{name} /readyz"), timeout, || {
        let exited = process.try_exit();
        async move {
            assert!(exited.is_none(), "{name} exited: {exited:?}");
            let response = http::get(admin, "/readyz").await?;
            (response.status == 200).then_some(())
        }
    })
    .await;
}

// === impl Cluster ===

/// How to start a [`Cluster`].
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Runtime nodes at the start, named `node-1` … `node-N`.
    pub nodes: usize,
    /// Flags of every node (its name is replaced).
    pub node: NodeOptions,
    /// Flags of the router.
    pub router: RouterOptions,
    /// Flags of the operator.
    pub operator: OperatorOptions,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            nodes: 3,
            node: NodeOptions::default(),
            router: RouterOptions::default(),
            operator: OperatorOptions::default(),
        }
    }
}

impl ClusterOptions {
    /// Two one-thread nodes whose store, and the operator whose schema
    /// migrations, are the PostgreSQL at `url` (`--storage-postgres-url`).
    pub fn with_postgres(url: &str) -> Self {
        let storage = vec!["--storage-postgres-url".to_owned(), url.to_owned()];
        Self {
            nodes: 2,
            node: NodeOptions {
                threads: 1,
                extra_args: storage.clone(),
                ..NodeOptions::default()
            },
            operator: OperatorOptions {
                extra_args: storage,
                ..OperatorOptions::default()
            },
            ..Self::default()
        }
    }
}

/// The operator, the runtime nodes and the router, as processes, each ready.
#[derive(Debug)]
pub struct Cluster {
    /// The operator.
    pub operator: Operator,
    /// The nodes, in the order they were started (killed ones included, exited).
    pub nodes: Vec<Node>,
    /// The router.
    pub router: Router,
    options: ClusterOptions,
    dir: PathBuf,
}

impl Cluster {
    /// Starts the operator, `options.nodes` nodes and the router against `cp`
    /// (the Worker CRD and the operator namespace must exist: see
    /// [`crate::workers::prepare`]), logs in `dir`; returns once all are ready
    /// and the router counts every node as live.
    pub async fn start(cp: &ControlPlane, dir: &Path, options: ClusterOptions) -> Self {
        let operator = Operator::start(cp, dir, &options.operator);
        let nodes = (1..=options.nodes)
            .map(|index| {
                let node = NodeOptions {
                    name: format!("node-{index}"),
                    ..options.node.clone()
                };
                Node::start(cp, dir, &node)
            })
            .collect();
        let router = Router::start(cp, dir, &options.router);
        let mut cluster = Self {
            operator,
            nodes,
            router,
            options,
            dir: dir.to_owned(),
        };
        cluster.operator.wait_ready(READY_TIMEOUT).await;
        for node in &mut cluster.nodes {
            node.wait_ready(READY_TIMEOUT).await;
        }
        cluster.router.wait_ready(READY_TIMEOUT).await;
        cluster.wait_live_nodes(cluster.nodes.len()).await;
        cluster
    }

    /// The router's HTTP ingress.
    pub fn ingress(&self) -> SocketAddr {
        self.router.listen
    }

    /// The node named `name`.
    ///
    /// # Panics
    /// When there is none.
    pub fn node_mut(&mut self, name: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|node| node.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// The node that took a shard last, with the epoch it took: the highest
    /// `epoch=` of the nodes' log lines that say `took` and contain `shard`
    /// (a queue's or a workflow's owner epoch, `Store::queue_take`).
    pub fn last_taker(&self, took: &str, shard: &str) -> Option<(String, u64)> {
        self.nodes
            .iter()
            .flat_map(|node| {
                let log = node.process.log();
                log.lines()
                    .filter(|line| line.contains(took) && line.contains(shard))
                    .filter_map(|line| {
                        let epoch = line.split("epoch=").nth(1)?.split_whitespace().next()?;
                        Some((node.name.clone(), epoch.parse::<u64>().ok()?))
                    })
                    .collect::<Vec<_>>()
            })
            .max_by_key(|(_, epoch)| *epoch)
    }

    /// Starts one more node (`node-<count + 1>`, same flags), waits until it is
    /// ready; returns its name.
    pub async fn add_node(&mut self, cp: &ControlPlane) -> String {
        let options = NodeOptions {
            name: format!("node-{}", self.nodes.len() + 1),
            ..self.options.node.clone()
        };
        let mut node = Node::start(cp, &self.dir, &options);
        node.wait_ready(READY_TIMEOUT).await;
        self.nodes.push(node);
        options.name
    }

    /// Starts node `name` again (after it was killed) with the same flags
    /// and state directory; waits until it is ready.
    ///
    /// # Panics
    /// When there is no such node or it does not become ready.
    pub async fn restart_node(&mut self, cp: &ControlPlane, name: &str) {
        let options = NodeOptions {
            name: name.to_owned(),
            ..self.options.node.clone()
        };
        let mut node = Node::start(cp, &self.dir, &options);
        node.wait_ready(READY_TIMEOUT).await;
        *self.node_mut(name) = node;
    }

    /// Waits until the router counts `count` live, non-draining nodes.
    pub async fn wait_live_nodes(&self, count: usize) {
        wait_until(
            &format!("the router to count {count} live nodes"),
            READY_TIMEOUT,
            || async { (self.router.live_nodes().await? == count).then_some(()) },
        )
        .await;
    }

    /// The node names, in the order they were started.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|node| node.name.clone()).collect()
    }

    /// Stops the router, then the nodes (SIGTERM, so they drain and delete
    /// their Leases), then the operator.
    pub fn shutdown(mut self) {
        self.router.process.terminate(Duration::from_secs(15));
        let grace = self.options.node.drain_timeout + Duration::from_secs(10);
        for node in &mut self.nodes {
            node.process.terminate(grace);
        }
    }
}
