//! [`Node`]: composes the engine, bundle watch, gRPC listeners, admin server
//! and Lease into a running node, and drains it.
//!
//! Start: admin server → bundle watch → gRPC listeners (serving, so the
//! endpoints exist before anyone learns them) → wait for the first full list
//! of bundles → write the Lease (now the router may send work) → renew it.
//!
//! Drain ([`RunningNode::drain`], on SIGTERM):
//! 1. refuse new requests with `UNAVAILABLE` (the router retries elsewhere),
//!    gRPC health `NOT_SERVING`, `/ready` 503;
//! 2. rewrite the Lease with `draining=true` (routers stop choosing the node);
//! 3. wait for requests in flight, bodies included, up to `--drain-timeout`;
//!    open WebSockets keep working meanwhile, for up to
//!    `--websocket-drain-grace` from the start of the drain (new upgrades go
//!    to the Worker's next placement), then close with 1012;
//! 4. stop the gRPC servers;
//! 5. delete the Lease;
//! 6. stop the watch and the admin server. The caller then shuts the engine down.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use isolane_engine::Engine;
use isolane_proto::health::pb::health_server::HealthServer;
use isolane_proto::health::server::{HealthReporter, HealthService};
use isolane_proto::mtls::{self, GrpcSecurity};
use isolane_proto::runtime::v1::runtime_server::RuntimeServer;
use isolane_telemetry::{AdminServer, Readiness, ReadyHandle};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::admission::Admission;
use crate::bundles::{BundleIndex, Puller, watch_bundles};
use crate::config::Config;
use crate::listeners::{BindError, Listeners, Serving};
use crate::membership::Heartbeat;
use crate::metrics::NodeMetrics;
use crate::service::NodeService;

/// How long stopping the gRPC servers may take once nothing is in flight.
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the 1012 closes of the drain's last WebSockets may take to go out.
const SOCKETS_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Wait between failed first Lease writes.
const LEASE_RETRY: Duration = Duration::from_secs(1);

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Admin(#[from] isolane_telemetry::Error),
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("cannot start the gRPC servers")]
    Serve(#[source] std::io::Error),
    #[error("router↔node TLS")]
    Tls(#[source] mtls::MtlsError),
    #[error("the registry client for bundles")]
    Registry(#[source] isolane_artifact::Error),
}

impl StartError {
    /// A bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            StartError::Admin(_) => "admin",
            StartError::Bind(_) => "bind",
            StartError::Serve(_) => "serve",
            StartError::Tls(_) => "tls",
            StartError::Registry(_) => "registry",
        }
    }
}

/// What a node is started with.
pub struct Node {
    pub config: Config,
    pub engine: Engine,
    pub metrics: Arc<NodeMetrics>,
    pub registry: prometheus::Registry,
    pub client: kube::Client,
}

/// A started node.
#[derive(Debug)]
pub struct RunningNode {
    config: Config,
    bundles: Arc<BundleIndex>,
    admission: Arc<Admission>,
    health: HealthReporter,
    serving: Serving,
    grpc_addrs: Vec<std::net::SocketAddr>,
    admin_addr: std::net::SocketAddr,
    endpoints: Vec<String>,
    heartbeat: Heartbeat,
    bundles_ready: ReadyHandle,
    lease_ready: ReadyHandle,
    /// Whether the Lease has been written (and so must be deleted).
    joined: bool,
    stop_renew: CancellationToken,
    renew: Option<JoinHandle<()>>,
    stop_grpc: CancellationToken,
    stop_admin: CancellationToken,
    watch: JoinHandle<()>,
    /// Drops deleted Workers' isolates (`retire.rs`).
    retire: JoinHandle<()>,
    /// Delivers Durable Object alarms and watches the node Leases for
    /// them (`alarms.rs`), with a store.
    alarms: Option<(JoinHandle<()>, JoinHandle<()>)>,
    /// Delivers the queues this node owns on the ring (`queues.rs`), with
    /// a store.
    queues: Option<JoinHandle<()>>,
    /// Runs the workflows this node owns on the ring (`workflows.rs`),
    /// with a store.
    workflows: Option<JoinHandle<()>>,
    admin: JoinHandle<()>,
}

