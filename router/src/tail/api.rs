//! The tail API (`--tail-api-addr`): tails through the Kubernetes API
//! server, as an aggregated API (an `APIService` for
//! `tail.isolane.dev/v1alpha1`, as metrics-server serves `metrics.k8s.io`).
//!
//! `GET /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/workers/{name}/tail`
//! sent to the apiserver with any credential a kubeconfig holds (exec
//! plugins, client certificates, OIDC, tokens) is authenticated there,
//! authorized there (`get` on `workers/tail` in group `tail.isolane.dev`),
//! and proxied here over TLS with the apiserver's front-proxy client
//! certificate and the caller's identity in headers ([`front_proxy`]). The
//! router asks Kubernetes the tail endpoint's question too — may that
//! identity `get` `workers/tail` in group `isolane.dev` there — by a
//! SubjectAccessReview, cached as the tail endpoint caches it
//! ([`super::access`]), and streams the same JSON lines as the tail
//! endpoint ([`super::stream`]).
//!
//! Expected flow: TLS handshake (a client certificate chained to the
//! front-proxy CA, else no HTTP at all); the certificate's name is an
//! allowed one (else 401); `GET /apis/tail.isolane.dev/v1alpha1` answers
//! discovery; a tail needs a user header (else 401), then the review.
//! Nothing here makes a TokenReview: the apiserver authenticated the
//! caller, and a request that did not come through it never gets past the
//! handshake.

pub mod discovery;
pub mod front_proxy;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::TailBody;
use super::access::{Access, Refused};
use super::review::Reviewer;
use crate::Proxy;
use discovery::{GROUP, RESOURCE, SUBRESOURCE, VERSION, status};
use front_proxy::FrontProxy;

/// Where the tail API listens and what it serves with.
#[derive(Clone, Debug)]
pub struct TailApiConfig {
    pub addr: SocketAddr,
    /// The serving certificate (PEM, with its chain).
    pub cert_file: PathBuf,
    /// Its key (PEM).
    pub key_file: PathBuf,
}

/// Serves the tail API on `listener` until `shutdown`, with `tls` (which
/// requires the front proxy's client certificate).
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    front: Arc<FrontProxy>,
    proxy: Proxy,
    client: kube::Client,
    shutdown: CancellationToken,
) {
    let access = Arc::new(Access::new(client));
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    warn!(%error, "tail API: accept failed");
                    continue;
                }
            },
        };
        let (acceptor, front, proxy, access) = (
            acceptor.clone(),
            Arc::clone(&front),
            proxy.clone(),
            Arc::clone(&access),
        );
        tokio::spawn(async move {
            serve_connection(stream, peer, acceptor, front, proxy, access).await;
        });
    }
}

/// One connection: the TLS handshake, then HTTP/1.1 requests.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    front: Arc<FrontProxy>,
    proxy: Proxy,
    access: Arc<Access<kube::Client>>,
) {
    let stream = match acceptor.accept(stream).await {
        Ok(stream) => stream,
        Err(error) => {
            debug!(%peer, %error, "tail API: TLS handshake refused");
            return;
        }
    };
    let from_front_proxy = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .is_some_and(|cert| front.allows(cert));
    let service = hyper::service::service_fn(move |request| {
        let (front, proxy, access) = (Arc::clone(&front), proxy.clone(), Arc::clone(&access));
        async move {
            let response = handle(request, from_front_proxy, &front, &proxy, &access).await;
            Ok::<_, Infallible>(response)
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = served {
        debug!(%peer, %error, "tail API connection ended");
    }
}

/// What a request to the tail API asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// `GET /apis/tail.isolane.dev/v1alpha1`.
    Discovery,
    /// `GET /openapi/v2`, which the apiserver merges into its own.
    OpenApi,
    /// A Worker's tail.
    Tail { namespace: &'a str, name: &'a str },
}

/// The route of `path`, if it is one.
fn route(path: &str) -> Option<Route<'_>> {
    if path == "/openapi/v2" {
        return Some(Route::OpenApi);
    }
    let rest = path
        .strip_prefix("/apis/")?
        .strip_prefix(GROUP)?
        .strip_prefix('/')?
        .strip_prefix(VERSION)?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::Discovery);
    }
    let rest = rest.strip_prefix("/namespaces/")?;
    let (namespace, rest) = rest.split_once('/')?;
    let (name, subresource) = rest
        .strip_prefix(RESOURCE)?
        .strip_prefix('/')?
        .split_once('/')?;
    (subresource == SUBRESOURCE && super::is_worker(namespace, name))
        .then_some(Route::Tail { namespace, name })
}

/// One request, on a connection whose client certificate is the front
/// proxy's (`from_front_proxy`) or not.
pub async fn handle<B, R: Reviewer>(
    request: Request<B>,
    from_front_proxy: bool,
    front: &FrontProxy,
    proxy: &Proxy,
    access: &Access<R>,
) -> Response<TailBody> {
    if !from_front_proxy {
        return status(
            StatusCode::UNAUTHORIZED,
            "the tail API answers only the Kubernetes API server's front proxy (--requestheader-allowed-names)",
        );
    }
    if request.method() != http::Method::GET {
        return status(StatusCode::METHOD_NOT_ALLOWED, "the tail API serves GET");
    }
    let (namespace, name) = match route(request.uri().path()) {
        Some(Route::Discovery) => return discovery::resource_list(),
        Some(Route::OpenApi) => return discovery::openapi(),
        Some(Route::Tail { namespace, name }) => (namespace, name),
        None => {
            return status(
                StatusCode::NOT_FOUND,
                "not found: GET /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/workers/{name}/tail",
            );
        }
    };
    let Some(user) = front.identity(request.headers()) else {
        return status(
            StatusCode::UNAUTHORIZED,
            "no user: the Kubernetes API server names the caller in the request",
        );
    };
    let user = match access.authorize_user(user, namespace, name).await {
        Ok(user) => user,
        Err(refused) => return refused_tail(&refused, namespace, name),
    };
    let worker_id = format!("{namespace}/{name}");
    info!(worker.id = %worker_id, user = %user, "tail opened through the Kubernetes API");
    super::stream(proxy, &worker_id)
}

/// A refused tail as a `Status`, logged as the tail endpoint logs it.
fn refused_tail(refused: &Refused, namespace: &str, name: &str) -> Response<TailBody> {
    if refused.is_notable() {
        info!(namespace, worker = name, error = %refused, "tail refused");
    } else {
        debug!(namespace, worker = name, error = %refused, "tail refused");
    }
    status(refused.status(), &refused.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_discovery_and_tails_and_nothing_else() {
        let base = "/apis/tail.isolane.dev/v1alpha1";
        assert_eq!(route(base), Some(Route::Discovery));
        assert_eq!(route(&format!("{base}/")), Some(Route::Discovery));
        assert_eq!(route("/openapi/v2"), Some(Route::OpenApi));
        assert_eq!(
            route(&format!("{base}/namespaces/team-a/workers/hello.v2/tail")),
            Some(Route::Tail {
                namespace: "team-a",
                name: "hello.v2"
            })
        );
        for path in [
            "/apis",
            "/apis/tail.isolane.dev",
            "/apis/tail.isolane.dev/v1",
            "/apis/isolane.dev/v1alpha1/namespaces/a/workers/w/tail",
            &format!("{base}/namespaces/a/workers/w"),
            &format!("{base}/namespaces/a/workers/w/logs"),
            &format!("{base}/namespaces/A_/workers/w/tail"),
            &format!("{base}/namespaces/a/pods/w/tail"),
        ] {
            assert_eq!(route(path), None, "{path}");
        }
    }
}
