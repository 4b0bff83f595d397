//! Durable Objects across nodes: [`Peers`], the engine's
//! [`ObjectPeers`] on a runtime node.
//!
//! An object's owner node is the first node of its placement key's
//! weighted-rendezvous order (`isolane_placement`, the order Workers are
//! placed by) over the live, non-draining nodes of the node Leases (the
//! same watch as the router's; fed by `alarms.rs`), skipping for
//! [`EJECTED_FOR`] a node this one could not connect to. A call whose
//! owner is another node is sent to it as an `Execute` call, the object
//! named in the gRPC metadata [`OBJECT_METADATA`] (never in the request's
//! HTTP headers, which a client writes), over the router↔node mutual TLS
//! with the node's own certificate; the owner's service accepts a node's
//! certificate for such calls only (`service.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use hyper_util::rt::TokioIo;
use isolane_engine::{Body, ObjectCall, ObjectPeers, PeerAnswer, PeerError, WorkerBundle};
use isolane_membership::{Members, MembershipObserver};
use isolane_placement::{Node, NodeSet};
use isolane_proto::Outcome;
use isolane_proto::call::{Answer, Call};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{ExecuteRequest, ExecuteResponse};
use tonic::transport::{Channel, Endpoint, Uri};

mod body;
mod metadata;

pub use metadata::{OBJECT_METADATA, object_of};

/// How long a node this one could not connect to is passed over as an
/// owner (the router skips a refusing node as long).
pub const EJECTED_FOR: Duration = Duration::from_secs(2);

/// How long connecting to a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The live nodes and where to reach them.
struct Ring {
    nodes: NodeSet,
    /// Node name → its first gRPC endpoint.
    endpoints: HashMap<String, String>,
}

/// The owners of objects as this node sees them, and its connections to
/// the other nodes. Cheap to clone.
#[derive(Clone)]
pub struct Peers {
    inner: Arc<Inner>,
}

struct Inner {
    me: String,
    ring: ArcSwapOption<Ring>,
    /// Nodes that refused a connection, until when.
    ejected: Mutex<HashMap<String, Instant>>,
    /// Endpoint → its connection.
    channels: Mutex<HashMap<String, Channel>>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers")
            .field("me", &self.inner.me)
            .finish_non_exhaustive()
    }
}

