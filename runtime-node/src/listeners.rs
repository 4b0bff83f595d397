//! The gRPC listeners, in one of two shapes ([`ListenerMode`]):
//!
//! - `per-thread`: one listener per engine thread, each served by its own
//!   current-thread tokio runtime on its own OS thread, pinned to the core of
//!   its engine thread. The Lease lists one endpoint per thread, so the
//!   router's connection for thread i lands on core i. The engine's API runs
//!   a request by handing it to the engine thread's queue; it offers no way to
//!   run a tonic server *on* the engine thread itself, so one hand-off remains
//!   (core-local when pinned).
//! - `single`: one listener for all threads, served by the node's
//!   multi-threaded runtime; each request is handed to its engine thread
//!   from whichever worker thread polled its connection.
//!
//! docs/node.md has the measurements behind the default.

use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;

use isolane_proto::health::pb::health_server::HealthServer;
use isolane_proto::health::server::HealthService;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::config::ListenerMode;
use crate::service::NodeService;

/// Bound (not yet serving) gRPC listeners.
#[derive(Debug)]
pub struct Listeners {
    mode: ListenerMode,
    listeners: Vec<TcpListener>,
    addrs: Vec<SocketAddr>,
}

/// The running servers: tasks on the node's runtime, or threads.
#[derive(Debug)]
pub struct Serving {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    threads: Vec<JoinHandle<()>>,
}

/// The health service type every listener serves beside the Runtime.
pub type Health = HealthServer<HealthService>;

/// Why a listener could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}")]
pub struct BindError {
    pub addr: SocketAddr,
    #[source]
    pub source: std::io::Error,
}

// === impl Listeners ===

impl Listeners {
    /// Binds the listeners of `mode` for `threads` threads at `addr` (thread
    /// i at port + i in per-thread mode; port 0 picks free ports).
    pub fn bind(mode: ListenerMode, addr: SocketAddr, threads: usize) -> Result<Self, BindError> {
        let count = match mode {
            ListenerMode::PerThread => threads.max(1),
            ListenerMode::Single => 1,
        };
        let mut listeners = Vec::with_capacity(count);
        let mut addrs = Vec::with_capacity(count);
        for i in 0..count {
            let mut addr = addr;
            if addr.port() != 0 {
                let port = usize::from(addr.port()) + i;
                addr.set_port(u16::try_from(port).unwrap_or(u16::MAX));
            }
            let bind = || -> std::io::Result<(TcpListener, SocketAddr)> {
                let listener = TcpListener::bind(addr)?;
                listener.set_nonblocking(true)?;
                let local = listener.local_addr()?;
                Ok((listener, local))
            };
            let (listener, local) = bind().map_err(|source| BindError { addr, source })?;
            listeners.push(listener);
            addrs.push(local);
        }
        Ok(Self {
            mode,
            listeners,
            addrs,
        })
    }

    /// The bound addresses, in thread order.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The endpoints to advertise in the Lease (`http://host:port`).
    pub fn endpoints(&self, advertise_host: &str) -> Vec<String> {
        let host = if advertise_host.contains(':') && !advertise_host.starts_with('[') {
            format!("[{advertise_host}]")
        } else {
            advertise_host.to_owned()
        };
        self.addrs
            .iter()
            .map(|addr| format!("http://{host}:{}", addr.port()))
            .collect()
    }

    /// Serves `service` and `health` on every listener until `shutdown`.
    /// Per-thread listeners are pinned to `cores[i % len]` when given. Call
    /// from within the node's tokio runtime.
    pub fn serve(
        self,
        service: NodeService,
        health: Health,
        cores: Option<Vec<core_affinity::CoreId>>,
        shutdown: CancellationToken,
    ) -> std::io::Result<Serving> {
        let mut serving = Serving {
            tasks: Vec::new(),
            threads: Vec::new(),
        };
        match self.mode {
            ListenerMode::Single => {
                for listener in self.listeners {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    serving.tasks.push(tokio::spawn(serve_one(
                        listener,
                        service.clone(),
                        health.clone(),
                        shutdown.clone(),
                    )));
                }
            }
            ListenerMode::PerThread => {
                for (i, listener) in self.listeners.into_iter().enumerate() {
                    let core = cores
                        .as_ref()
                        .filter(|cores| !cores.is_empty())
                        .map(|cores| cores[i % cores.len()]);
                    let (service, health, shutdown) =
                        (service.clone(), health.clone(), shutdown.clone());
                    let thread = std::thread::Builder::new()
                        .name(format!("isolane-grpc-{i}"))
                        .spawn(move || {
                            listener_thread(i, core, listener, service, health, shutdown)
                        })?;
                    serving.threads.push(thread);
                }
            }
        }
        Ok(serving)
    }
}

/// One per-thread listener: its own current-thread runtime, pinned.
fn listener_thread(
    index: usize,
    core: Option<core_affinity::CoreId>,
    listener: TcpListener,
    service: NodeService,
    health: Health,
    shutdown: CancellationToken,
) {
    if let Some(core) = core
        && !core_affinity::set_for_current(core)
    {
        tracing::warn!(
            thread = index,
            core = core.id,
            "could not pin the listener thread"
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(thread = index, %error, "cannot start the listener runtime");
            shutdown.cancel();
            return;
        }
    };
    runtime.block_on(async move {
        match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => serve_one(listener, service, health, shutdown).await,
            Err(error) => {
                tracing::error!(thread = index, %error, "cannot register the listener");
                shutdown.cancel();
            }
        }
    });
}

async fn serve_one(
    listener: tokio::net::TcpListener,
    service: NodeService,
    health: Health,
    shutdown: CancellationToken,
) {
    let addr = listener.local_addr().ok();
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let served = Server::builder()
        .add_service(health)
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned())
        .await;
    if let Err(error) = served {
        tracing::error!(?addr, %error, "gRPC server failed");
        shutdown.cancel();
    }
}

// === impl Serving ===

impl Serving {
    /// Waits for every server to stop (after `shutdown` was cancelled).
    pub async fn join(self) {
        for task in self.tasks {
            let _ = task.await;
        }
        let threads = self.threads;
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }
}
