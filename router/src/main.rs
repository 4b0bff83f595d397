//! `isolane-router`: parse and validate flags (exit 64 on bad ones), then
//! compose the admin server, the Worker and Lease watches, and the per-core
//! HTTP workers, and run until SIGTERM or SIGINT.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use isolane_router::config::{Args, Config};
use isolane_router::server::{self, HttpsIngress, Ingress, RouterWorkers};
use isolane_router::tls::{self, Http01, Redirect, SniResolver};
use isolane_router::{Proxy, RouterMetrics, watch};
use isolane_telemetry::{
    AdminServer, EXIT_USAGE, Readiness, ReadyHandle, init_tracing, parse_args, shutdown_signal,
    usage_error,
};
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

/// mimalloc, as `isolane dev` has: glibc's malloc and free were 18 % of a
/// router worker thread's instructions per request (callgrind,
/// docs/benchmark-history-hop.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Args = parse_args();
    let config = match args.validate() {
        Ok(config) => config,
        Err(error) => return usage_error("isolane-router", error),
    };
    // Kept until exit: dropping it sends the last spans.
    let _telemetry = match init_tracing(config.log_format, "info", "isolane-router") {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("isolane-router: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            error!(error = format!("{error:#}"), "router failed");
            ExitCode::FAILURE
        }
    }
}

fn run(config: Config) -> anyhow::Result<()> {
    // The control plane (watches, admin, signals) gets one thread of its own;
    // requests run on the router workers' per-core runtimes.
    let control = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("isolane-router-control")
        .enable_all()
        .build()
        .context("starting the control runtime")?;
    control.block_on(serve(config))
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let registry = prometheus::Registry::new();
    let metrics = Arc::new(
        RouterMetrics::register(&registry, config.max_worker_series)
            .context("registering metrics")?,
    );
    let readiness = Readiness::new();
    let gates = WatchGates {
        owners: readiness.register("host-owners"),
        workers: readiness.register("workers"),
        leases: readiness.register("leases"),
    };
    let tls_ready = (config.https.tls_listen_addr).map(|_| readiness.register("tls-secrets"));
    let http01_ready = (config.https.acme_http01).then(|| readiness.register("acme-challenges"));
    let proxy = Proxy::builder(config.proxy.clone(), Arc::clone(&metrics))
        .reservations(config.reserved_hosts.clone())
        .trusted_proxies(config.trusted_proxies.clone())
        .build();
    let client = isolane_apiclient::infer()
        .await
        .context("configuring the Kubernetes client")?;

    let admin = AdminServer::new(registry, readiness)
        .with_exemplars(metrics.exemplars().clone())
        .bind(config.admin_addr)
        .await
        .context("binding the admin server")?;
    let shutdown = CancellationToken::new();
    tokio::spawn(admin.serve(shutdown.clone().cancelled_owned()));
    let listener = server::bind(config.listen_addr)
        .with_context(|| format!("binding the ingress on {}", config.listen_addr))?;
    start_tails(&config, &client, &proxy, &shutdown).await?;
    spawn_watches(&config, &client, &proxy, gates);
    if let Some(cron) = config.cron.clone() {
        tokio::spawn(isolane_router::cron::run(
            client.clone(),
            proxy.clone(),
            cron,
            shutdown.clone(),
        ));
    }
    spawn_rerank(Arc::clone(&metrics), config.worker_series_interval);
    let ingress = Listeners {
        plain: listener,
        tls_ready,
        http01_ready,
    };
    let workers = start_workers(&config, ingress, proxy, &metrics, &client, &shutdown)?;
    drain_at_signal(workers, shutdown).await
}

/// The plain listener, and the readiness of the HTTPS ingress's Secret
/// watch and of the HTTP-01 responder's, when they are configured.
struct Listeners {
    plain: std::net::TcpListener,
    tls_ready: Option<ReadyHandle>,
    http01_ready: Option<ReadyHandle>,
}

