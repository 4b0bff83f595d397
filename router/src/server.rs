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
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use isolane_telemetry::edge;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

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
/// connections finish for up to `grace`.
pub async fn serve(
    listener: TcpListener,
    proxy: Proxy,
    shutdown: CancellationToken,
    grace: Duration,
) {
    // Silent clients cannot hold a connection open (`isolane_telemetry::edge`).
    let builder = edge::server_builder(HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            debug!(%error, "cannot set TCP_NODELAY");
        }
        let proxy = proxy.clone();
        let builder = builder.clone();
        let graceful_watch = graceful.watcher();
        tokio::spawn(async move {
            if !edge::first_bytes(&stream, HEADER_READ_TIMEOUT).await {
                debug!(client = %peer, "connection sent nothing; closed");
                return;
            }
            serve_connection(stream, peer, proxy, &builder, graceful_watch).await;
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => debug!("all connections closed"),
        () = tokio::time::sleep(grace) => warn!(grace = ?grace, "connections still open after the shutdown grace"),
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    proxy: Proxy,
    builder: &auto::Builder<TokioExecutor>,
    graceful: hyper_util::server::graceful::Watcher,
) {
    {
        let service = service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ClientAddr(peer));
            let proxy = proxy.clone();
            async move { Ok::<_, Infallible>(proxy.handle(request).await) }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        if let Err(error) = connection.await {
            debug!(%error, client = %peer, "connection ended with an error");
        }
    }
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
