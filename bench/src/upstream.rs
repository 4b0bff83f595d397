//! A local upstream for the I/O-bound scenario: `GET /<ms>` answers after
//! that many milliseconds (at most 1 s). It runs on its own OS thread with a
//! current-thread runtime; it only sleeps, so it costs little CPU.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// Starts the upstream on a free port of 127.0.0.1 and returns its address.
/// The thread lives until the process exits.
pub fn start() -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the upstream")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new()
        .name("bench-upstream".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("upstream: {error}");
                    return;
                }
            };
            runtime.block_on(serve(listener));
        })?;
    Ok(addr)
}

async fn serve(listener: std::net::TcpListener) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                let ms: u64 = request
                    .uri()
                    .path()
                    .trim_start_matches('/')
                    .parse()
                    .unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms.min(1000))).await;
                Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
