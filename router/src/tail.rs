//! The tail endpoint (`--tail-addr`): `GET /v1/tail/{namespace}/{name}`
//! with the caller's own Kubernetes bearer token streams that Worker's
//! invocations as JSON lines (`isolane_worker::TailEvent`, docs/tail.md),
//! fanned in from every live node of the fleet.
//!
//! Expected flow: the token is checked by Kubernetes ([`access`]: answers
//! cached for seconds, reviews of new tokens limited per client address and
//! for everyone by [`limit`]); then the router opens one `Tail` call per
//! live node (the nodes of its membership Leases, over the same mutually
//! authenticated channels as requests) and merges their frames into the
//! response as they come. Each invocation runs on one node, so it appears
//! once.
//!
//! Guarantees: nothing here buffers events beyond HTTP/2 flow control; a
//! client that reads slowly makes the nodes drop events for it (each node's
//! queue is bounded), which arrive as `{"dropped_events":N,"node":…}` lines;
//! requests never wait. A node that joins while a tail is open is tailed
//! from the next fleet check (every 2 s): its earlier invocations are not.

pub mod access;
pub mod api;
pub mod d1_migrations;
mod expiring;
pub mod limit;
pub mod review;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{TailRequest, tail_frame};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::Proxy;
use crate::accept;
use crate::channels;
use crate::fleet::{Fleet, FleetNode};
use access::{Access, Refused};
use review::Reviewer;

/// The path prefix of the tail endpoint.
pub const PATH: &str = "/v1/tail/";

/// The body of a tail (and of its refusals).
pub type TailBody = crate::kube_shapes::Body;

/// Serves tails on `listener` until `shutdown`, checking callers with
/// `access` (the router's one cache of Kubernetes' answers).
pub async fn serve(
    listener: TcpListener,
    proxy: Proxy,
    access: Arc<Access<kube::Client>>,
    shutdown: CancellationToken,
) {
    accept::each_connection(listener, shutdown, "tail", move |stream, peer| {
        let (proxy, access) = (proxy.clone(), Arc::clone(&access));
        accept::http1(stream, peer, "tail", move |request| {
            let (proxy, access) = (proxy.clone(), Arc::clone(&access));
            async move {
                if request.uri().path().starts_with(d1_migrations::PATH) {
                    return d1_migrations::handle(request, &proxy, &access, peer).await;
                }
                handle(request, &proxy, &access, peer).await
            }
        })
    })
    .await;
}

/// One tail request from `peer`: checked by `access`, then streamed.
pub async fn handle<R: Reviewer>(
    request: Request<Incoming>,
    proxy: &Proxy,
    access: &Access<R>,
    peer: SocketAddr,
) -> Response<TailBody> {
    let Some((namespace, name)) = worker_of(request.uri().path()) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "not found: GET /v1/tail/{namespace}/{name}",
        );
    };
    if request.method() != http::Method::GET {
        return refusal(StatusCode::METHOD_NOT_ALLOWED, "a tail is a GET");
    }
    let headers = request.headers();
    let client = limit::client_address(peer.ip(), headers, |ip| proxy.trusts(ip));
    let authorization = headers.get(http::header::AUTHORIZATION);
    let user = match access
        .authorize(client, authorization, namespace, name)
        .await
    {
        Ok(user) => user,
        Err(refused) => return refused_tail(&refused, peer, client, namespace, name),
    };
    let worker_id = format!("{namespace}/{name}");
    info!(%peer, worker.id = %worker_id, user = %user, "tail opened");
    stream(proxy, &worker_id)
}

/// The tail of `worker_id` as a streamed response of JSON lines.
fn stream(proxy: &Proxy, worker_id: &str) -> Response<TailBody> {
    let lines = fan_in(proxy, worker_id).map(|line| Ok(Frame::data(line)));
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(lines)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

/// `namespace` and `name` from `/v1/tail/{namespace}/{name}`, when both are
/// DNS labels.
fn worker_of(path: &str) -> Option<(&str, &str)> {
    let (namespace, name) = path.strip_prefix(PATH)?.split_once('/')?;
    is_worker(namespace, name).then_some((namespace, name))
}

/// Whether `namespace` is a DNS label and `name` a DNS subdomain, as a
/// Worker's are.
fn is_worker(namespace: &str, name: &str) -> bool {
    let valid = |s: &str| isolane_telemetry::is_dns_label(s) || is_dns_subdomain(s);
    isolane_telemetry::is_dns_label(namespace) && valid(name)
}

/// A Worker's name is a DNS subdomain (labels joined by dots).
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(isolane_telemetry::is_dns_label)
}

/// How often an open tail looks for nodes that joined the fleet.
const REFRESH: Duration = Duration::from_secs(2);

/// Lines relayed ahead of a slow client (then the nodes' queues fill and
/// they drop, counting).
const RELAY: usize = 64;

