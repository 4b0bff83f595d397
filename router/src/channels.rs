//! Per-thread gRPC channels to runtime nodes.
//!
//! Each router worker thread keeps its own map from endpoint to
//! [`NodeChannel`] (one HTTP/2 connection each, `connection.rs`) in a
//! thread-local, so the request path takes no lock to find a connection and
//! every core drives its own connections, as the design asks ("per-core workers
//! with their own HTTP/2 connections beat a shared pool"). Channels are created
//! lazily on a thread's first request to an endpoint, and a thread drops the
//! channels of nodes that left the fleet the next time it sees a newer
//! [`Fleet`] generation.
//!
//! The connections coalesce writes ([`Coalesced`], `coalesced.rs`): hyper's HTTP/2 client
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

mod boxed_spawn;
mod calls;
mod coalesced;
mod connection;

use std::cell::RefCell;
// Looked up on every call: foldhash (seeded per process) rather than SipHash.
use foldhash::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use tokio_rustls::TlsConnector;

pub use calls::{CallFrames, CallStream};
pub use coalesced::Coalesced;
use connection::{Conn, NodeTls};
pub use connection::{ConnectError, NodeChannel, ResponseFuture};

use crate::Error;
use crate::fleet::{Fleet, FleetNode};

/// The largest message the router accepts from a node, on `Execute` and
/// `Calls` alike (body chunks are far smaller).
pub const MAX_NODE_MESSAGE: usize = 16 * 1024 * 1024;

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
    /// Endpoint URI → its node's name and this thread's connection.
    channels: HashMap<String, Slot>,
}

struct Slot {
    node: String,
    /// The endpoint as parsed, the origin of every call's URI.
    origin: Uri,
    conn: Conn,
    /// The `Calls` stream on this connection, once a bodyless call opened it.
    calls: Option<Arc<CallStream>>,
}

thread_local! {
    static CHANNELS: RefCell<Cache> = RefCell::new(Cache::default());
}

/// This thread's channel to `node`'s `endpoint` and the origin its calls
/// name, connecting (in the background of the first call) if there is no
/// open connection or attempt.
pub fn channel(
    fleet: &Fleet,
    node: &FleetNode,
    endpoint: &str,
    config: &ChannelConfig,
) -> Result<(NodeChannel, Uri), Error> {
    CHANNELS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.generation != fleet.generation() {
            cache.generation = fleet.generation();
            cache.channels.retain(|endpoint, slot| {
                fleet
                    .nodes()
                    .iter()
                    .any(|n| n.member.name == slot.node && n.member.endpoints.contains(endpoint))
            });
        }
        let invalid = || Error::InvalidEndpoint {
            node: node.member.name.clone(),
            endpoint: endpoint.to_owned(),
        };
        if let Some(slot) = cache.channels.get_mut(endpoint) {
            if let Some(conn) = slot.conn.current() {
                return Ok((NodeChannel::new(conn.clone()), slot.origin.clone()));
            }
            // Closed, or the last attempt failed: this call tries again.
            let tls = node_tls(config).ok_or_else(invalid)?;
            slot.conn = Conn::connect(slot.origin.clone(), config, tls);
            return Ok((NodeChannel::new(slot.conn.clone()), slot.origin.clone()));
        }
        let origin = parse_endpoint(endpoint).ok_or_else(invalid)?;
        let tls = node_tls(config).ok_or_else(invalid)?;
        let conn = Conn::connect(origin.clone(), config, tls);
        let channel = NodeChannel::new(conn.clone());
        cache.channels.insert(
            endpoint.to_owned(),
            Slot {
                node: node.member.name.clone(),
                origin: origin.clone(),
                conn,
                calls: None,
            },
        );
        Ok((channel, origin))
    })
}

/// This thread's `Calls` stream to `node`'s `endpoint`, opened on the
/// endpoint's connection ([`channel`]) when there is none or it has ended.
pub fn call_stream(
    fleet: &Fleet,
    node: &FleetNode,
    endpoint: &str,
    config: &ChannelConfig,
) -> Result<Arc<CallStream>, Error> {
    let open = |cache: &Cache| {
        let calls = cache.channels.get(endpoint)?.calls.as_ref()?;
        (!calls.is_closed()).then(|| Arc::clone(calls))
    };
    let current = CHANNELS.with(|cache| {
        let cache = cache.borrow();
        (cache.generation == fleet.generation())
            .then(|| open(&cache))
            .flatten()
    });
    if let Some(calls) = current {
        return Ok(calls);
    }
    // Prunes the cache for this fleet and (re)connects as needed.
    let (channel, origin) = channel(fleet, node, endpoint, config)?;
    Ok(CHANNELS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(calls) = open(&cache) {
            return calls;
        }
        let calls = CallStream::open(RuntimeClient::with_origin(channel, origin));
        if let Some(slot) = cache.channels.get_mut(endpoint) {
            slot.calls = Some(Arc::clone(&calls));
        }
        calls
    }))
}

/// How many channels this thread holds (for tests).
pub fn cached() -> usize {
    CHANNELS.with(|cache| cache.borrow().channels.len())
}

fn parse_endpoint(endpoint: &str) -> Option<Uri> {
    let uri: Uri = endpoint.parse().ok()?;
    uri.authority()?;
    Some(uri)
}

/// The TLS side of a new connection: `Some(None)` for plaintext, `None` if
/// the node's certificate name cannot be made.
fn node_tls(config: &ChannelConfig) -> Option<Option<NodeTls>> {
    let Some(tls) = &config.tls else {
        return Some(None);
    };
    let name = isolane_proto::mtls::node_server_name().ok()?;
    Some(Some(NodeTls {
        connector: TlsConnector::from(tls.clone()),
        name,
    }))
}
