//! The admin server: `/livez`, `/readyz` (and `/live`, `/ready`) and `/metrics`.
//!
//! Plain HTTP/1.1 on its own port, never the webhook's: probes and scrapes must
//! keep working when the webhook certificate is broken.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use crate::Error;
use crate::readiness::Readiness;

/// What the admin server reports.
#[derive(Clone, Debug)]
pub struct AdminState {
    /// The process's metrics.
    pub registry: Registry,
    /// The process's readiness.
    pub readiness: Readiness,
}

/// Binds the admin port.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Serve {
            server: "admin",
            addr,
            source,
        })
}

/// Serves the admin endpoints on `listener` until `shutdown` is cancelled.
pub async fn serve(listener: TcpListener, state: AdminState, shutdown: CancellationToken) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "admin server listening");
    }
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    debug!(%error, "admin accept failed");
                    continue;
                }
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(respond(&state, &request)) }
            });
            if let Err(error) = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                debug!(%error, %peer, "admin connection failed");
            }
        });
    }
}

/// Answers one admin request.
pub fn respond(state: &AdminState, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n".to_owned(),
        );
    }
    match request.uri().path() {
        "/live" | "/livez" => text(StatusCode::OK, "ok\n".to_owned()),
        "/ready" | "/readyz" => {
            let pending = state.readiness.pending();
            if pending.is_empty() {
                text(StatusCode::OK, "ok\n".to_owned())
            } else {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready: {}\n", pending.join(", ")),
                )
            }
        }
        "/metrics" => {
            let encoder = TextEncoder::new();
            let mut body = Vec::new();
            match encoder.encode(&state.registry.gather(), &mut body) {
                Ok(()) => Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, encoder.format_type())
                    .body(Full::new(Bytes::from(body)))
                    .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))),
                Err(error) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n".to_owned()),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
