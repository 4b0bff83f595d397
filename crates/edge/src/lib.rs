//! The hardening every HTTP front end shares (the router's ingress, the
//! operator's admission webhook, the admin servers): a client must send its
//! first bytes, and then each request head, within a deadline; an HTTP/2
//! connection whose peer stops answering pings is closed; and a connection
//! with no request in flight for the idle timeout is closed gracefully, pings
//! answered or not. A silent connection is never held open. [`serve`] is the one accept loop that applies it, to
//! cleartext connections ([`Plain`]) or wrapped ones ([`Wrapped`], TLS).

mod accept;
mod idle;
mod primed;
mod steer;
pub mod websocket;

use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;

pub use accept::{Edge, Handshake, Plain, Wrapped, accept, current_runtime, serve};
pub use idle::Tunnel;
pub use primed::Primed;
pub use steer::{Steer, Steered};

/// How long a client may take to send its first bytes, and then each request
/// head (HTTP/1; an idle keep-alive connection included).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP/2 keep-alive: a ping this often on an idle connection, and the
/// connection is closed if one is not answered within as long.
pub const H2_KEEP_ALIVE: Duration = Duration::from_secs(20);

/// How long a connection, HTTP/1 or HTTP/2, may have no request in flight
/// before it is closed gracefully (as long as an idle HTTP/1 keep-alive
/// connection gets to send its next request head).
pub const IDLE_TIMEOUT: Duration = HEADER_READ_TIMEOUT;

/// An HTTP/1.1 + h2c server builder with the header-read timeout and
/// HTTP/2 ping interval given ([`HEADER_READ_TIMEOUT`] and
/// [`H2_KEEP_ALIVE`], or shorter for tests); a ping is answered within
/// [`H2_KEEP_ALIVE`] or the connection is closed.
pub fn server_builder(
    header_read_timeout: Duration,
    ping_interval: Duration,
) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A timer makes hyper enforce the HTTP/1 header-read timeout and lets
    // HTTP/2 keep-alive pings run.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(ping_interval))
        .keep_alive_timeout(H2_KEEP_ALIVE);
    builder
}

