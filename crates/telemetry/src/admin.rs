//! The admin server: `/live`, `/ready`, `/metrics`.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::{Error, Exemplars, Readiness, openmetrics};
use isolane_edge::{Edge, Plain};

/// How long shutdown waits for open admin connections to finish.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The HTTP admin endpoints of one process.
///
/// - `GET /live`, `/livez`: 200 while the process serves at all.
/// - `GET /ready`, `/readyz`: 200 when [`Readiness`] is ready, otherwise 503
///   naming the components that are not.
/// - `GET /metrics`: the registry in the Prometheus text format, or in the
///   OpenMetrics one, with the [`Exemplars`] of its histograms, when the
///   scraper's `Accept` names `application/openmetrics-text` (Prometheus's
///   does, unless told otherwise by `scrape_protocols`).
///
/// [`AdminServer::respond`] is the whole application as a function (tests
/// call it without a socket); [`AdminServer::bind`] and
/// [`BoundAdminServer::serve`] put it on a port, HTTP/1 and HTTP/2.
#[derive(Clone, Debug)]
pub struct AdminServer {
    registry: prometheus::Registry,
    readiness: Readiness,
    exemplars: Exemplars,
}

/// An [`AdminServer`] listening on its port, not yet serving.
#[derive(Debug)]
pub struct BoundAdminServer {
    server: AdminServer,
    listener: TcpListener,
    addr: SocketAddr,
}

// === impl AdminServer ===

impl AdminServer {
    /// Serves `registry` (the process's one registry, made in `main`) and
    /// `readiness`.
    pub fn new(registry: prometheus::Registry, readiness: Readiness) -> Self {
        Self {
            registry,
            readiness,
            exemplars: Exemplars::new(),
        }
    }

    /// Writes `exemplars` beside the registry's histograms in the
    /// OpenMetrics exposition.
    pub fn with_exemplars(mut self, exemplars: Exemplars) -> Self {
        self.exemplars = exemplars;
        self
    }

    /// The response to `request`.
    pub fn respond<B>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        if !matches!(path, "/live" | "/livez" | "/ready" | "/readyz" | "/metrics") {
            return text(StatusCode::NOT_FOUND, "not found\n");
        }
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            response
                .headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        match path {
            "/live" | "/livez" => text(StatusCode::OK, "live\n"),
            "/ready" | "/readyz" => self.ready(),
            _ if wants_openmetrics(request.headers()) => self.openmetrics(),
            _ => self.metrics(),
        }
    }

    /// Listens on `addr` (port 0 picks a free port; see
    /// [`BoundAdminServer::local_addr`]).
    pub async fn bind(self, addr: SocketAddr) -> Result<BoundAdminServer, Error> {
        let bind_error = |source| Error::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        Ok(BoundAdminServer {
            server: self,
            listener,
            addr,
        })
    }

    /// [`AdminServer::bind`], then [`BoundAdminServer::serve`] until
    /// `shutdown` completes (e.g. `token.cancelled_owned()`).
    pub async fn serve(
        self,
        addr: SocketAddr,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), Error> {
        self.bind(addr).await?.serve(shutdown).await;
        Ok(())
    }

    fn ready(&self) -> Response<Full<Bytes>> {
        let waiting = self.readiness.not_ready();
        if waiting.is_empty() {
            text(StatusCode::OK, "ready\n")
        } else {
            let body = format!("not ready: {}\n", waiting.join(", "));
            text(StatusCode::SERVICE_UNAVAILABLE, body)
        }
    }

    fn metrics(&self) -> Response<Full<Bytes>> {
        let encoder = prometheus::TextEncoder::new();
        match encoder.encode_to_string(&self.registry.gather()) {
            Ok(body) => {
                let mut response = text(StatusCode::OK, body);
                if let Ok(value) = header::HeaderValue::from_str(prometheus::TEXT_FORMAT) {
                    response.headers_mut().insert(header::CONTENT_TYPE, value);
                }
                response
            }
            Err(error) => {
                warn!(%error, "cannot encode metrics");
                text(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n")
            }
        }
    }

    fn openmetrics(&self) -> Response<Full<Bytes>> {
        match openmetrics::encode(self.registry.gather(), &self.exemplars) {
            Ok(body) => {
                let mut response = text(StatusCode::OK, body);
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static(openmetrics::CONTENT_TYPE),
                );
                response
            }
            Err(error) => {
                warn!(%error, "cannot encode metrics");
                text(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n")
            }
        }
    }
}

/// Whether `Accept` names the OpenMetrics text format at all (a scraper
/// lists it only when it can read it).
fn wants_openmetrics(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains(OPENMETRICS_TYPE))
}

/// The media type of the OpenMetrics text format.
const OPENMETRICS_TYPE: &str = "application/openmetrics-text";

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

// === impl BoundAdminServer ===

impl BoundAdminServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` completes, then stops accepting and lets open
    /// connections finish (for at most a few seconds).
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) {
        let Self {
            server,
            listener,
            addr,
        } = self;
        info!(admin.addr = %addr, "admin server listening");
        let server = Arc::new(server);
        let service = |_peer| {
            let server = Arc::clone(&server);
            hyper::service::service_fn(move |request| {
                let response = server.respond(&request);
                async move { Ok::<_, Infallible>(response) }
            })
        };
        let edge = Edge::new("admin", DRAIN_TIMEOUT);
        isolane_edge::serve(listener, edge, Plain, service, shutdown).await;
        info!(admin.addr = %addr, "admin server stopped");
    }
}
