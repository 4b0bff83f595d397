//! `isolane-operator`: flags → validated config (exit 64 when invalid) → ports
//! bound → admin server, webhook, leader election, and the controller while leader.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use isolane_leader::{LeaderElector, Role};
use isolane_operator::config::Config;
use isolane_operator::index::WorkerIndex;
use isolane_operator::metrics::Metrics;
use isolane_operator::{Args, controller, webhook};
use isolane_telemetry::{
    AdminServer, EXIT_USAGE, Readiness, init_tracing, parse_args, shutdown_signal, usage_error,
};
use prometheus::Registry;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

fn main() -> ExitCode {
    let args: Args = parse_args();
    let config = match args.validate() {
        Ok(config) => config,
        Err(error) => return usage_error("isolane-operator", error),
    };
    if let Err(error) = init_tracing(args.admin.log_format, "info") {
        eprintln!("isolane-operator: invalid log settings: {error}");
        return ExitCode::from(EXIT_USAGE);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            error!(%error, "failed to start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            error!(error = format!("{error:#}"), "operator failed");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    let registry = Registry::new();
    let metrics = Arc::new(Metrics::register(&registry)?);
    let readiness = Readiness::new();
    let election_ready = readiness.register("leader-election");
    let controller_ready = readiness.register("controller");
    let webhook_ready = config
        .webhook
        .as_ref()
        .map(|_| readiness.register("webhook"));

    // Bind and load everything that can fail on bad input before talking to the API.
    let admin = AdminServer::new(registry, readiness)
        .bind(config.admin_addr)
        .await?;
    info!(addr = %admin.local_addr(), "admin server listening");
    let webhook = match &config.webhook {
        Some(webhook) => Some((
            webhook::bind(webhook.addr).await?,
            webhook::load_tls(&webhook.cert, &webhook.key)?,
        )),
        None => None,
    };
    let client = kube::Client::try_default()
        .await
        .context("failed to configure the Kubernetes client")?;

    let shutdown = CancellationToken::new();
    tokio::spawn(signal_shutdown(shutdown.clone()));
    let servers = CancellationToken::new();
    tokio::spawn(admin.serve(servers.clone().cancelled_owned()));
    if let (Some((listener, tls)), Some(webhook_ready)) = (webhook, webhook_ready) {
        let index = Arc::new(Mutex::new(WorkerIndex::with_reservations(
            config.reserved_hosts.clone(),
        )));
        tokio::spawn(webhook::maintain_index(
            client.clone(),
            Arc::clone(&index),
            webhook_ready,
        ));
        let edge = isolane_telemetry::edge::Edge::new("webhook", webhook::SHUTDOWN_GRACE);
        tokio::spawn(webhook::serve(listener, tls, index, edge, servers.clone()));
    }

    let (role_tx, mut role) = watch::channel(Role::Unknown);
    let elector_stop = CancellationToken::new();
    let elector = match config.leader.clone() {
        Some(leader) => {
            info!(identity = %leader.identity, lease = %leader.lease_name, "leader election enabled");
            let elector = LeaderElector::new(client.clone(), &config.namespace, leader);
            Some(tokio::spawn(elector.run(role_tx, elector_stop.clone())))
        }
        None => {
            role_tx.send_replace(Role::Leader);
            None
        }
    };

    loop {
        let current = tokio::select! {
            () = shutdown.cancelled() => break,
            current = role.wait_for(|role| *role != Role::Unknown) => match current {
                Ok(current) => *current,
                Err(_) => break,
            },
        };
        election_ready.set(true);
        if current != Role::Leader {
            // A standby has nothing to sync: it is ready to take over.
            controller_ready.set(true);
            tokio::select! {
                () = shutdown.cancelled() => break,
                changed = role.changed() => if changed.is_err() { break },
            }
            continue;
        }
        info!("leading: starting the controller");
        metrics.set_leader(true);
        let stopped = shutdown.clone();
        let running = controller::run(
            client.clone(),
            &config,
            Arc::clone(&metrics),
            controller_ready.clone(),
            async move { stopped.cancelled().await },
        );
        let lost = role.wait_for(|role| *role != Role::Leader);
        tokio::select! {
            () = running => {
                metrics.set_leader(false);
                break;
            }
            _ = lost => {
                warn!("lost leadership: stopping the controller");
                metrics.set_leader(false);
                metrics.forget_all();
            }
        }
    }

    info!("shutting down");
    elector_stop.cancel();
    if let Some(elector) = elector
        && let Err(error) = elector.await
    {
        warn!(%error, "leader election task failed");
    }
    servers.cancel();
    Ok(())
}

/// How long in-flight reconciles may take to finish after SIGTERM before the
/// process exits anyway (the Lease then expires instead of being released).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Cancels `shutdown` on SIGTERM or SIGINT; exits with 1 if shutting down takes
/// longer than [`SHUTDOWN_GRACE`].
async fn signal_shutdown(shutdown: CancellationToken) {
    shutdown_signal().await;
    shutdown.cancel();
    tokio::time::sleep(SHUTDOWN_GRACE).await;
    error!(
        grace_s = SHUTDOWN_GRACE.as_secs(),
        "shutdown took too long; exiting"
    );
    std::process::exit(1);
}
