//! The HTTP ingress: per-core router workers accepting HTTP/1.1 and cleartext
//! HTTP/2 (prior knowledge) on one port.
//!
//! [`RouterWorkers::spawn`] starts one OS thread per worker, each with its own
//! tokio runtime, and one accept loop, which hands each new connection to the
//! workers in turn, so connections
//! are spread evenly (threads each accepting from a shared socket are not:
//! under a burst of connects one can take them all). Each worker serves its
//! connections to completion, so a request is parsed, routed and proxied on
//! one core, over that core's own HTTP/2 connections to nodes
//! ([`crate::channels`]), with no hand-off between threads. [`serve`] is one
//! worker's loop, also usable on its own in any runtime (tests, `isolane dev`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use isolane_edge::{self as edge, Edge, Plain};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::proxy::Proxy;

/// How long a client may take to send its first bytes and each request head.
pub const HEADER_READ_TIMEOUT: Duration = edge::HEADER_READ_TIMEOUT;

/// Binds the ingress socket (before any worker starts, so a bad address fails early).
pub fn bind(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Serves `listener` with `proxy` until `shutdown`, then lets open
/// connections finish for up to `grace`. Silent clients cannot hold a
/// connection open (the shared accept loop, `isolane_edge::serve`).
pub async fn serve(
    listener: TcpListener,
    proxy: Proxy,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let edge = Edge::new("router", grace).with_connect_protocol();
    serve_on(listener, proxy, shutdown, edge, grace).await;
}

/// [`serve`], each accepted connection served to its end on one of
/// `runtimes`, a node's threads in order (`isolane dev` serves on its
/// engine threads): the thread its first request's Worker lives on
/// ([`Proxy::home_thread`]), so its requests are read, run and answered on
/// one thread, or the next in turn when that is not known (HTTP/2, a host
/// no Worker serves). The accept loop runs here.
pub async fn serve_over(
    listener: TcpListener,
    runtimes: Vec<tokio::runtime::Handle>,
    proxy: Proxy,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let steering = proxy.clone();
    let steer: edge::Steer = Arc::new(move |host: &str, path: &str| {
        let thread = steering.home_thread(host, path)?;
        usize::try_from(thread).ok()
    });
    let edge = Edge::new("router", grace)
        .with_connect_protocol()
        .spread_over(runtimes)
        .steered_by(steer);
    serve_on(listener, proxy, shutdown, edge, grace).await;
}

/// [`serve`], held to `edge` (which may spread connections over runtimes).
/// On `shutdown`, open WebSockets work on for the proxy's
/// `websocket.drain_grace`, are then closed with 1012 (service restart), and
/// waited for within `grace` as connections are.
async fn serve_on(
    listener: TcpListener,
    proxy: Proxy,
    shutdown: CancellationToken,
    edge: Edge,
    grace: Duration,
) {
    let sockets = proxy.sockets().clone();
    let drain_grace = proxy.config().websocket.drain_grace;
    let closing = {
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            sockets.close_all(drain_grace, grace).await;
        }
    };
    let service = |peer: SocketAddr| {
        // What the requests of this connection say about their client is
        // worked out once, here.
        let client = Arc::new(proxy.client(peer));
        let proxy = proxy.clone();
        service_fn(move |request: hyper::Request<Incoming>| {
            let proxy = proxy.clone();
            let client = Arc::clone(&client);
            async move {
                // The upgrade's future is boxed: a plain request's future
                // stays the size of the proxy's own.
                let response = if crate::websocket::is_upgrade(&request) {
                    Box::pin(crate::websocket::handle(&proxy, request, &client)).await
                } else {
                    proxy.handle_from(request, Some(&client)).await
                };
                Ok::<_, Infallible>(response)
            }
        })
    };
    let serving = edge::serve(listener, edge, Plain, service, shutdown.cancelled_owned());
    tokio::join!(serving, closing);
}

/// The router worker threads.
#[derive(Debug)]
pub struct RouterWorkers {
    /// The thread running the accept loop.
    accept: std::thread::JoinHandle<()>,
    /// One runtime per worker, each with one thread.
    runtimes: Vec<tokio::runtime::Runtime>,
}

impl RouterWorkers {
    /// Starts `workers` threads serving `listener` until `shutdown`.
    pub fn spawn(
        listener: std::net::TcpListener,
        workers: NonZeroUsize,
        proxy: Proxy,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        // One thread each. A multi-thread runtime of one worker rather than
        // a current-thread one: its thread is woken only when it sleeps,
        // where a current-thread runtime writes to its own eventfd each
        // time a task arms an earlier timer (hyper's header-read timer, once
        // per request).
        let runtimes = (0..workers.get())
            .map(|index| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(format!("isolane-router-{index}"))
                    .enable_all()
                    .build()
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        // One accept loop hands each connection to the workers in turn
        // (`Edge::spread_over`); each worker serves its connections to the end.
        let edge = Edge::new("router", grace)
            .with_connect_protocol()
            .spread_over(runtimes.iter().map(|r| r.handle().clone()).collect());
        let handle = runtimes
            .first()
            .map(|r| r.handle().clone())
            .ok_or_else(|| std::io::Error::other("no router worker"))?;
        let accept = std::thread::Builder::new()
            .name("isolane-router-accept".to_owned())
            .spawn(move || {
                handle.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => serve_on(listener, proxy, shutdown, edge, grace).await,
                        Err(error) => warn!(%error, "cannot register the listener"),
                    }
                })
            })?;
        info!(%addr, workers = workers.get(), "router listening");
        Ok(Self { accept, runtimes })
    }

    /// Waits for the accept loop to finish (after shutdown, with open
    /// connections drained), then stops the workers. Blocking.
    pub fn join(self) {
        if self.accept.join().is_err() {
            warn!("the router's accept thread panicked");
        }
        drop(self.runtimes);
    }
}
