//! The accept loop of the router's side endpoints (the tail endpoint, the
//! aggregated API server): each connection served on a task of its own, an
//! accept error logged and skipped, nothing new accepted after shutdown.
//! The ingress has its own (`server`), with its per-thread runtimes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Accepts on `listener` until `shutdown`, handing each connection and
/// its peer to `serve` on a task of its own. `endpoint` names it in logs.
pub async fn each_connection<F, Fut>(
    listener: TcpListener,
    shutdown: CancellationToken,
    endpoint: &'static str,
    mut serve: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    warn!(%error, endpoint, "accept failed");
                    continue;
                }
            },
        };
        tokio::spawn(serve(stream, peer));
    }
}

/// Serves HTTP/1.1 requests on `io` with `handle` until the connection
/// ends (logged at `debug` when it ends in an error).
pub async fn http1<I, F, Fut, B>(io: I, peer: SocketAddr, endpoint: &'static str, handle: F)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn(http::Request<Incoming>) -> Fut + Send + 'static,
    Fut: Future<Output = http::Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = hyper::service::service_fn(move |request| {
        let answer = handle(request);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .await;
    if let Err(error) = served {
        debug!(%peer, %error, endpoint, "connection ended");
    }
}