/// Waits for a new connection's first byte, at most `timeout`: `false` when
/// the client sent nothing (or went away), and the connection should be
/// dropped. (hyper's version detection would otherwise wait forever.)
pub async fn first_bytes(stream: &TcpStream, timeout: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(timeout, stream.peek(&mut byte)).await,
        Ok(Ok(n)) if n > 0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server with 300 ms timeouts, through [`serve`] and `handshake`;
    /// returns its address.
    async fn server_with(handshake: impl Handshake) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let edge = Edge::new("test", Duration::from_secs(1))
            .with_header_read_timeout(Duration::from_millis(300));
        tokio::spawn(serve(
            listener,
            edge,
            handshake,
            |_| {
                hyper::service::service_fn(|_| async {
                    Ok::<_, Infallible>(hyper::Response::new(http_body_util::Full::new(
                        bytes::Bytes::from_static(b"ok"),
                    )))
                })
            },
            std::future::pending(),
        ));
        addr
    }

    async fn server() -> std::net::SocketAddr {
        server_with(Plain).await
    }

    /// Reads until the server closes the connection, within a deadline.
    async fn closed_by_server(stream: &mut TcpStream) -> bool {
        let mut buf = [0u8; 1024];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed() {
        let addr = server().await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        assert!(closed_by_server(&mut stream).await);
    }

    /// Whether the server closes a connection that sent `bytes` and then
    /// nothing more.
    async fn closed_after(bytes: &[u8]) -> bool {
        let addr = server().await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        closed_by_server(&mut stream).await
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed() {
        // The answer arrives, then the connection idles and is closed.
        assert!(closed_after(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await);
    }

    #[tokio::test]
    async fn a_half_sent_http2_preface_is_cut() {
        assert!(closed_after(b"PRI * HTTP/2.0\r\n").await);
    }

    #[tokio::test]
    async fn an_h2c_client_is_served() {
        let addr = server().await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        let request = hyper::Request::get("http://x/")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
    }

    /// An h2c client's connection to a server whose idle timeout is
    /// `IDLE` and which pings every `PING`, serving `service`; the
    /// connection's task ends when the server closes it.
    async fn h2c_client<S, F>(
        service: S,
    ) -> (
        hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
        tokio::task::JoinHandle<hyper::Result<()>>,
    )
    where
        S: Fn(hyper::Request<hyper::body::Incoming>) -> F + Clone + Send + Sync + 'static,
        F: std::future::Future<
                Output = Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, Infallible>,
            > + Send
            + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let edge = Edge::new("test", Duration::from_secs(1))
            .with_idle_timeout(IDLE)
            .with_ping_interval(PING);
        tokio::spawn(serve(
            listener,
            edge,
            Plain,
            move |_| hyper::service::service_fn(service.clone()),
            std::future::pending(),
        ));
        let stream = TcpStream::connect(addr).await.unwrap();
        // hyper's client answers the server's pings while its connection
        // task runs, and sends none of its own.
        let (sender, connection) = hyper::client::conn::http2::handshake(
            TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        (sender, tokio::spawn(connection))
    }

    const IDLE: Duration = Duration::from_millis(600);
    const PING: Duration = Duration::from_millis(50);

    async fn ok(
        _: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, Infallible> {
        Ok(hyper::Response::new(http_body_util::Full::new(
            bytes::Bytes::from_static(b"ok"),
        )))
    }

    /// Waits for the server to close `connection`, within a deadline:
    /// whether it closed cleanly (GOAWAY), and after how long.
    async fn closed_within(
        connection: tokio::task::JoinHandle<hyper::Result<()>>,
        deadline: Duration,
    ) -> Option<(bool, Duration)> {
        let start = tokio::time::Instant::now();
        let ended = tokio::time::timeout(deadline, connection).await.ok()?;
        Some((ended.unwrap().is_ok(), start.elapsed()))
    }

    #[tokio::test]
    async fn an_idle_h2c_connection_answering_pings_is_closed() {
        let (_sender, connection) = h2c_client(ok).await;
        // Pinged every 50 ms and answering, it would stay open for ever.
        let (clean, after) = closed_within(connection, Duration::from_secs(10))
            .await
            .expect("an idle h2c connection was held open");
        assert!(clean, "closed without GOAWAY");
        assert!(
            after >= IDLE - PING,
            "closed after {after:?}, before the idle timeout"
        );
    }

    #[tokio::test]
    async fn an_h2c_connection_is_idle_only_once_its_requests_end() {
        let (release, released) = tokio::sync::watch::channel(false);
        let slow = move |request| {
            let mut released = released.clone();
            async move {
                let _ = released.wait_for(|r| *r).await;
                ok(request).await
            }
        };
        let (mut sender, connection) = h2c_client(slow).await;
        let request = hyper::Request::get("http://x/")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let response = tokio::spawn(sender.send_request(request));
        // A request in flight for three idle timeouts: the connection stays.
        tokio::time::sleep(IDLE * 3).await;
        assert!(!connection.is_finished(), "closed with a request in flight");
        release.send_replace(true);
        assert_eq!(response.await.unwrap().unwrap().status(), 200);
        let (clean, after) = closed_within(connection, Duration::from_secs(10))
            .await
            .expect("held open after its request ended");
        assert!(clean, "closed without GOAWAY");
        assert!(after >= IDLE - PING, "closed after {after:?}");
    }

    #[tokio::test]
    async fn a_half_sent_head_is_cut() {
        assert!(closed_after(b"GET / HTTP/1.1\r\nhost:").await);
    }

    /// Runtimes each on a thread named `spread-<i>`, kept running until
    /// the token is cancelled, and a server spreading its connections over
    /// them (steered by `steer`, if given) whose answer is the name of the
    /// thread that served it.
    async fn spread_server(
        runtimes: usize,
        steer: Option<Steer>,
    ) -> (
        std::net::SocketAddr,
        tokio_util::sync::CancellationToken,
        Vec<std::thread::JoinHandle<()>>,
    ) {
        let stop = tokio_util::sync::CancellationToken::new();
        let mut handles = Vec::new();
        let mut threads = Vec::new();
        for index in 0..runtimes {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            handles.push(runtime.handle().clone());
            let stop = stop.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("spread-{index}"))
                    .spawn(move || runtime.block_on(stop.cancelled()))
                    .unwrap(),
            );
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut edge = Edge::new("test", Duration::from_secs(1)).spread_over(handles);
        if let Some(steer) = steer {
            edge = edge.steered_by(steer);
        }
        tokio::spawn(serve(
            listener,
            edge,
            Plain,
            |_| {
                hyper::service::service_fn(|_| async {
                    let thread = std::thread::current().name().unwrap_or("?").to_owned();
                    Ok::<_, Infallible>(hyper::Response::new(http_body_util::Full::new(
                        bytes::Bytes::from(thread),
                    )))
                })
            },
            std::future::pending(),
        ));
        (addr, stop, threads)
    }

    /// The thread that served one request for `host` on a new connection.
    async fn served_on(addr: std::net::SocketAddr, host: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!("GET /p HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer.rsplit("\r\n").next().unwrap().to_owned()
    }

    #[tokio::test]
    async fn connections_are_spread_over_runtimes_in_turn() {
        let (addr, stop, threads) = spread_server(2, None).await;
        let mut served = std::collections::BTreeMap::<String, usize>::new();
        for _ in 0..8 {
            *served.entry(served_on(addr, "x").await).or_default() += 1;
        }
        let expected: std::collections::BTreeMap<String, usize> =
            [("spread-0".to_owned(), 4), ("spread-1".to_owned(), 4)].into();
        assert_eq!(served, expected);
        stop.cancel();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    /// A steered connection is served where its first request's host
    /// says; one the steer knows nothing of, in turn.
    #[tokio::test]
    async fn connections_are_steered_by_their_first_request() {
        let steer: Steer = Arc::new(|host: &str, path: &str| {
            assert_eq!(path, "/p");
            match host {
                "one.test" => Some(Steered::to(1)),
                "zero.test" => Some(Steered::to(0)),
                "far.test" => Some(Steered::to(7)),
                _ => None,
            }
        });
        let (addr, stop, threads) = spread_server(2, Some(steer)).await;
        for _ in 0..5 {
            assert_eq!(served_on(addr, "one.test").await, "spread-1");
        }
        for _ in 0..3 {
            assert_eq!(served_on(addr, "zero.test").await, "spread-0");
        }
        let mut served = std::collections::BTreeSet::new();
        for host in ["other.test", "other.test", "far.test", "far.test"] {
            served.insert(served_on(addr, host).await);
        }
        assert_eq!(served.len(), 2, "{served:?}");
        stop.cancel();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    /// What a steer gives a connection to hold is dropped when the
    /// connection ends, not before.
    #[tokio::test]
    async fn a_steered_connection_holds_its_hold_until_it_ends() {
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&dropped);
        let steer: Steer = Arc::new(move |_: &str, _: &str| {
            Some(Steered {
                runtime: 1,
                hold: Some(Box::new(Flag(Arc::clone(&flag)))),
            })
        });
        let (addr, stop, threads) = spread_server(2, Some(steer)).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 512];
        let read = stream.read(&mut answer).await.unwrap();
        assert!(answer[..read].starts_with(b"HTTP/1.1 200"));
        assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
        drop(stream);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !dropped.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "hold kept after the end"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    /// A wrapper that passes the stream through as it is.
    fn unwrapped() -> Wrapped<
        impl Fn(TcpStream) -> std::future::Ready<std::io::Result<TcpStream>> + Send + Sync + 'static,
    > {
        Wrapped(|stream| std::future::ready(Ok(stream)))
    }

    #[tokio::test]
    async fn a_wrapped_connection_is_served() {
        let addr = server_with(unwrapped()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
    }

    #[tokio::test]
    async fn a_silent_wrapped_connection_is_closed() {
        let addr = server_with(unwrapped()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        assert!(closed_by_server(&mut stream).await);
    }
}
