//! The operator process, as a library: ports bound, then the admin server,
//! the webhook, leader election, and the controller while this replica leads.
//!
//! [`bind`] binds the admin port and the webhook's (and loads its TLS
//! material) before anything talks to the API, so bad input fails first.
//! [`Bound::run`] then runs until `shutdown` is cancelled:
//!
//! - every replica keeps the controller's [`Caches`] from its start, leading
//!   or not, and serves the admin server and the webhook (which decides
//!   from the caches' index);
//! - leader election (`isolane-leader`, or none: the replica leads alone)
//!   decides who runs the [`controller`] over them; a leader that loses the
//!   Lease stops it at once (in-flight reconciles aborted) and becomes a
//!   standby, keeping its caches;
//! - the leader runs it only while its installation holds its Worker class
//!   in the cluster ([`ClassClaim`]): while another installation of the same
//!   class does, the leader stands by as if it had lost the Lease;
//! - on `shutdown` the leader lets in-flight reconciles finish, then releases
//!   the Lease, and the servers stop.
//!
//! `/readyz` turns ready when leader election has read the Lease once and
//! every cache has listed (a standby's too: they are what it takes over
//! with); the webhook's readiness waits for the same.

use std::net::SocketAddr;
use std::sync::Arc;

use isolane_edge::Edge;
use isolane_leader::{LeaderElector, Role};
use isolane_telemetry::{AdminServer, BoundAdminServer, Readiness, ReadyHandle};
use kube::Client;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::caches::Caches;
use crate::class_claim::ClassClaim;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::{Error, controller, webhook};

/// An operator with its ports bound, not yet running.
pub struct Bound {
    config: Config,
    metrics: Arc<Metrics>,
    admin: BoundAdminServer,
    webhook: Option<BoundWebhook>,
    election_ready: ReadyHandle,
    controller_ready: ReadyHandle,
}

struct BoundWebhook {
    listener: TcpListener,
    tls: TlsAcceptor,
    ready: ReadyHandle,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("admin", &self.admin.local_addr())
            .field("webhook", &self.webhook.is_some())
            .finish_non_exhaustive()
    }
}

/// Registers the metrics and readiness components, binds the admin port and
/// the webhook's, and loads the webhook's TLS material.
pub async fn bind(config: Config) -> Result<Bound, Error> {
    let registry = Registry::new();
    let metrics = Arc::new(Metrics::register(&registry)?);
    let readiness = Readiness::new();
    let election_ready = readiness.register("leader-election");
    let controller_ready = readiness.register("controller");
    let webhook_ready = config
        .webhook
        .as_ref()
        .map(|_| readiness.register("webhook"));
    let admin = AdminServer::new(registry, readiness)
        .bind(config.admin_addr)
        .await?;
    let webhook = match (&config.webhook, webhook_ready) {
        (Some(webhook), Some(ready)) => Some(BoundWebhook {
            listener: webhook::bind(webhook.addr).await?,
            tls: webhook::load_tls(&webhook.cert, &webhook.key)?,
            ready,
        }),
        _ => None,
    };
    Ok(Bound {
        config,
        metrics,
        admin,
        webhook,
        election_ready,
        controller_ready,
    })
}

impl Bound {
    /// Where the admin server listens.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin.local_addr()
    }

    /// Runs the operator through `client` until `shutdown` is cancelled
    /// (module docs).
    pub async fn run(self, client: Client, shutdown: CancellationToken) {
        let Self {
            config,
            metrics,
            admin,
            webhook,
            election_ready,
            controller_ready,
        } = self;
        info!(addr = %admin.local_addr(), "admin server listening");
        let servers = CancellationToken::new();
        let admin = tokio::spawn(admin.serve(servers.clone().cancelled_owned()));
        // Listing starts before the election: a standby has its caches
        // ready when it takes over, and the webhook decides from them.
        let caches = Caches::start(&client, &config, &metrics);
        caches.report_ready(controller_ready);
        let webhook = webhook.map(|webhook| serve_webhook(webhook, &caches, &config, &servers));
        let election_stop = CancellationToken::new();
        let (role, election) = elect(&client, &config, &election_stop);
        let leading = Leading {
            client,
            config: &config,
            caches: &caches,
            metrics: &metrics,
            election_ready,
        };
        leading.follow(role, &shutdown).await;

        info!("shutting down");
        election_stop.cancel();
        for (task, name) in election
            .into_iter()
            .zip(["leader election", "worker-class claim"])
        {
            if let Err(error) = task.await {
                warn!(%error, task = name, "task failed");
            }
        }
        servers.cancel();
        for (server, task) in [("admin", Some(admin)), ("webhook", webhook)] {
            if let Some(task) = task
                && let Err(error) = task.await
            {
                warn!(%error, server, "server task failed");
            }
        }
    }
}

