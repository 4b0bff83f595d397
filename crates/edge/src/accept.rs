//! The one accept loop of every HTTP front end: the router's ingress, the
//! operator's admission webhook (over TLS) and the admin servers.
//!
//! Each accepted connection must send its first bytes, as many as tell
//! HTTP/1 from HTTP/2, within the header-read timeout ([`Primed`]); a
//! wrapped connection (a TLS handshake, [`Wrapped`]) must finish its
//! handshake and then send those bytes within it too; after that, hyper holds each request head to it
//! ([`crate::server_builder`]), and a connection with no request in flight
//! for the idle timeout is closed gracefully, HTTP/2 included
//! ([`crate::idle`]). On shutdown the loop stops accepting, lets open
//! connections finish for up to the grace period, and returns. An open
//! connection is closed under its next request (HTTP/1 answers then say
//! `connection: close`), or after a second without one, not while its
//! client may be sending one on it.

use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};
use tracing::{debug, warn};

use crate::idle::{Activity, Tracked};
use crate::primed::Primed;
use crate::steer::Steer;

/// How long a failed `accept` (say, out of file descriptors) waits before
/// the next, so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// What an accept loop is held to.
#[derive(Clone, Debug)]
pub struct Edge {
    /// Named in logs (`router`, `webhook`, `admin`).
    pub server: &'static str,
    /// How long a client may take to send its first bytes (and finish a
    /// handshake), and then each request head.
    pub header_read_timeout: Duration,
    /// How long a connection may go with no request in flight before it is
    /// closed (HTTP/2: GOAWAY), pings answered or not.
    pub idle_timeout: Duration,
    /// How often an idle HTTP/2 connection is pinged (the peer has
    /// [`crate::H2_KEEP_ALIVE`] to answer).
    pub ping_interval: Duration,
    /// How long open connections may take to finish after shutdown.
    pub grace: Duration,
    /// Whether HTTP/2 clients may open extended CONNECT streams (RFC 8441:
    /// WebSockets over HTTP/2).
    pub connect_protocol: bool,
    /// The runtimes accepted connections are served on, in turn; none: the
    /// accept loop's own.
    spread: Arc<[Handle]>,
    /// Chooses among `spread` from a connection's first request, before the
    /// turn does.
    steer: Option<SteerBy>,
}

/// A [`Steer`], named in `Edge`'s debug output only by its presence.
#[derive(Clone)]
struct SteerBy(Steer);

impl std::fmt::Debug for SteerBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Steer")
    }
}

impl Edge {
    /// [`crate::HEADER_READ_TIMEOUT`] and `grace`.
    pub fn new(server: &'static str, grace: Duration) -> Self {
        Self {
            server,
            header_read_timeout: crate::HEADER_READ_TIMEOUT,
            idle_timeout: crate::IDLE_TIMEOUT,
            ping_interval: crate::H2_KEEP_ALIVE,
            grace,
            connect_protocol: false,
            spread: Arc::from([]),
            steer: None,
        }
    }

    /// The same, letting HTTP/2 clients open extended CONNECT streams
    /// (`:protocol`, RFC 8441), as WebSockets over HTTP/2 need.
    pub fn with_connect_protocol(mut self) -> Self {
        self.connect_protocol = true;
        self
    }

    /// The same, serving each accepted connection on the next of `runtimes`
    /// in turn: one accept loop for a server's per-core threads (each a
    /// current-thread runtime), so connections are spread evenly over them.
    /// Threads sharing one listener each with an accept loop of its own are
    /// not: whichever wakes first takes the connection, and under a burst of
    /// connects one thread can end up with every connection.
    pub fn spread_over(mut self, runtimes: Vec<Handle>) -> Self {
        self.spread = runtimes.into();
        self
    }

    /// The same, each connection served on the runtime `steer` chooses
    /// (an index into those of [`Edge::spread_over`]) from its first
    /// request's `Host` and path (`steer.rs`), or the next in turn when it
    /// chooses none.
    pub fn steered_by(mut self, steer: Steer) -> Self {
        self.steer = Some(SteerBy(steer));
        self
    }

    /// The same, with another header-read timeout (tests that cannot wait 30 s).
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The same, with another idle timeout (tests that cannot wait 30 s).
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The same, pinging idle HTTP/2 connections this often (tests).
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }
}

/// How an accepted TCP connection becomes the byte stream HTTP is spoken on.
pub trait Handshake: Send + Sync + 'static {
    /// The stream hyper serves.
    type Io: AsyncRead + AsyncWrite + Send + Unpin + 'static;

    /// The stream of `stream`, or `None` when the client did not get there
    /// within `timeout` (it is then dropped).
    fn handshake(
        &self,
        stream: TcpStream,
        timeout: Duration,
    ) -> impl Future<Output = Option<Self::Io>> + Send;
}

/// Cleartext HTTP/1.1 and h2c (prior knowledge): the client's first bytes,
/// as many as tell which, arrive within the timeout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

impl Handshake for Plain {
    type Io = Primed<TcpStream>;