impl Peers {
    /// The peers of node `me`, dialled with `tls` (the node's certificate
    /// as a client; `None`: plaintext, `--insecure-grpc`). No ring until
    /// [`Peers::members`] is first called: every object is this node's.
    pub fn new(me: &str, tls: Option<Arc<rustls::ClientConfig>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                me: me.to_owned(),
                ring: ArcSwapOption::empty(),
                ejected: Mutex::new(HashMap::new()),
                channels: Mutex::new(HashMap::new()),
                tls,
            }),
        }
    }

    /// This node's name.
    pub fn me(&self) -> &str {
        &self.inner.me
    }

    /// Whether the node Leases have been seen (before, no node owns
    /// anything but every node its own calls).
    pub fn knows_ring(&self) -> bool {
        self.inner.ring.load().is_some()
    }

    /// The live nodes are now `members`.
    pub fn members(&self, members: &Members) {
        let live = members.live.iter().filter(|m| m.threads > 0);
        let nodes = live.clone().map(|m| Node::new(m.name.clone(), m.threads));
        let endpoints = live
            .filter_map(|m| Some((m.name.clone(), m.endpoints.first()?.clone())))
            .collect();
        let ring = Ring {
            nodes: NodeSet::new(nodes.collect()),
            endpoints,
        };
        self.inner.ring.store(Some(Arc::new(ring)));
    }

    /// The owner of the object with placement key `key`: `None` when it is
    /// this node (or no ring is known yet), else the node's name.
    pub fn owner_of(&self, key: &str) -> Option<String> {
        let ring = self.inner.ring.load();
        let ring = ring.as_ref()?;
        let now = Instant::now();
        let ejected = self
            .inner
            .ejected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for index in ring.nodes.preference(key) {
            let name = &ring.nodes.nodes().get(index)?.name;
            if *name == self.inner.me {
                return None;
            }
            if ejected.get(name).is_some_and(|until| *until > now) {
                continue;
            }
            return Some(name.clone());
        }
        None
    }

    fn eject(&self, node: &str, endpoint: &str) {
        let until = Instant::now() + EJECTED_FOR;
        self.inner
            .ejected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(node.to_owned(), until);
        self.inner
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(endpoint);
    }

    fn endpoint(&self, node: &str) -> Option<String> {
        let ring = self.inner.ring.load();
        ring.as_ref()?.endpoints.get(node).cloned()
    }

    /// This node's connection to `endpoint`, made now if there is none.
    async fn channel(&self, endpoint: &str) -> Result<Channel, String> {
        let cached = self
            .inner
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(endpoint)
            .cloned();
        if let Some(channel) = cached {
            return Ok(channel);
        }
        let channel = connect(endpoint, self.inner.tls.clone()).await?;
        self.inner
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(endpoint.to_owned(), channel.clone());
        Ok(channel)
    }

    /// Sends `request` to `node` and reads its answer's head.
    async fn send(
        self,
        node: String,
        call: Call,
        object: ObjectCall,
        body: Option<Bytes>,
    ) -> Result<http::Response<Body>, PeerError> {
        let unreachable = |reason: String| PeerError::Unreachable {
            node: node.clone(),
            reason,
        };
        let endpoint = self
            .endpoint(&node)
            .ok_or_else(|| unreachable("no endpoint in its Lease".to_owned()))?;
        let channel = match self.channel(&endpoint).await {
            Ok(channel) => channel,
            Err(reason) => {
                self.eject(&node, &endpoint);
                return Err(unreachable(reason));
            }
        };
        let mut frames = vec![ExecuteRequest::head(call.encode())];
        if let Some(body) = body {
            frames.push(ExecuteRequest::body(body));
        }
        frames.push(ExecuteRequest::end());
        let mut request = tonic::Request::new(futures::stream::iter(frames));
        metadata::name_object(request.metadata_mut(), &object);
        let answer = RuntimeClient::new(channel).execute(request).await;
        let stream = match answer {
            Ok(response) => response.into_inner(),
            Err(status) => return Err(self.refused(&node, &endpoint, &status)),
        };
        answered(node, stream).await
    }

    /// What a gRPC status refusing an object call means.
    fn refused(&self, node: &str, endpoint: &str, status: &tonic::Status) -> PeerError {
        let node = node.to_owned();
        if status.code() == tonic::Code::FailedPrecondition {
            return PeerError::NotOwner { node };
        }
        if isolane_proto::status::connection_refused(status) {
            self.eject(&node, endpoint);
            let reason = "the connection was refused".to_owned();
            return PeerError::Unreachable { node, reason };
        }
        if status.code() == tonic::Code::Unavailable {
            // The connection broke: made again at the next call.
            self.eject(&node, endpoint);
        }
        let reason = format!("{:?}: {}", status.code(), status.message());
        PeerError::Failed { node, reason }
    }
}

impl ObjectPeers for Peers {
    fn owner(&self, key: &str) -> Option<String> {
        self.owner_of(key)
    }

    fn call(
        &self,
        node: &str,
        worker: &WorkerBundle,
        object: ObjectCall,
        request: http::Request<Body>,
    ) -> PeerAnswer {
        let peers = self.clone();
        let node = node.to_owned();
        let (worker_id, revision) = (worker.id.clone(), worker.revision.clone());
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = collect(body).await.map_err(|reason| PeerError::Failed {
                node: node.clone(),
                reason,
            })?;
            let call = Call {
                request: http::Request::from_parts(parts, ()),
                worker_id,
                revision,
                thread: 0,
                request_id: String::new(),
                deadline_ms: 0,
                body_length: Some(body.as_ref().map_or(0, |b| b.len() as u64)),
                scheduled: None,
                prewarm: false,
                standby: false,
                whole_answer: false,
            };
            peers.send(node, call, object, body).await
        })
    }
}