/// The per-core router workers on the ingress `listeners` make.
fn start_workers(
    config: &Config,
    listeners: Listeners,
    proxy: Proxy,
    metrics: &Arc<RouterMetrics>,
    client: &kube::Client,
    shutdown: &CancellationToken,
) -> anyhow::Result<RouterWorkers> {
    let namespace = config.watch_namespace.as_deref();
    let (plain, tls_ready) = (listeners.plain, listeners.tls_ready);
    let mut ingress = ingress(
        &config.https,
        namespace,
        plain,
        &proxy,
        metrics,
        client,
        tls_ready,
    )?;
    ingress.http01 =
        (listeners.http01_ready).map(|ready| http01(namespace, &proxy, metrics, client, ready));
    RouterWorkers::spawn_ingress(
        ingress,
        config.workers,
        proxy,
        shutdown.clone(),
        config.shutdown_grace,
    )
    .context("starting the router workers")
}

/// Waits for SIGTERM or SIGINT, then stops taking connections and waits
/// for the open ones to drain.
async fn drain_at_signal(
    workers: RouterWorkers,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    shutdown_signal().await;
    info!("shutting down: no new connections, draining open ones");
    shutdown.cancel();
    tokio::task::spawn_blocking(move || workers.join())
        .await
        .context("joining the router workers")?;
    Ok(())
}

/// The readiness the watches of [`spawn_watches`] report to.
struct WatchGates {
    owners: ReadyHandle,
    workers: ReadyHandle,
    leases: ReadyHandle,
}

/// The watches the route table is made from. The host owners the operator
/// records live in its namespace, the nodes' (they read its bundles
/// there). No route table before they are read: it could hand a
/// redeploying namespace's host to another.
fn spawn_watches(config: &Config, client: &kube::Client, proxy: &Proxy, gates: WatchGates) {
    let (owners_synced_tx, mut owners_synced) = tokio::sync::watch::channel(false);
    tokio::spawn({
        let (client, proxy) = (client.clone(), proxy.clone());
        let namespace = config.nodes_namespace.clone();
        async move {
            watch::host_owners(client, &namespace, proxy, gates.owners, owners_synced_tx).await;
        }
    });
    tokio::spawn({
        let (client, proxy) = (client.clone(), proxy.clone());
        let (namespace, class) = (config.watch_namespace.clone(), config.worker_class.clone());
        async move {
            if owners_synced.wait_for(|synced| *synced).await.is_ok() {
                watch::workers_of_class(client, namespace.as_deref(), &class, proxy, gates.workers)
                    .await;
            }
        }
    });
    tokio::spawn({
        let (client, proxy) = (client.clone(), proxy.clone());
        let namespace = config.nodes_namespace.clone();
        async move { watch::leases(client, &namespace, proxy, gates.leases).await }
    });
}

/// The tail endpoint and the aggregated API, as configured, with one cache
/// of Kubernetes' answers about tails for both ways in.
async fn start_tails(
    config: &Config,
    client: &kube::Client,
    proxy: &Proxy,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let access = Arc::new(isolane_router::tail::access::Access::new(client.clone()));
    if let Some(addr) = config.tail_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding the tail endpoint on {addr}"))?;
        info!(address = %addr, "tail endpoint listening");
        tokio::spawn(isolane_router::tail::serve(
            listener,
            proxy.clone(),
            Arc::clone(&access),
            shutdown.clone(),
        ));
    }
    if let Some(api) = &config.tail_api {
        let parts = ApiParts {
            proxy: proxy.clone(),
            access,
            nodes_namespace: config.nodes_namespace.clone(),
        };
        start_api_server(api, parts, client, shutdown).await;
    }
    Ok(())
}

/// Every `interval`, keeps the per-Worker series of the busiest Workers
/// only (`WorkerSeries::rerank`).
fn spawn_rerank(metrics: Arc<RouterMetrics>, interval: std::time::Duration) {
    let mut every = tokio::time::interval(interval);
    tokio::spawn(async move {
        loop {
            every.tick().await;
            metrics.workers.rerank();
        }
    });
}

