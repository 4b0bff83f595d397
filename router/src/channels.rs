//! Per-thread gRPC channels to runtime nodes.
//!
//! Each router worker thread keeps its own map from endpoint to
//! [`tonic::transport::Channel`] (one HTTP/2 connection each) in a
//! thread-local, so the request path takes no lock to find a connection and
//! every core drives its own connections, as the design asks ("per-core workers
//! with their own HTTP/2 connections beat a shared pool"). Channels are created
//! lazily on a thread's first request to an endpoint, and a thread drops the
//! channels of nodes that left the fleet the next time it sees a newer
//! [`Fleet`] generation.
//!
//! The connections coalesce writes ([`Coalesced`]): tonic's HTTP/2 client
//! sends a request's HEADERS from the connection task and its DATA from a
//! separate body task, so a plain socket carries one request as two
//! `writev`s, and the node wakes twice. Deferring a batch's first write by one
//! turn of this thread's scheduler lets the body task queue its frames first,
//! and the request leaves in one segment.
//!
//! With [`ChannelConfig::tls`] set (the default for the binary), every
//! connection is mutual TLS: the router presents its client certificate and
//! verifies the node's against the platform CA under the fixed name
//! `isolane-node` (see `isolane_proto::mtls` for why not the pod IP it dials).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;
// tonic's re-export of `tower_service::Service`, the trait its connectors implement.
use tonic::codegen::Service;
use tonic::transport::{Channel, Endpoint};

use crate::Error;
use crate::fleet::{Fleet, FleetNode};

/// How a new channel connects.
#[derive(Clone, Debug)]
pub struct ChannelConfig {
    /// Deadline for establishing the connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// HTTP/2 keep-alive ping interval, to notice a dead node without traffic.
    pub keepalive: Duration,
    /// Mutual TLS to nodes (`isolane_proto::mtls::client_config`); `None`
    /// is plaintext (`--insecure-grpc`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(1),
            keepalive: Duration::from_secs(10),
            tls: None,
        }
    }
}

#[derive(Default)]
struct Cache {
    generation: u64,
    /// Endpoint URI → (node name, channel).
    channels: HashMap<String, (String, Channel)>,
}

thread_local! {
    static CHANNELS: RefCell<Cache> = RefCell::new(Cache::default());
}

/// This thread's channel to `node`'s `endpoint`, created if needed.
pub fn channel(
    fleet: &Fleet,
    node: &FleetNode,
    endpoint: &str,
    config: &ChannelConfig,
) -> Result<Channel, Error> {
    CHANNELS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.generation != fleet.generation() {
            cache.generation = fleet.generation();
            cache.channels.retain(|endpoint, (name, _)| {
                fleet
                    .nodes()
                    .iter()
                    .any(|n| n.member.name == *name && n.member.endpoints.contains(endpoint))
            });
        }
        if let Some((_, channel)) = cache.channels.get(endpoint) {
            return Ok(channel.clone());
        }
        let channel = connect_lazy(endpoint, config).ok_or_else(|| Error::InvalidEndpoint {
            node: node.member.name.clone(),
            endpoint: endpoint.to_owned(),
        })?;
        cache.channels.insert(
            endpoint.to_owned(),
            (node.member.name.clone(), channel.clone()),
        );
        Ok(channel)
    })
}

/// How many channels this thread holds (for tests).
pub fn cached() -> usize {
    CHANNELS.with(|cache| cache.borrow().channels.len())
}

fn connect_lazy(endpoint: &str, config: &ChannelConfig) -> Option<Channel> {
    let uri: Uri = endpoint.parse().ok()?;
    uri.authority()?;
    // `connect_timeout` applies to the custom connector too (tonic wraps it).
    let endpoint = Endpoint::from(uri)
        .connect_timeout(config.connect_timeout)
        .http2_keep_alive_interval(config.keepalive)
        .keep_alive_while_idle(true)
        // Fixed windows rather than adaptive ones: h2's budget for small
        // DATA frames follows the connection window (see CONNECTION_WINDOW).
        .initial_connection_window_size(isolane_proto::socket::CONNECTION_WINDOW)
        .initial_stream_window_size(isolane_proto::socket::STREAM_WINDOW);
    let tls = match &config.tls {
        Some(tls) => Some(NodeTls {
            connector: TlsConnector::from(tls.clone()),
            name: isolane_proto::mtls::node_server_name().ok()?,
        }),
        None => None,
    };
    Some(endpoint.connect_with_connector_lazy(Connector { tls }))
}

/// Opens TCP connections to nodes (`TCP_NODELAY`), mutual TLS when
/// configured, with coalesced writes.
#[derive(Clone)]
struct Connector {
    tls: Option<NodeTls>,
}

#[derive(Clone)]
struct NodeTls {
    connector: TlsConnector,
    name: rustls::pki_types::ServerName<'static>,
}

/// A connection to a node: plaintext or TLS.
type NodeStream = Either<TcpStream, TlsStream<TcpStream>>;

type Connecting = Pin<Box<dyn Future<Output = io::Result<TokioIo<Coalesced<NodeStream>>>> + Send>>;

impl Service<Uri> for Connector {
    type Response = TokioIo<Coalesced<NodeStream>>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        let tls = self.tls.clone();
        Box::pin(async move {
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
            Ok(TokioIo::new(Coalesced::new(stream)))
        })
    }
}

/// A stream whose writes are gathered per scheduler turn.
///
/// The first write of a batch (the writes up to a flush) returns `Pending`
/// and wakes its own task at once: the task runs again after the tasks
/// already woken on this thread, such as the HTTP/2 body task that was just
/// given send capacity, so their frames join the same write. The cost is one
/// extra poll of the connection task per batch, no syscall and no timer.
#[derive(Debug)]
pub struct Coalesced<T> {
    inner: T,
    /// A batch is open: its first write was already deferred once.
    open: bool,
}

impl<T> Coalesced<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self { inner, open: false }
    }

    /// Whether to defer this write (the first of its batch).
    fn defer(&mut self, cx: &mut Context<'_>) -> bool {
        if self.open {
            return false;
        }
        self.open = true;
        cx.waker().wake_by_ref();
        true
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.defer(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.defer(cx) {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.inner).poll_flush(cx);
        if flushed.is_ready() {
            // The batch is out; the next write starts a new one.
            this.open = false;
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