/// Every live node's tail of `worker_id`, merged as JSON lines: the nodes
/// live now, and those that join while the tail is open (the fleet is
/// checked every [`REFRESH`]). The relay ends when the client goes away,
/// which cancels the nodes' calls.
fn fan_in(proxy: &Proxy, worker_id: &str) -> impl Stream<Item = Bytes> + Send + 'static {
    let (lines, relayed) = tokio::sync::mpsc::channel(RELAY);
    let (proxy, worker_id) = (proxy.clone(), worker_id.to_owned());
    tokio::spawn(async move {
        let mut tailed: HashSet<String> = HashSet::new();
        let mut tails = futures::stream::SelectAll::new();
        let mut generation = None;
        let mut every = tokio::time::interval(REFRESH);
        loop {
            tokio::select! {
                () = lines.closed() => return,
                _ = every.tick() => {
                    let fleet = proxy.fleet();
                    if generation == Some(fleet.generation()) {
                        continue;
                    }
                    generation = Some(fleet.generation());
                    for node in fleet.nodes() {
                        if tailed.contains(&node.member.name) {
                            continue;
                        }
                        if let Some(tail) = open_node(&proxy, &fleet, node, &worker_id) {
                            tailed.insert(node.member.name.clone());
                            tails.push(tail);
                        }
                    }
                }
                Some((node, line)) = tails.next(), if !tails.is_empty() => match line {
                    Some(line) => {
                        if lines.send(line).await.is_err() {
                            return;
                        }
                    }
                    // That node's tail ended (it left, or restarts): tail it
                    // again if it comes back.
                    None => {
                        tailed.remove(&node);
                    }
                },
            }
        }
    });
    futures::stream::unfold(relayed, |mut relayed| async move {
        relayed.recv().await.map(|line| (line, relayed))
    })
}

type NodeLines = std::pin::Pin<Box<dyn Stream<Item = (String, Option<Bytes>)> + Send>>;

/// `node`'s tail of `worker_id`, its lines tagged with its name, then one
/// `None` when it ends.
fn open_node(proxy: &Proxy, fleet: &Fleet, node: &FleetNode, worker_id: &str) -> Option<NodeLines> {
    let endpoint = node.member.endpoint_for(0)?;
    let (channel, origin) = match channels::channel(fleet, node, endpoint, &proxy.config().channel)
    {
        Ok(channel) => channel,
        Err(error) => {
            warn!(node = %node.member.name, %error, "tail: no channel to the node");
            return None;
        }
    };
    let name = node.member.name.clone();
    let lines = node_tail(
        RuntimeClient::with_origin(channel, origin),
        worker_id.to_owned(),
        name.clone(),
    );
    let tagged = lines
        .map(Some)
        .chain(futures::stream::once(async { None }))
        .map(move |line| (name.clone(), line));
    Some(tagged.boxed())
}

/// One node's tail as JSON lines; ends when the node ends it.
fn node_tail(
    mut client: RuntimeClient<channels::NodeChannel>,
    worker_id: String,
    node: String,
) -> std::pin::Pin<Box<dyn Stream<Item = Bytes> + Send>> {
    let opened = async move {
        let request = TailRequest { worker_id };
        match client.tail(request).await {
            Ok(response) => {
                let node = node.clone();
                response
                    .into_inner()
                    .filter_map(move |frame| {
                        let line = match frame.ok().and_then(|f| f.frame) {
                            Some(tail_frame::Frame::EventJson(json)) => {
                                let mut line = Vec::with_capacity(json.len() + 1);
                                line.extend_from_slice(&json);
                                line.push(b'\n');
                                Some(Bytes::from(line))
                            }
                            Some(tail_frame::Frame::Dropped(n)) => Some(Bytes::from(format!(
                                "{}\n",
                                serde_json::json!({ "dropped_events": n, "node": node })
                            ))),
                            None => None,
                        };
                        futures::future::ready(line)
                    })
                    .boxed()
            }
            Err(status) => {
                warn!(node = %node, error = %status.message(), "tail: the node refused the tail");
                futures::stream::empty().boxed()
            }
        }
    };
    futures::stream::once(opened).flatten().boxed()
}

/// The answer to a refused tail (with `Retry-After` when throttled),
/// logged: at `info` when a known identity was refused or the apiserver
/// failed, else at `debug` (anyone may send those as fast as they like).
fn refused_tail(
    refused: &Refused,
    peer: SocketAddr,
    client: std::net::IpAddr,
    namespace: &str,
    name: &str,
) -> Response<TailBody> {
    if refused.is_notable() {
        info!(%peer, %client, namespace, worker = name, error = %refused, "tail refused");
    } else {
        debug!(%peer, %client, namespace, worker = name, error = %refused, "tail refused");
    }
    let mut response = refusal(refused.status(), &refused.to_string());
    if let Some(seconds) = refused.retry_after() {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    }
    response
}

/// A JSON error the CLI prints as it is.
fn refusal(status: StatusCode, message: &str) -> Response<TailBody> {
    let body = format!("{}\n", serde_json::json!({ "error": message }));
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