/// The router's listeners: `plain`, and the HTTPS ingress when configured,
/// whose Secret watch starts here (`ready` once it has listed them).
fn ingress(
    https: &tls::HttpsArgs,
    namespace: Option<&str>,
    plain: std::net::TcpListener,
    proxy: &Proxy,
    metrics: &Arc<RouterMetrics>,
    client: &kube::Client,
    ready: Option<ReadyHandle>,
) -> anyhow::Result<Ingress> {
    let (Some(addr), Some(ready)) = (https.tls_listen_addr, ready) else {
        return Ok(Ingress {
            plain,
            https: None,
            redirect: None,
            http01: None,
        });
    };
    let resolver = Arc::new(SniResolver::new(proxy.clone()));
    let tls = tls::server_config(Arc::clone(&resolver)).context("the HTTPS ingress's TLS")?;
    let listener =
        server::bind(addr).with_context(|| format!("binding the HTTPS ingress on {addr}"))?;
    tokio::spawn({
        let (client, metrics) = (client.clone(), Arc::clone(metrics));
        let (namespace, resolver) = (namespace.map(str::to_owned), Arc::clone(&resolver));
        async move {
            tls::watch::secrets(client, namespace.as_deref(), resolver, metrics, ready).await;
        }
    });
    let redirect =
        (https.redirect_to_https).then(|| Redirect::new(Arc::clone(&resolver), https.https_port));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    Ok(Ingress {
        plain,
        https: Some(HttpsIngress { listener, acceptor }),
        redirect,
        http01: None,
    })
}

/// The ACME HTTP-01 responder, whose Challenge watch starts here (`ready`
/// once it has listed them).
fn http01(
    namespace: Option<&str>,
    proxy: &Proxy,
    metrics: &Arc<RouterMetrics>,
    client: &kube::Client,
    ready: ReadyHandle,
) -> Arc<Http01> {
    let http01 = Arc::new(Http01::new(proxy.clone()));
    tokio::spawn({
        let (client, metrics) = (client.clone(), Arc::clone(metrics));
        let (namespace, http01) = (namespace.map(str::to_owned), Arc::clone(&http01));
        async move {
            tls::challenge_watch::challenges(client, namespace.as_deref(), http01, metrics, ready)
                .await;
        }
    });
    http01
}

/// What the aggregated API server answers from, besides the apiserver's
/// front-proxy settings it reads at start.
struct ApiParts {
    proxy: Proxy,
    access: Arc<isolane_router::tail::access::Access<kube::Client>>,
    nodes_namespace: String,
}

/// Starts the aggregated API server, or says why not: without it the
/// router still routes (the APIServices report their APIs unavailable).
async fn start_api_server(
    api: &isolane_router::aggregated::ApiServerConfig,
    parts: ApiParts,
    client: &kube::Client,
    shutdown: &CancellationToken,
) {
    if let Err(error) = serve_api_server(api, parts, client, shutdown).await {
        error!(
            error = format!("{error:#}"),
            "the aggregated API is not served"
        );
    }
}

/// Starts the aggregated API server: reads how the apiserver proxies (its
/// front-proxy CA and names), binds, serves in the background, and samples
/// the nodes' pressure for its custom metrics.
async fn serve_api_server(
    api: &isolane_router::aggregated::ApiServerConfig,
    parts: ApiParts,
    client: &kube::Client,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    use isolane_router::{aggregated, front_proxy::FrontProxy, pressure};
    let front = FrontProxy::read(client.clone())
        .await
        .context("the aggregated API needs the API server's front-proxy settings")?;
    let cert = std::fs::read(&api.cert_file)
        .with_context(|| format!("reading {}", api.cert_file.display()))?;
    let key = std::fs::read(&api.key_file)
        .with_context(|| format!("reading {}", api.key_file.display()))?;
    let tls = front
        .server_config(&cert, &key)
        .context("the aggregated API's TLS")?;
    let listener = tokio::net::TcpListener::bind(api.addr)
        .await
        .with_context(|| format!("binding the aggregated API on {}", api.addr))?;
    info!(address = %api.addr, allowed = ?front.allowed_names, "aggregated API listening");
    let server = aggregated::ApiServer {
        front: Arc::new(front),
        proxy: parts.proxy,
        access: parts.access,
        pressure: pressure::Pressure::default(),
        nodes_namespace: parts.nodes_namespace,
    };
    tokio::spawn(pressure::run(
        server.proxy.clone(),
        server.pressure.clone(),
        shutdown.clone(),
    ));
    tokio::spawn(aggregated::serve(listener, tls, server, shutdown.clone()));
    Ok(())
}
