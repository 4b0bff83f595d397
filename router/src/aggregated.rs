//! The router's aggregated API server (`--tail-api-addr`): one TLS
//! listener behind the Kubernetes API server serving two API groups, each
//! registered by an `APIService` pointing at it:
//! - `tail.isolane.dev/v1alpha1`, Workers' tails and D1 databases'
//!   migrations ([`crate::tail::api`]);
//! - `custom.metrics.k8s.io/v1beta2`, the nodes' pressure for
//!   HorizontalPodAutoscalers ([`crate::custom_metrics`]).
//!
//! Expected flow: TLS handshake (a client certificate chained to the
//! front-proxy CA, else no HTTP at all, [`crate::front_proxy`]); the
//! certificate's name is an allowed one (else 401); then the path's group
//! answers: GET only, but for the tail API's D1 migrations (a POST,
//! [`crate::tail::d1_migrations`]). `GET /openapi/v2` answers an empty document the
//! apiserver merges.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use http::{Request, Response, StatusCode};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::Proxy;
use crate::accept;
use crate::custom_metrics;
use crate::front_proxy::FrontProxy;
use crate::kube_shapes::{Body, openapi, status};
use crate::pressure::Pressure;
use crate::tail;
use crate::tail::access::Access;

/// Where the aggregated API server listens and what it serves with.
#[derive(Clone, Debug)]
pub struct ApiServerConfig {
    pub addr: SocketAddr,
    /// The serving certificate (PEM, with its chain).
    pub cert_file: PathBuf,
    /// Its key (PEM).
    pub key_file: PathBuf,
}

/// What the groups answer from.
#[derive(Clone)]
pub struct ApiServer {
    /// Who the apiserver's front proxy is.
    pub front: Arc<FrontProxy>,
    /// The router's fleet, for tails.
    pub proxy: Proxy,
    /// The router's one cache of Kubernetes' answers about tails.
    pub access: Arc<Access<kube::Client>>,
    /// The nodes' pressure.
    pub pressure: Pressure,
    /// The namespace of the nodes' Leases (and pods).
    pub nodes_namespace: String,
}

/// Serves `server`'s groups on `listener` with `tls` (which requires the
/// front proxy's client certificate) until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    server: ApiServer,
    shutdown: CancellationToken,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let server = Arc::new(server);
    accept::each_connection(listener, shutdown, "aggregated API", move |stream, peer| {
        connection(stream, peer, acceptor.clone(), Arc::clone(&server))
    })
    .await;
}

/// One connection: the TLS handshake, then HTTP/1.1 requests.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    server: Arc<ApiServer>,
) {
    let stream = match acceptor.accept(stream).await {
        Ok(stream) => stream,
        Err(error) => {
            debug!(%peer, %error, "aggregated API: TLS handshake refused");
            return;
        }
    };
    let from_front_proxy = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .is_some_and(|cert| server.front.allows(cert));
    accept::http1(stream, peer, "aggregated API", move |request| {
        let server = Arc::clone(&server);
        async move { handle(request, from_front_proxy, &server).await }
    })
    .await;
}

/// One request, on a connection whose client certificate is the front
/// proxy's (`from_front_proxy`) or not.
pub async fn handle<B>(
    request: Request<B>,
    from_front_proxy: bool,
    server: &ApiServer,
) -> Response<Body>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if !from_front_proxy {
        return status(
            StatusCode::UNAUTHORIZED,
            "the router's aggregated API answers only the Kubernetes API server's front proxy (--requestheader-allowed-names)",
        );
    }
    let path = request.uri().path();
    // The tail API's group checks its own methods (its D1 migrations take
    // a POST); the rest is read-only.
    if path.starts_with(tail::api::PREFIX) {
        return tail::api::handle(request, &server.front, &server.proxy, &server.access).await;
    }
    if request.method() != http::Method::GET {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "the aggregated API serves GET (and POST for D1 migrations)",
        );
    }
    if path == "/openapi/v2" {
        return openapi();
    }
    if path.starts_with(custom_metrics::PREFIX) {
        return custom_metrics::handle(path, &server.pressure, &server.nodes_namespace);
    }
    status(
        StatusCode::NOT_FOUND,
        "not found: the router serves tail.isolane.dev/v1alpha1 and custom.metrics.k8s.io/v1beta2",
    )
}