/// The whole body of a forwarded call (its bytes are in memory already:
/// the isolate buffered them).
async fn collect(mut body: Body) -> Result<Option<Bytes>, String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next_chunk().await {
        bytes.extend_from_slice(&chunk.map_err(|error| error.to_string())?);
    }
    Ok((!bytes.is_empty()).then(|| Bytes::from(bytes)))
}

/// The answer of an `Execute` stream: its head, then its body streamed.
async fn answered(
    node: String,
    mut stream: tonic::Streaming<ExecuteResponse>,
) -> Result<http::Response<Body>, PeerError> {
    let failed = |reason: String| PeerError::Failed {
        node: node.clone(),
        reason,
    };
    let head = match stream.message().await {
        Ok(Some(ExecuteResponse {
            frame: Some(isolane_proto::runtime::v1::execute_response::Frame::Head(head)),
        })) => head,
        Ok(_) => return Err(failed("the answer had no head".to_owned())),
        Err(status) => return Err(failed(format!("{:?}: {}", status.code(), status.message()))),
    };
    let answer = Answer::decode(head).map_err(|error| failed(error.to_string()))?;
    if answer.outcome != Outcome::Ok {
        return Err(failed(format!(
            "{} ({})",
            answer.reason,
            answer.outcome.label()
        )));
    }
    let mut response = http::Response::new(Body::wrap(body::PeerBody::new(stream)));
    *response.status_mut() = answer.status;
    *response.headers_mut() = answer.headers;
    Ok(response)
}

/// A connection to a peer's `endpoint` (`http://host:port`), over TLS with
/// `tls` (the peer verified as `isolane-node`).
async fn connect(
    endpoint: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Channel, String> {
    let target = Endpoint::from_shared(endpoint.to_owned())
        .map_err(|error| format!("invalid endpoint {endpoint}: {error}"))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(10));
    let connected = match tls {
        None => target.connect().await,
        Some(tls) => {
            let connector = tokio_rustls::TlsConnector::from(tls);
            target
                .connect_with_connector(tower::service_fn(move |uri: Uri| {
                    tls_stream(connector.clone(), uri)
                }))
                .await
        }
    };
    connected.map_err(|error| {
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            reason = format!("{reason}: {cause}");
            source = cause.source();
        }
        reason
    })
}

/// TCP then TLS to `uri`, the peer verified as `isolane-node`.
async fn tls_stream(
    connector: tokio_rustls::TlsConnector,
    uri: Uri,
) -> std::io::Result<TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>> {
    let host = uri.host().unwrap_or_default();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    tcp.set_nodelay(true)?;
    let name = isolane_proto::mtls::node_server_name().map_err(std::io::Error::other)?;
    Ok(TokioIo::new(connector.connect(name, tcp).await?))
}

/// Feeds `peers` the node Leases' live nodes; when the live nodes change,
/// drops the process's D1 copies (`store`): the databases this node owns
/// after the change are opened afresh from their logs.
pub struct RingWatch {
    peers: Peers,
    store: Option<isolane_storage::Store>,
    last: Option<Vec<(String, u32)>>,
}

impl RingWatch {
    pub fn new(peers: Peers, store: Option<isolane_storage::Store>) -> Self {
        Self {
            peers,
            store,
            last: None,
        }
    }
}

impl MembershipObserver for RingWatch {
    fn members(&mut self, members: Members) {
        self.peers.members(&members);
        let live: Vec<(String, u32)> = members
            .live
            .iter()
            .filter(|m| m.threads > 0)
            .map(|m| (m.name.clone(), m.threads))
            .collect();
        if self.last.as_ref() != Some(&live) {
            if let Some(store) = &self.store {
                store.d1_close_all();
            }
            self.last = Some(live);
        }
    }
}

#[cfg(test)]
mod tests;
