//! The HTTP ingress: per-core router workers accepting HTTP/1.1 and cleartext
//! HTTP/2 (prior knowledge) on one port.
//!
//! [`RouterWorkers::spawn`] starts one OS thread per worker, each with its own
//! single-threaded tokio runtime that accepts from the shared listening socket
//! and serves its connections to completion, so a request is parsed, routed
//! and proxied on one core, over that core's own HTTP/2 connections to nodes
//! ([`crate::channels`]), with no hand-off between threads. [`serve`] is one
//! worker's loop, also usable on its own in any runtime (tests, `isolane dev`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use isolane_telemetry::edge::{self, Edge, Plain};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::proxy::{ClientAddr, Proxy};

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
/// connection open (the shared accept loop, `isolane_telemetry::edge::serve`).
pub async fn serve(
    listener: TcpListener,
    proxy: Proxy,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let service = |peer: SocketAddr| {
        let proxy = proxy.clone();
        service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ClientAddr(peer));
            let proxy = proxy.clone();
            async move { Ok::<_, Infallible>(proxy.handle(request).await) }
        })
    };
    let edge = Edge::new("router", grace);
    edge::serve(listener, edge, Plain, service, shutdown.cancelled_owned()).await;
}

/// The router worker threads.
#[derive(Debug)]
pub struct RouterWorkers {
    threads: Vec<std::thread::JoinHandle<()>>,
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
        let mut threads = Vec::with_capacity(workers.get());
        for index in 0..workers.get() {
            let listener = listener.try_clone()?;
            let proxy = proxy.clone();
            let shutdown = shutdown.clone();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let thread = std::thread::Builder::new()
                .name(format!("isolane-router-{index}"))
                .spawn(move || {
                    runtime.block_on(async move {
                        match TcpListener::from_std(listener) {
                            Ok(listener) => serve(listener, proxy, shutdown, grace).await,
                            Err(error) => {
                                warn!(%error, thread = index, "cannot register the listener")
                            }
                        }
                    });
                })?;
            threads.push(thread);
        }
        info!(%addr, workers = workers.get(), "router listening");
        Ok(Self { threads })
    }

    /// Waits for every worker thread to finish (after shutdown). Blocking.
    pub fn join(self) {
        for thread in self.threads {
            if thread.join().is_err() {
                warn!("a router worker thread panicked");
            }
        }
    }
}
