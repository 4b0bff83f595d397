//! The HTTP ingress: per-core router workers accepting HTTP/1.1 and cleartext
//! HTTP/2 (prior knowledge) on one port, and, when configured, HTTPS
//! (HTTP/1.1 and HTTP/2 by ALPN, `crate::tls`) on another, both through the
//! same request path ([`Ingress`]).
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
use isolane_edge::{self as edge, Edge, Handshake, Plain, Wrapped};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::answer::ResponseBody;
use crate::proxy::{Client, Proxy};
use crate::tls::{Http01, Redirect};

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
/// engine threads): the thread its first request's Worker lives on, or
/// one it is spread to once busy ([`Proxy::steer`]), so its requests are
/// read, run and answered on one thread, or the next in turn when that is
/// not known (HTTP/2, a host no Worker serves). The accept loop runs here.
pub async fn serve_over(
    listener: TcpListener,
    runtimes: Vec<tokio::runtime::Handle>,
    proxy: Proxy,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let steering = proxy.clone();
    let steer: edge::Steer = Arc::new(move |host: &str, path: &str| {
        let (thread, hold) = steering.steer(host, path)?;
        Some(edge::Steered {
            runtime: usize::try_from(thread).ok()?,
            hold: Some(Box::new(hold)),
        })
    });
    let edge = Edge::new("router", grace)
        .with_connect_protocol()
        .spread_over(runtimes)
        .steered_by(steer);
    serve_on(listener, proxy, shutdown, edge, grace).await;
}

/// [`serve`], held to `edge` (which may spread connections over runtimes).
async fn serve_on(
    listener: TcpListener,
    proxy: Proxy,
    shutdown: CancellationToken,
    edge: Edge,
    grace: Duration,
) {
    let serving = serve_door(listener, &proxy, edge, Plain, Door::default(), &shutdown);
    tokio::join!(serving, close_sockets(&proxy, &shutdown, grace));
}

/// On `shutdown`, open WebSockets work on for the proxy's
/// `websocket.drain_grace`, are then closed with 1012 (service restart), and
/// waited for within `grace` as connections are.
async fn close_sockets(proxy: &Proxy, shutdown: &CancellationToken, grace: Duration) {
    shutdown.cancelled().await;
    let drain_grace = proxy.config().websocket.drain_grace;
    proxy.sockets().close_all(drain_grace, grace).await;
}

/// What a listener's requests are to the proxy beyond their client.
#[derive(Clone, Debug, Default)]
struct Door {
    /// TLS the router terminates: the Worker sees an `https` URL.
    https: bool,
    /// Plain requests for hosts with a certificate go to HTTPS.
    redirect: Option<Arc<Redirect>>,
    /// ACME HTTP-01 challenges answered here, before any redirect.
    http01: Option<Arc<Http01>>,
}

impl Door {
    /// The router's own answer to `request` from `client`, if it has one:
    /// an ACME challenge's key, or a redirect to HTTPS (not for a request a
    /// trusted proxy, a Gateway say, already took over HTTPS).
    fn answer<B>(
        &self,
        request: &hyper::Request<B>,
        client: &Client,
    ) -> Option<hyper::Response<ResponseBody>> {
        if let Some(response) = self.http01.as_deref().and_then(|h| h.answer(request)) {
            return Some(response);
        }
        if client.came_over_https(request.headers()) {
            return None;
        }
        self.redirect.as_deref().and_then(|r| r.answer(request))
    }
}

/// Serves `listener` with `proxy` through `handshake` until `shutdown`:
/// the one request path of both ingresses, plain and HTTPS.
async fn serve_door(
    listener: TcpListener,
    proxy: &Proxy,
    edge: Edge,
    handshake: impl Handshake,
    door: Door,
    shutdown: &CancellationToken,
) {
    let service = |peer: SocketAddr| {
        // What the requests of this connection say about their client is
        // worked out once, here.
        let client = Arc::new(proxy.client(peer).over_https(door.https));
        let proxy = proxy.clone();
        let door = door.clone();
        service_fn(move |request: hyper::Request<Incoming>| {
            let proxy = proxy.clone();
            let client = Arc::clone(&client);
            let own = door.answer(&request, &client);
            async move {
                if let Some(response) = own {
                    return Ok::<_, Infallible>(response);
                }
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
    edge::serve(
        listener,
        edge,
        handshake,
        service,
        shutdown.clone().cancelled_owned(),
    )
    .await;
}

/// The router's listeners: the plain ingress, and the HTTPS one if any.
#[derive(Debug)]
pub struct Ingress {
    /// HTTP/1.1 and cleartext HTTP/2 ([`bind`]).
    pub plain: std::net::TcpListener,
    /// TLS (HTTP/1.1 and HTTP/2 by ALPN), certificates by SNI.
    pub https: Option<HttpsIngress>,
    /// Whether plain requests for hosts with a certificate are redirected.
    pub redirect: Option<Redirect>,
    /// Whether the plain ingress answers ACME HTTP-01 challenges.
    pub http01: Option<Arc<Http01>>,
}

/// The HTTPS ingress's socket and TLS configuration.
pub struct HttpsIngress {
    /// The bound socket ([`bind`]).
    pub listener: std::net::TcpListener,
    /// The handshake (`crate::tls::server_config`).
    pub acceptor: TlsAcceptor,
}

impl std::fmt::Debug for HttpsIngress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsIngress")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

impl Ingress {
    /// Both ingresses' accept loops on `edge`, and the WebSockets' close
    /// at shutdown, until all have ended.
    async fn serve(self, proxy: Proxy, shutdown: CancellationToken, edge: Edge, grace: Duration) {
        let door = Door {
            https: false,
            redirect: self.redirect.map(Arc::new),
            http01: self.http01,
        };
        let plain = async {
            match TcpListener::from_std(self.plain) {
                Ok(listener) => {
                    serve_door(listener, &proxy, edge.clone(), Plain, door, &shutdown).await;
                }
                Err(error) => warn!(%error, "cannot register the listener"),
            }
        };
        let https = async {
            let Some(HttpsIngress { listener, acceptor }) = self.https else {
                return;
            };
            let door = Door {
                https: true,
                ..Door::default()
            };
            let handshake = Wrapped(move |stream| acceptor.accept(stream));
            match TcpListener::from_std(listener) {
                Ok(listener) => {
                    serve_door(listener, &proxy, edge.clone(), handshake, door, &shutdown).await;
                }
                Err(error) => warn!(%error, "cannot register the HTTPS listener"),
            }
        };
        tokio::join!(plain, https, close_sockets(&proxy, &shutdown, grace));
    }
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
        let ingress = Ingress {
            plain: listener,
            https: None,
            redirect: None,
            http01: None,
        };
        Self::spawn_ingress(ingress, workers, proxy, shutdown, grace)
    }

    /// Starts `workers` threads serving `ingress` until `shutdown`: one
    /// accept loop per listener on one thread, each connection served on
    /// the workers in turn.
    pub fn spawn_ingress(
        ingress: Ingress,
        workers: NonZeroUsize,
        proxy: Proxy,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> std::io::Result<Self> {
        let addr = ingress.plain.local_addr()?;
        let https = match &ingress.https {
            Some(https) => Some(https.listener.local_addr()?),
            None => None,
        };
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
            .spawn(move || handle.block_on(ingress.serve(proxy, shutdown, edge, grace)))?;
        info!(%addr, https = ?https, workers = workers.get(), "router listening");
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
