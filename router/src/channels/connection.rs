//! One HTTP/2 connection to a node, driven by this thread, used by tonic's
//! generated client without a `tonic::transport::Channel` in between.
//!
//! A `Channel` puts a `tower::buffer::Buffer` in front of its connection:
//! every call is sent through a queue to a worker task, which wakes, checks
//! the connection and hands the request to hyper's own queue to the
//! connection task. The router already keeps one connection per thread
//! and endpoint ([`super::channel`]), so the buffer only adds a task hop,
//! a queue and a boxed future per request. [`NodeChannel`] is hyper's
//! HTTP/2 `SendRequest` itself, made lazily (the first call connects; the
//! calls made meanwhile wait for the same attempt) and made again after
//! the connection closed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use http::Uri;
use hyper::client::conn::http2::{Builder, SendRequest};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::either::Either;
use tonic::body::Body;
use tonic::codegen::Service;

use super::ChannelConfig;
use super::boxed_spawn::BoxedSpawn;
use super::coalesced::Coalesced;
use crate::error::BoxError;

/// A connection attempt, shared by the calls that wait for it.
pub(super) type Connecting = Shared<BoxFuture<'static, Result<SendRequest<Body>, ConnectError>>>;

/// Why a connection to a node could not be made. Its source is the
/// `io::Error` (or hyper's handshake error), which the proxy reads to tell a
/// refused connection from one that broke (`Error::from_status`).
#[derive(Clone, Debug)]
pub struct ConnectError(Arc<io::Error>);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot connect to the node: {}", self.0)
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The `io::Error` itself, not its `Arc`, so it can be downcast.
        Some(self.0.as_ref())
    }
}

/// A connection to a node, or the attempt to make one.
#[derive(Clone)]
pub(super) enum Conn {
    Ready(SendRequest<Body>),
    Connecting(Connecting),
}

impl Conn {
    /// Starts connecting to `uri` in the background of the calls that poll it.
    pub(super) fn connect(uri: Uri, config: &ChannelConfig, tls: Option<NodeTls>) -> Self {
        let config = config.clone();
        let attempt = async move {
            let connecting = handshake(uri, &config, tls);
            match tokio::time::timeout(config.connect_timeout, connecting).await {
                Ok(result) => result,
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connecting to the node timed out",
                )),
            }
            .map_err(|error| ConnectError(Arc::new(error)))
        };
        Self::Connecting(attempt.boxed().shared())
    }

    /// The connection as it is now, if it can still take calls: a finished
    /// attempt becomes the connection; a failed attempt or a closed
    /// connection is `None` (the caller connects again).
    pub(super) fn current(&mut self) -> Option<&Self> {
        match self {
            Self::Ready(send) if send.is_closed() => None,
            Self::Ready(_) => Some(self),
            Self::Connecting(attempt) => match attempt.peek() {
                None => Some(self),
                Some(Ok(send)) => {
                    *self = Self::Ready(send.clone());
                    Some(self)
                }
                Some(Err(_)) => None,
            },
        }
    }
}

/// TLS towards nodes: the connector and the name their certificates carry.
#[derive(Clone)]
pub(super) struct NodeTls {
    pub(super) connector: TlsConnector,
    pub(super) name: rustls::pki_types::ServerName<'static>,
}

/// TCP (`TCP_NODELAY`), TLS when configured, then the HTTP/2 handshake;
/// the connection is driven by a task on this thread's runtime.
async fn handshake(
    uri: Uri,
    config: &ChannelConfig,
    tls: Option<NodeTls>,
) -> io::Result<SendRequest<Body>> {
    let invalid = || io::Error::new(io::ErrorKind::InvalidInput, "endpoint without a host");
    let host = uri.host().ok_or_else(invalid)?;
    // An IPv6 literal comes bracketed in a URI.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host, port)).await?;
    stream.set_nodelay(true)?;
    let stream = match tls {
        Some(tls) => Either::Right(tls.connector.connect(tls.name, stream).await?),
        None => Either::Left(stream),
    };
    let mut builder = Builder::new(BoxedSpawn);
    builder
        .timer(TokioTimer::new())
        .keep_alive_interval(config.keepalive)
        .keep_alive_while_idle(true)
        // Fixed windows rather than adaptive ones: no set of slow readers
        // may hold the whole connection window, and h2's budget for small
        // DATA frames follows it (see CONNECTION_WINDOW).
        .initial_connection_window_size(isolane_proto::socket::CONNECTION_WINDOW)
        .initial_stream_window_size(isolane_proto::socket::STREAM_WINDOW);
    let (send, connection) = builder
        .handshake(TokioIo::new(Coalesced::new(stream)))
        .await
        .map_err(io::Error::other)?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "node connection closed");
        }
    });
    Ok(send)
}

/// This thread's connection to one node endpoint, as tonic's clients take
/// it (`RuntimeClient::with_origin(channel, origin)`).
#[derive(Clone)]
pub struct NodeChannel {
    conn: Conn,
    /// The attempt this channel waited for failed: its call fails with this.
    failed: Option<ConnectError>,
}

impl NodeChannel {
    pub(super) fn new(conn: Conn) -> Self {
        Self { conn, failed: None }
    }
}

impl std::fmt::Debug for NodeChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match (&self.conn, &self.failed) {
            (_, Some(_)) => "failed",
            (Conn::Ready(_), None) => "ready",
            (Conn::Connecting(_), None) => "connecting",
        };
        f.debug_struct("NodeChannel")
            .field("state", &state)
            .finish()
    }
}

/// A call's response, as hyper gives it.
pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<hyper::body::Incoming>, BoxError>> + Send>>;

impl Service<http::Request<Body>> for NodeChannel {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = BoxError;
    type Future = ResponseFuture;

    /// Ready once connected, or once connecting failed: errors are the
    /// call's (tonic's clients turn a readiness error into a bare UNKNOWN
    /// status, without the transport error the proxy classifies).
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        loop {
            match &mut self.conn {
                _ if self.failed.is_some() => return Poll::Ready(Ok(())),
                // A closed connection fails the call that follows.
                Conn::Ready(send) => return send.poll_ready(cx).map(|_| Ok(())),
                Conn::Connecting(attempt) => match ready!(attempt.poll_unpin(cx)) {
                    Ok(send) => self.conn = Conn::Ready(send),
                    Err(error) => self.failed = Some(error),
                },
            }
        }
    }

    fn call(&mut self, request: http::Request<Body>) -> ResponseFuture {
        if let Some(error) = self.failed.take() {
            return Box::pin(std::future::ready(Err(error.into())));
        }
        match &mut self.conn {
            Conn::Ready(send) => {
                Box::pin(send.send_request(request).map(|r| r.map_err(Into::into)))
            }
            // tonic polls readiness first; a call before that is refused.
            Conn::Connecting(_) => Box::pin(std::future::ready(Err(
                "the node channel was called before it was ready".into(),
            ))),
        }
    }
}
