//! An HTTP/1.1 server of the test on loopback, for Workers to report to
//! (the nodes allow loopback egress for it: `--egress-allow 127.0.0.1/32`):
//! what the Workers did, seen by the test itself.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// Serves each request with `handle` on a port of 127.0.0.1 until the test
/// ends; the address.
///
/// # Panics
/// When no loopback port can be bound.
pub async fn serve<H, F>(handle: H) -> SocketAddr
where
    H: Fn(http::Request<hyper::body::Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = http::Response<Full<Bytes>>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback server");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let answer = handle(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A 200 with `body`.
pub fn ok(body: &'static str) -> http::Response<Full<Bytes>> {
    http::Response::new(Full::new(Bytes::from_static(body.as_bytes())))
}
