//! A WebSocket over HTTP/2 (RFC 8441), as a real client opens one: an
//! extended CONNECT (`:protocol websocket`) on a prior-knowledge h2c
//! connection, answered `200`, then WebSocket frames on that stream
//! (tokio-tungstenite over hyper's upgraded stream).

use std::future::Future as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, Version};
use http_body_util::Empty;
use hyper::client::conn::http2::SendRequest;
use hyper::upgrade::Upgraded;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpSocket;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The socket an extended CONNECT opened.
pub type H2Socket = WebSocketStream<TokioIo<Upgraded>>;

/// How long the server may take to allow extended CONNECT (its SETTINGS).
const SETTINGS_WAIT: Duration = Duration::from_secs(10);

/// Why no socket was opened.
#[derive(Debug, thiserror::Error)]
pub enum H2SocketError {
    #[error("connecting: {0}")]
    Connect(#[from] std::io::Error),
    #[error("HTTP/2: {0}")]
    Http(#[from] hyper::Error),
    #[error("the server did not allow extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL)")]
    NotEnabled,
    #[error("the request: {0}")]
    Request(#[from] http::Error),
    #[error("answered {status}")]
    Refused { status: StatusCode },
}

/// Opens a WebSocket to `http://{authority}{path}` through the h2c server
/// at `addr`, on a connection of its own; `Err(Refused)` carries the
/// status of an answer other than 200.
pub async fn connect(
    addr: SocketAddr,
    authority: &str,
    path: &str,
) -> Result<H2Socket, H2SocketError> {
    let from = if addr.is_ipv4() {
        IpAddr::from(Ipv4Addr::LOCALHOST)
    } else {
        IpAddr::from(Ipv6Addr::LOCALHOST)
    };
    H2Connection::open(addr, from)
        .await?
        .socket(authority, path)
        .await
}

/// One h2c connection, on which any number of WebSockets open as streams
/// (a clone opens them on the same connection).
#[derive(Debug, Clone)]
pub struct H2Connection {
    sender: SendRequest<Empty<Bytes>>,
}

impl H2Connection {
    /// Connects to `addr` from the local address `from` (a client of its
    /// own, by address), once the server allows extended CONNECT.
    pub async fn open(addr: SocketAddr, from: IpAddr) -> Result<Self, H2SocketError> {
        let tcp = if from.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        tcp.bind(SocketAddr::new(from, 0))?;
        let tcp = tcp.connect(addr).await?;
        let (sender, mut connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await?;
        // The server allows extended CONNECT in its first SETTINGS: drive
        // the connection until it has read them.
        let settings = std::future::poll_fn(|cx| {
            if Pin::new(&mut connection).poll(cx).is_ready() {
                return Poll::Ready(false);
            }
            if connection.is_extended_connect_protocol_enabled() {
                Poll::Ready(true)
            } else {
                Poll::Pending
            }
        });
        if !matches!(
            tokio::time::timeout(SETTINGS_WAIT, settings).await,
            Ok(true)
        ) {
            return Err(H2SocketError::NotEnabled);
        }
        tokio::spawn(connection);
        Ok(Self { sender })
    }

    /// Opens a WebSocket to `http://{authority}{path}` as a new stream.
    pub async fn socket(&mut self, authority: &str, path: &str) -> Result<H2Socket, H2SocketError> {
        self.sender.ready().await?;
        let mut request = Request::builder()
            .method(Method::CONNECT)
            .version(Version::HTTP_2)
            .uri(format!("http://{authority}{path}"))
            .header("sec-websocket-version", "13")
            .body(Empty::<Bytes>::new())?;
        request
            .extensions_mut()
            .insert(hyper::ext::Protocol::from_static("websocket"));
        let mut response = self.sender.send_request(request).await?;
        if response.status() != StatusCode::OK {
            return Err(H2SocketError::Refused {
                status: response.status(),
            });
        }
        let upgraded = hyper::upgrade::on(&mut response).await?;
        Ok(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, None).await)
    }
}