/// The role this replica follows: the leader election's (or leading alone
/// without it), a leader standing by while another installation holds its
/// Worker class ([`ClassClaim`]); and the tasks that decide it (the
/// election's, then the claim's), until `stop`: the Lease is released then.
fn elect(
    client: &Client,
    config: &Config,
    stop: &CancellationToken,
) -> (watch::Receiver<Role>, [tokio::task::JoinHandle<()>; 2]) {
    let (role_tx, role) = watch::channel(Role::Unknown);
    let elector = match config.leader.clone() {
        Some(leader) => {
            info!(identity = %leader.identity, lease = %leader.lease_name, "leader election enabled");
            let elector = LeaderElector::new(client.clone(), &config.namespace, leader);
            tokio::spawn(elector.run(role_tx, stop.clone()))
        }
        None => {
            role_tx.send_replace(Role::Leader);
            let stop = stop.clone();
            tokio::spawn(async move {
                stop.cancelled().await;
                drop(role_tx);
            })
        }
    };
    let claim = ClassClaim::new(
        client.clone(),
        config.worker_class.clone(),
        config.namespace.clone(),
    );
    let (role, gate) = claim.gate(role, stop.clone());
    (role, [elector, gate])
}

/// Serves the webhook over the caches' index (ready once the caches have
/// listed); returns the server's task.
fn serve_webhook(
    webhook: BoundWebhook,
    caches: &Caches,
    config: &Config,
    servers: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    caches.report_ready(webhook.ready);
    let edge = Edge::new("webhook", webhook::SHUTDOWN_GRACE);
    tokio::spawn(webhook::serve(
        webhook.listener,
        webhook.tls,
        Arc::clone(&caches.sinks.index),
        webhook::Stores {
            kv: config.storage.is_some(),
            r2: config.r2,
        },
        edge,
        servers.clone(),
    ))
}

/// What running the controller while leading needs.
struct Leading<'a> {
    client: Client,
    config: &'a Config,
    caches: &'a Caches,
    metrics: &'a Arc<Metrics>,
    election_ready: ReadyHandle,
}

impl Leading<'_> {
    /// Runs the controller whenever `role` says this replica leads, until
    /// `shutdown` (in-flight reconciles finish) or the election ends.
    async fn follow(&self, mut role: watch::Receiver<Role>, shutdown: &CancellationToken) {
        loop {
            let current = tokio::select! {
                () = shutdown.cancelled() => return,
                current = role.wait_for(|role| *role != Role::Unknown) => match current {
                    Ok(current) => *current,
                    Err(_) => return,
                },
            };
            self.election_ready.set(true);
            if current != Role::Leader {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    changed = role.changed() => if changed.is_err() { return },
                }
                continue;
            }
            info!("leading: starting the controller");
            self.metrics.set_leader(true);
            let stopped = shutdown.clone();
            let running = controller::run(
                self.caches,
                self.client.clone(),
                self.config,
                Arc::clone(self.metrics),
                async move { stopped.cancelled().await },
            );
            let lost = role.wait_for(|role| *role != Role::Leader);
            tokio::select! {
                () = running => {
                    self.metrics.set_leader(false);
                    return;
                }
                _ = lost => {
                    warn!("lost leadership: stopping the controller");
                    self.metrics.set_leader(false);
                    self.metrics.forget_all();
                }
            }
        }
    }
}