    async fn handshake(&self, stream: TcpStream, timeout: Duration) -> Option<Primed<TcpStream>> {
        Primed::first_bytes(stream, timeout).await
    }
}

/// A connection wrapped by `.0` (a TLS acceptor's `accept`): its first
/// bytes, its handshake and then its first bytes inside the wrapper each
/// arrive within the timeout.
#[derive(Clone, Copy, Debug)]
pub struct Wrapped<F>(pub F);

impl<F, Fut, I> Handshake for Wrapped<F>
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = io::Result<I>> + Send,
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    type Io = Primed<I>;

    async fn handshake(&self, stream: TcpStream, timeout: Duration) -> Option<Primed<I>> {
        if !crate::first_bytes(&stream, timeout).await {
            return None;
        }
        let wrapped = match tokio::time::timeout(timeout, (self.0)(stream)).await {
            Ok(Ok(wrapped)) => wrapped,
            Ok(Err(error)) => {
                debug!(%error, "handshake failed");
                return None;
            }
            Err(_) => {
                debug!("handshake timed out");
                return None;
            }
        };
        Primed::first_bytes(wrapped, timeout).await
    }
}

/// The next connection on `listener`. An accept error (out of file
/// descriptors, a peer gone before it was accepted) is logged and retried
/// after [`ACCEPT_BACKOFF`], so one that persists never spins the thread.
pub async fn accept(listener: &TcpListener, server: &'static str) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(error) => {
                warn!(%error, edge.server = server, "accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Serves `listener` until `shutdown` completes: each connection that gets
/// through `handshake` is served by `service(peer)`, HTTP/1.1 or HTTP/2.
/// Then open connections get `edge.grace` to finish.
pub async fn serve<H, M, S, B>(
    listener: TcpListener,
    edge: Edge,
    handshake: H,
    service: M,
    shutdown: impl Future<Output = ()>,
) where
    H: Handshake,
    M: Fn(SocketAddr) -> S,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let mut builder = crate::server_builder(edge.header_read_timeout, edge.ping_interval);
    if edge.connect_protocol {
        builder.http2().enable_connect_protocol();
    }
    let handshake = Arc::new(handshake);
    // Shutdown, told to every connection; each holds a receiver until it
    // ends, so the sender sees when all have.
    let closing = watch::Sender::new(());
    let mut shutdown = std::pin::pin!(shutdown);
    let mut turn = 0usize;
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = accept(&listener, edge.server) => accepted,
        };
        if let Err(error) = stream.set_nodelay(true) {
            debug!(%error, "cannot set TCP_NODELAY");
        }
        let connection = Connection {
            builder: builder.clone(),
            handshake: Arc::clone(&handshake),
            closing: closing.subscribe(),
            peer,
            server: edge.server,
            timeout: edge.header_read_timeout,
            idle: edge.idle_timeout,
        };
        let service = service(peer);
        let next = turn % edge.spread.len().max(1);
        turn = turn.wrapping_add(1);
        hand_over(&edge, stream, next, move |stream| {
            connection.serve(stream, service)
        });
    }
    drop(listener);
    closing.send_replace(());
    tokio::select! {
        () = closing.closed() => debug!(edge.server = edge.server, "all connections closed"),
        () = tokio::time::sleep(edge.grace) => warn!(grace = ?edge.grace, edge.server = edge.server, "connections still open after the shutdown grace"),
    }
}

/// Runs `serve(stream)` on the runtime its first request steers it to
/// (`edge.steer`), else on the spread's `next`, else on this one.
fn hand_over<F, Fut>(edge: &Edge, stream: TcpStream, next: usize, serve: F)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    match &edge.steer {
        Some(SteerBy(steer)) if !edge.spread.is_empty() => {
            let (spread, steer) = (Arc::clone(&edge.spread), Arc::clone(steer));
            let (timeout, server) = (edge.header_read_timeout, edge.server);
            // Off the accept loop: the first bytes may take a while.
            tokio::spawn(async move {
                let chosen = crate::steer::choose(&stream, &steer, timeout).await;
                let (index, hold) = match chosen {
                    Some(steered) if steered.runtime < spread.len() => {
                        (steered.runtime, steered.hold)
                    }
                    _ => (next, None),
                };
                spawn_on(spread.get(index), stream, server, move |stream| {
                    let serving = RUNTIME.scope(index, serve(stream));
                    async move {
                        let _held_until_the_end = hold;
                        serving.await
                    }
                });
            });
        }
        _ if !edge.spread.is_empty() => {
            let serve = move |stream| RUNTIME.scope(next, serve(stream));
            spawn_on(edge.spread.get(next), stream, edge.server, serve)
        }
        _ => spawn_on(None, stream, edge.server, serve),
    }
}

tokio::task_local! {
    /// The index of the spread's runtime a connection is served on.
    static RUNTIME: usize;
}

/// The index, among the runtimes of [`Edge::spread_over`], of the one
/// serving the connection the caller's request came on (in its task: an
/// HTTP/1 request's service), or `None`.
pub fn current_runtime() -> Option<usize> {
    RUNTIME.try_with(|index| *index).ok()
}

