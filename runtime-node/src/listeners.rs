//! The gRPC listeners, in one of two shapes ([`ListenerMode`]):
//!
//! - `per-thread`: one listener per engine thread, served on that engine
//!   thread's own tokio runtime (`Engine::spawn_on`), between its JavaScript
//!   turns. The Lease lists one endpoint per thread, so the router's
//!   connection for thread i lands on engine thread i, and a request reaches
//!   its isolate without waking another thread.
//! - `single`: one listener for all threads, served by the node's
//!   multi-threaded runtime; each request is handed to its engine thread
//!   from whichever worker thread polled its connection.
//!
//! docs/node.md has the measurements behind the default.
//!
//! Either shape serves mutual TLS when given a server configuration
//! (`isolane_proto::mtls::server_config`): each accepted connection's
//! handshake runs in its own task, bounded by [`HANDSHAKE_TIMEOUT`], and only
//! connections whose client presented the router's certificate reach gRPC.

use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use isolane_edge::{self as edge, Handshake as _, Primed, Wrapped};
use isolane_proto::health::pb::health_server::HealthServer;
use isolane_proto::health::server::HealthService;
use isolane_proto::mtls::{PeerRole, peer_role};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;
use tonic::transport::server::{Connected, TcpIncoming};

use isolane_engine::Engine;

use crate::config::ListenerMode;
use crate::service::NodeService;

/// How long a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS server configuration for the listeners; `None` serves plaintext.
pub type Tls = Option<Arc<rustls::ServerConfig>>;

/// Bound (not yet serving) gRPC listeners.
#[derive(Debug)]
pub struct Listeners {
    mode: ListenerMode,
    listeners: Vec<TcpListener>,
    addrs: Vec<SocketAddr>,
}

/// The running servers: tasks on the node's runtime or on the engine threads.
#[derive(Debug)]
pub struct Serving {
    tasks: Vec<tokio::task::JoinHandle<()>>,
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

    /// Serves `service` and `health` on every listener until `shutdown`:
    /// per-thread listeners on their engine threads, the single one on the
    /// caller's runtime. Call from within the node's tokio runtime.
    pub fn serve(
        self,
        service: NodeService,
        health: Health,
        engine: &Engine,
        shutdown: CancellationToken,
        tls: Tls,
    ) -> std::io::Result<Serving> {
        let mut serving = Serving { tasks: Vec::new() };
        match self.mode {
            ListenerMode::Single => {
                for listener in self.listeners {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    serving.tasks.push(tokio::spawn(serve_one(
                        listener,
                        service.clone(),
                        health.clone(),
                        shutdown.clone(),
                        tls.clone(),
                    )));
                }
            }
            ListenerMode::PerThread => {
                for (i, listener) in self.listeners.into_iter().enumerate() {
                    let (service, health, stop, tls) = (
                        service.clone(),
                        health.clone(),
                        shutdown.clone(),
                        tls.clone(),
                    );
                    let task = engine
                        .spawn_on(i, async move {
                            // Registered with the engine thread's reactor.
                            match tokio::net::TcpListener::from_std(listener) {
                                Ok(listener) => {
                                    serve_one(listener, service, health, stop, tls).await
                                }
                                Err(error) => {
                                    tracing::error!(thread = i, %error, "cannot register the listener");
                                    stop.cancel();
                                }
                            }
                        })
                        .map_err(std::io::Error::other)?;
                    serving.tasks.push(task);
                }
            }
        }
        Ok(serving)
    }
}

async fn serve_one(
    listener: tokio::net::TcpListener,
    service: NodeService,
    health: Health,
    shutdown: CancellationToken,
    tls: Tls,
) {
    let addr = listener.local_addr().ok();
    let served = match tls {
        None => {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            serve_incoming(incoming, service, health, &shutdown).await
        }
        Some(config) => {
            let incoming = tls_incoming(listener, TlsAcceptor::from(config), shutdown.clone());
            serve_incoming(incoming, service, health, &shutdown).await
        }
    };
    if let Err(error) = served {
        tracing::error!(?addr, %error, "gRPC server failed");
        shutdown.cancel();
    }
}

/// How often the node pings each router connection, and how long a ping may
/// go unanswered before the connection is closed.
const GRPC_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(10);

async fn serve_incoming<IO, IE>(
    incoming: impl futures::Stream<Item = Result<IO, IE>>,
    service: NodeService,
    health: Health,
    shutdown: &CancellationToken,
) -> Result<(), tonic::transport::Error>
where
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Server::builder()
        // A router that vanished without closing its connection (a
        // partition, a frozen process) is found by its unanswered pings, and
        // its calls (WebSockets among them) end instead of staying half open.
        .http2_keepalive_interval(Some(GRPC_KEEPALIVE))
        .http2_keepalive_timeout(Some(GRPC_KEEPALIVE))
        // No set of slow readers can hold the whole connection window, and
        // sockets send small DATA frames (isolane_proto::socket::CONNECTION_WINDOW).
        .initial_connection_window_size(isolane_proto::socket::CONNECTION_WINDOW)
        .initial_stream_window_size(isolane_proto::socket::STREAM_WINDOW)
        .max_concurrent_streams(isolane_proto::socket::MAX_STREAMS)
        .add_service(health)
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned())
        .await
}

/// Accepts TCP connections on `listener` (with the edge's backoff on accept
/// errors) and yields those that get through the edge's handshake: first
/// bytes, the TLS handshake, then the HTTP/2 preface, each within
/// [`HANDSHAKE_TIMEOUT`]. Each handshake runs in its own task on the current
/// runtime, so a slow or hostile client delays nobody else.
fn tls_incoming(
    listener: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
    shutdown: CancellationToken,
) -> impl futures::Stream<Item = std::io::Result<TlsConnection>> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let handshake = Arc::new(Wrapped(move |stream| acceptor.accept(stream)));
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                _ = shutdown.cancelled() => return,
                accepted = edge::accept(&listener, "grpc") => accepted,
            };
            let _ = stream.set_nodelay(true);
            let (handshake, tx) = (Arc::clone(&handshake), tx.clone());
            tokio::spawn(async move {
                match handshake.handshake(stream, HANDSHAKE_TIMEOUT).await {
                    Some(io) => {
                        let _ = tx.send(Ok(TlsConnection(io))).await;
                    }
                    None => tracing::info!(
                        %peer,
                        "gRPC client refused: no TLS handshake and HTTP/2 preface within {HANDSHAKE_TIMEOUT:?}"
                    ),
                }
            });
        }
    });
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A router's (or a peer node's) connection after the TLS handshake (and
/// its first bytes, replayed to gRPC).
pub struct TlsConnection(Primed<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>);

impl Connected for TlsConnection {
    /// Who called, by its certificate's name: in every request's
    /// extensions, where the service reads it (`service.rs`).
    type ConnectInfo = Option<PeerRole>;

    fn connect_info(&self) -> Self::ConnectInfo {
        let (_, session) = self.0.get_ref().get_ref();
        peer_role(session.peer_certificates()?.first()?)
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

// === impl Serving ===

impl Serving {
    /// Waits for every server to stop (after `shutdown` was cancelled).
    pub async fn join(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}