// === impl Node ===

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("config", &self.config)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Starts serving. The Lease is not written yet: see
    /// [`RunningNode::join_fleet`].
    pub async fn start(self) -> Result<RunningNode, StartError> {
        let Node {
            config,
            engine,
            metrics,
            registry,
            client,
        } = self;
        let readiness = Readiness::new();
        let bundles_ready = readiness.register("bundles");
        let lease_ready = readiness.register("lease");

        let admin = AdminServer::new(registry, readiness)
            .with_exemplars(metrics.exemplars().clone())
            .bind(config.admin_addr)
            .await?;
        let admin_addr = admin.local_addr();
        let stop_admin = CancellationToken::new();
        let admin = tokio::spawn(admin.serve(stop_admin.clone().cancelled_owned()));

        let bundles = Arc::new(BundleIndex::new(config.bundle_revisions));
        engine.set_workers(bundles.clone());
        let puller = Arc::new(Puller::new(&config.artifacts).map_err(StartError::Registry)?);
        let watch = tokio::spawn(watch_bundles(
            client.clone(),
            config.namespace.clone(),
            bundles.clone(),
            metrics.clone(),
            puller,
        ));

        let retire = tokio::spawn(crate::retire::retire_deleted(
            bundles.clone(),
            engine.clone(),
        ));

        let alarms = crate::alarms::spawn_node_alarms(
            &engine,
            bundles.clone(),
            kube::Api::namespaced(client.clone(), &config.namespace),
            &config.peers,
        );
        let queues = crate::queues::spawn_node_queues(
            &engine,
            bundles.clone(),
            &config.peers,
            metrics.queues.clone(),
        );
        let workflows = crate::workflows::spawn_node_workflows(
            &engine,
            bundles.clone(),
            &config.peers,
            metrics.workflows.clone(),
        );

        let threads = config.threads();
        let admission = Admission::new(threads, config.max_inflight_per_thread, metrics.clone());
        let listener_engine = engine.clone();
        let service = NodeService::new(
            config.node_name.clone(),
            engine,
            bundles.clone(),
            admission.clone(),
            metrics.clone(),
            config.revision_wait,
        );
        let listeners = Listeners::bind(config.listeners, config.grpc_addr, threads)?;
        let grpc_addrs = listeners.local_addrs().to_vec();
        let endpoints = listeners.endpoints(&config.advertise_host);
        let health = HealthReporter::new();
        health.set_serving::<RuntimeServer<NodeService>>().await;
        let health_service = HealthServer::new(HealthService::from_health_reporter(health.clone()));
        let stop_grpc = CancellationToken::new();
        let tls = match &config.grpc_security {
            GrpcSecurity::Mtls(files) => Some(mtls::server_config(files).map_err(StartError::Tls)?),
            GrpcSecurity::Insecure => {
                tracing::warn!(node = %config.node_name, "gRPC without TLS (--insecure-grpc): anyone who reaches the port can run any Worker");
                None
            }
        };
        let serving = listeners
            .serve(
                service,
                health_service,
                &listener_engine,
                stop_grpc.clone(),
                tls,
            )
            .map_err(StartError::Serve)?;
        tracing::info!(node = %config.node_name, listeners = %config.listeners, ?grpc_addrs, %admin_addr, threads, "node serving");

        let heartbeat = Heartbeat::new(
            client,
            &config.namespace,
            &config.node_name,
            endpoints.clone(),
            u32::try_from(threads).unwrap_or(u32::MAX),
            config.lease_duration,
            metrics,
        )
        .with_crash(config.previous_crash.clone());
        Ok(RunningNode {
            config,
            bundles,
            admission,
            health,
            serving,
            grpc_addrs,
            admin_addr,
            endpoints,
            heartbeat,
            bundles_ready,
            lease_ready,
            joined: false,
            stop_renew: CancellationToken::new(),
            renew: None,
            stop_grpc,
            stop_admin,
            watch,
            retire,
            alarms,
            queues,
            workflows,
            admin,
        })
    }

    /// Starts, joins the fleet, serves until `shutdown` (or a server
    /// failure), then drains. The engine is left for the caller to shut down.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
        let mut node = self.start().await?;
        tokio::pin!(shutdown);
        let stopped = node.stop_grpc.clone();
        tokio::select! {
            _ = &mut shutdown => {}
            _ = stopped.cancelled() => {}
            _ = node.join_fleet() => {
                tokio::select! {
                    _ = &mut shutdown => {}
                    _ = stopped.cancelled() => tracing::error!("a gRPC server stopped; draining"),
                }
            }
        }
        node.drain().await;
        Ok(())
    }
}