/// Runs `serve(stream)` on `runtime` (moving the socket to its reactor, so
/// the connection's readiness wakes that thread alone), or on this one.
fn spawn_on<F, Fut>(runtime: Option<&Handle>, stream: TcpStream, server: &'static str, serve: F)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(runtime) = runtime else {
        tokio::spawn(serve(stream));
        return;
    };
    match stream.into_std() {
        Ok(stream) => drop(runtime.spawn(async move {
            match TcpStream::from_std(stream) {
                Ok(stream) => serve(stream).await,
                Err(error) => debug!(%error, edge.server = server, "cannot register a connection"),
            }
        })),
        Err(error) => debug!(%error, edge.server = server, "cannot move a connection"),
    }
}

/// One accepted connection and what serving it is held to.
struct Connection<H> {
    builder: hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    handshake: Arc<H>,
    /// Held until the connection ends (see [`watch_idle`]).
    closing: watch::Receiver<()>,
    peer: SocketAddr,
    server: &'static str,
    timeout: Duration,
    idle: Duration,
}

impl<H: Handshake> Connection<H> {
    /// The handshake, then HTTP until the connection ends, closes idle, or
    /// is told to close by shutdown.
    async fn serve<S, B>(self, stream: TcpStream, service: S)
    where
        S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn StdError + Send + Sync>>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let (peer, server) = (self.peer, self.server);
        let Some(io) = self.handshake.handshake(stream, self.timeout).await else {
            debug!(client = %peer, edge.server = server, "connection sent nothing in time; closed");
            return;
        };
        let activity = Arc::new(Activity::default());
        let service = Tracked::new(service, Arc::clone(&activity));
        // With upgrades: a front end may take the connection over (a
        // WebSocket, `isolane_router::websocket`).
        let connection = self
            .builder
            .serve_connection_with_upgrades(TokioIo::new(io), service);
        let connection = std::pin::pin!(connection);
        // The watchdog runs beside the connection, so a request's wake-ups
        // poll the connection and a oneshot, not the watchdog's timer.
        let (close, close_asked) = oneshot::channel();
        let watchdog = tokio::spawn(watch_idle(
            Arc::clone(&activity),
            self.closing,
            self.idle,
            (peer, server),
            close,
        ));
        let ended = drive(
            connection,
            |connection| connection.graceful_shutdown(),
            close_asked,
            &activity,
            self.timeout,
        )
        .await;
        watchdog.abort();
        match ended {
            Some(Err(error)) => {
                debug!(%error, client = %peer, edge.server = server, "connection ended with an error")
            }
            None => {
                debug!(client = %peer, edge.server = server, "connection did not close in time; dropped")
            }
            Some(Ok(())) => {}
        }
    }
}

/// How long a shutdown waits for an open connection's next request before
/// closing it (see `watch_idle`).
const DRAIN_NEXT_REQUEST: Duration = Duration::from_secs(1);

/// Asks for a connection to close (`close`) when `closing` says the server
/// is shutting down, or when no request has been in flight for `idle`. The
/// connection task aborts it when the connection ends; until then it holds
/// `closing`, so the server sees the connection open.
async fn watch_idle(
    activity: Arc<Activity>,
    mut closing: watch::Receiver<()>,
    idle: Duration,
    (peer, server): (SocketAddr, &'static str),
    close: oneshot::Sender<()>,
) {
    tokio::select! {
        _ = closing.changed() => {
            // An HTTP/1.1 keep-alive connection closed while idle races its
            // client's next request on it, which then fails mid-flight
            // (hyper: `IncompleteMessage`; seen in the kubelet e2e's router
            // rollout). So a shutdown waits (at most `DRAIN_NEXT_REQUEST`)
            // for the connection's next request: closed while that one is
            // in flight, its answer says `connection: close` and the client
            // goes elsewhere. A connection still idle after that is closed.
            activity.next_request(DRAIN_NEXT_REQUEST.min(idle)).await;
        }
        () = activity.idle(idle) => {
            debug!(client = %peer, edge.server = server, "connection idle; closing");
        }
    }
    let _ = close.send(());
    // Held until the connection ends (and this is aborted).
    std::future::pending::<()>().await;
}

/// Drives `connection` to its end (`None`: it was dropped). When
/// `close_asked` fires, it is asked to close gracefully
/// (`graceful_shutdown`: HTTP/2 sends GOAWAY); what is in flight may finish
/// (a shutdown's grace bounds it), and once nothing has been for `linger`
/// it is dropped if still open, so a peer cannot hold a closing connection
/// open either.
async fn drive<C, E>(
    mut connection: Pin<&mut C>,
    graceful_shutdown: impl FnOnce(Pin<&mut C>),
    close_asked: oneshot::Receiver<()>,
    activity: &Activity,
    linger: Duration,
) -> Option<Result<(), E>>
where
    C: Future<Output = Result<(), E>>,
{
    tokio::select! {
        biased;
        ended = connection.as_mut() => return Some(ended),
        _ = close_asked => {}
    }
    graceful_shutdown(connection.as_mut());
    tokio::select! {
        biased;
        ended = connection => Some(ended),
        () = activity.idle(linger) => None,
    }
}