// === impl RunningNode ===

impl RunningNode {
    /// The bound gRPC addresses, in thread order.
    pub fn grpc_addrs(&self) -> &[std::net::SocketAddr] {
        &self.grpc_addrs
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> std::net::SocketAddr {
        self.admin_addr
    }

    /// The endpoints the Lease advertises.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The node's bundles.
    pub fn bundles(&self) -> &Arc<BundleIndex> {
        &self.bundles
    }

    /// Waits for the first full list of bundles, writes the Lease (retrying
    /// until it is written), and starts renewing it.
    pub async fn join_fleet(&mut self) {
        self.bundles.wait_synced().await;
        self.bundles_ready.set_ready();
        // Set first: if this is cancelled mid-write, the drain still deletes
        // a Lease that may exist (deleting a missing one is fine).
        self.joined = true;
        while self.heartbeat.write(false).await.is_err() {
            tokio::time::sleep(LEASE_RETRY).await;
        }
        self.lease_ready.set_ready();
        tracing::info!(node = %self.config.node_name, endpoints = ?self.endpoints, "lease written; joined the fleet");
        let heartbeat = self.heartbeat.clone();
        let stop = self.stop_renew.clone();
        self.renew = Some(tokio::spawn(async move { heartbeat.renew(stop).await }));
    }

    /// The drain sequence (see the module docs).
    pub async fn drain(mut self) {
        let node = self.config.node_name.clone();
        tracing::info!(%node, in_flight = self.admission.total_in_flight(), sockets = self.admission.open_sockets(), "draining");
        let sockets_deadline = tokio::time::Instant::now() + self.config.websocket_drain_grace;
        self.admission.start_draining();
        self.health
            .set_not_serving::<RuntimeServer<NodeService>>()
            .await;
        self.lease_ready.set_not_ready();
        self.stop_renew.cancel();
        if let Some(renew) = self.renew.take() {
            let _ = renew.await;
        }
        let joined = self.joined;
        if joined && self.heartbeat.write(true).await.is_ok() {
            tracing::info!(%node, "lease marked draining");
        }
        let left = self.admission.wait_idle(self.config.drain_timeout).await;
        if left > 0 {
            tracing::warn!(%node, in_flight = left, timeout = ?self.config.drain_timeout, "drain timeout: abandoning requests in flight");
        }
        self.close_sockets(sockets_deadline).await;
        self.stop_grpc.cancel();
        if tokio::time::timeout(SERVER_STOP_TIMEOUT, self.serving.join())
            .await
            .is_err()
        {
            tracing::warn!(%node, "gRPC servers did not stop in time");
        }
        if joined && self.heartbeat.delete().await.is_ok() {
            tracing::info!(%node, "lease deleted");
        }
        self.watch.abort();
        self.retire.abort();
        if let Some((runner, leases)) = &self.alarms {
            runner.abort();
            leases.abort();
        }
        for task in [&self.queues, &self.workflows].into_iter().flatten() {
            task.abort();
        }
        self.stop_admin.cancel();
        let _ = self.admin.await;
        tracing::info!(%node, "drained");
    }

    /// Lets open WebSockets work on until `deadline` (or until none is
    /// left), then closes the rest with 1012 and waits briefly for the
    /// closes to go out.
    async fn close_sockets(&self, deadline: tokio::time::Instant) {
        let node = &self.config.node_name;
        let open = self.admission.wait_sockets(deadline).await;
        self.admission.close_sockets();
        if open > 0 {
            tracing::info!(%node, sockets = open, "WebSocket grace over: closing with 1012");
            let closed = tokio::time::Instant::now() + SOCKETS_CLOSE_TIMEOUT;
            let left = self.admission.wait_sockets(closed).await;
            if left > 0 {
                tracing::warn!(%node, sockets = left, "WebSockets still closing");
            }
        }
    }
}
