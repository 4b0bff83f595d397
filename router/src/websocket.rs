//! WebSockets from clients at the edge: an HTTP/1.1 `Upgrade: websocket`
//! request goes to its Worker like any other (with its `Upgrade` header
//! kept, so the Worker can tell); when the Worker answers `101` with a
//! socket ([`isolane_proto::socket::Upgrade`] on the answer), the client's
//! connection is upgraded and [`pump`] moves whole messages between its
//! frames (tokio-tungstenite) and the Worker's channels.
//!
//! An HTTP/2 extended CONNECT (RFC 8441: `:method CONNECT`, `:protocol
//! websocket`) takes the same path: the Worker sees a `GET` with
//! `Upgrade: websocket`, as from HTTP/1.1 (with a `Sec-WebSocket-Key` made
//! here, as RFC 8441 drops it), and answers `101`; the client gets `200`
//! and the frames travel on that HTTP/2 stream.
//!
//! What is kept: text and binary messages, close codes and reasons both
//! ways; pings are answered by the WebSocket layer. What is bounded: a
//! client's message over the Worker's cap closes with 1009 (checked while
//! reading frames, before the message is whole); while the Worker's queue is
//! full the client is not read (back-pressure); a client that does not read
//! stalls only its own writes, for at most the write timeout, and its
//! Worker drops the socket (1011) rather than buffer more.
//!
//! The socket comes the same way from a node in this process and from one
//! over gRPC (`proxy/socket.rs` turns the `Execute` call's frames into the
//! same channels). When the router shuts down ([`crate::sockets::Sockets::close_all`]),
//! open sockets work on for its WebSocket grace, then every one still open
//! gets a close with 1012 (service restart), both ways.

use bytes::Bytes;
use http::header::{
    CONNECTION, CONTENT_LENGTH, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION,
    UPGRADE,
};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::Body;
use hyper_util::rt::TokioIo;
use isolane_edge::websocket::{self, Ends, Role, Side, Whole};
use isolane_proto::socket::{SocketChannels, SocketMessage, Upgrade};
use tokio_tungstenite::tungstenite;
use tokio_util::sync::CancellationToken;

use tracing::debug;

use crate::answer::full_body;
use crate::metrics::SocketSeries;
use crate::proxy::{Client, Proxy};
use crate::sockets::ClientUpgrade;
use crate::{BoxError, ResponseBody};

/// Whether `request` asks for a WebSocket: an HTTP/1.1 upgrade or an
/// HTTP/2 extended CONNECT.
pub fn is_upgrade<B>(request: &Request<B>) -> bool {
    is_http1_upgrade(request) || is_extended_connect(request)
}

/// An HTTP/2 extended CONNECT for a WebSocket (RFC 8441 §4).
fn is_extended_connect<B>(request: &Request<B>) -> bool {
    request.method() == http::Method::CONNECT
        && request
            .extensions()
            .get::<hyper::ext::Protocol>()
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
}

/// An HTTP/1.1 upgrade to a WebSocket (RFC 6455 §4.1).
fn is_http1_upgrade<B>(request: &Request<B>) -> bool {
    let headers = request.headers();
    let has_token = |name, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    // The key first: one lookup turns away every other request.
    request.method() == http::Method::GET
        && request.version() == http::Version::HTTP_11
        && headers.contains_key(SEC_WEBSOCKET_KEY)
        && has_token(UPGRADE, "websocket")
        && has_token(CONNECTION, "upgrade")
}

/// Serves `request` through `proxy`, upgrading the connection when it asks
/// for a WebSocket and its Worker answers with one.
pub async fn handle<B>(
    proxy: &Proxy,
    mut request: Request<B>,
    client: &Client,
) -> Response<ResponseBody>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    let Some(handshake) = Handshake::of(&mut request) else {
        return proxy.handle_from(request, Some(client)).await;
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    // An HTTP/2 stream keeps its connection busy while the socket lives.
    let tunnel = request.extensions_mut().remove::<isolane_edge::Tunnel>();
    request.extensions_mut().insert(ClientUpgrade);
    let mut response = proxy.handle_from(request, Some(client)).await;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return response;
    }
    let channels = response
        .extensions()
        .get::<Upgrade>()
        .and_then(Upgrade::take);
    let series = response.extensions_mut().remove::<SocketSeries>();
    let Some(channels) = channels else {
        debug!("a 101 answer without a socket");
        let mut refused = Response::new(full_body(Bytes::from_static(
            b"The Worker's WebSocket cannot be reached from this front end.\n",
        )));
        *refused.status_mut() = StatusCode::BAD_GATEWAY;
        return refused;
    };
    let response = handshake.accept(response);
    let sockets = proxy.sockets();
    let closing = sockets.closing.clone();
    sockets.tasks.spawn(async move {
        let _tunnel = tunnel;
        match on_upgrade.await {
            Ok(upgraded) => {
                if let Some(series) = &series {
                    series.opened();
                }
                pump(TokioIo::new(upgraded), channels, closing, series.as_ref()).await;
                if let Some(series) = &series {
                    series.open.dec();
                    series.ended();
                }
            }
            Err(error) => debug!(%error, "the client's upgrade failed"),
        }
    });
    response
}

/// How the client asked for its WebSocket.
enum Handshake {
    /// HTTP/1.1 `Upgrade`, with the key its `101` answers.
    Http1 { key: HeaderValue },
    /// HTTP/2 extended CONNECT (RFC 8441).
    ExtendedConnect,
}

// === impl Handshake ===

impl Handshake {
    /// How `request` asks for a WebSocket, if it does. An extended CONNECT
    /// becomes what the Worker sees from HTTP/1.1: a GET asking for an
    /// upgrade (the proxy adds `Upgrade` and `Connection`), with a key and
    /// version of its own, as proxies that translate one into the other do.
    fn of<B>(request: &mut Request<B>) -> Option<Self> {
        if is_http1_upgrade(request) {
            let key = request.headers().get(SEC_WEBSOCKET_KEY)?.clone();
            return Some(Handshake::Http1 { key });
        }
        if !is_extended_connect(request) {
            return None;
        }
        *request.method_mut() = http::Method::GET;
        request.extensions_mut().remove::<hyper::ext::Protocol>();
        let key = tungstenite::handshake::client::generate_key();
        let headers = request.headers_mut();
        if let Ok(key) = HeaderValue::from_str(&key) {
            headers.insert(SEC_WEBSOCKET_KEY, key);
        }
        headers
            .entry(SEC_WEBSOCKET_VERSION)
            .or_insert(HeaderValue::from_static("13"));
        Some(Handshake::ExtendedConnect)
    }

    /// The Worker's `101` as the client's answer: a `101` with the
    /// upgrade's headers on HTTP/1.1, a `200` with no body on HTTP/2 (the
    /// stream goes on as the socket).
    fn accept(self, mut response: Response<ResponseBody>) -> Response<ResponseBody> {
        let headers = response.headers_mut();
        match self {
            Handshake::Http1 { key } => {
                headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
                headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
                let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
                if let Ok(accept) = HeaderValue::from_str(&accept) {
                    headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
                }
                response
            }
            Handshake::ExtendedConnect => {
                for name in [UPGRADE, CONNECTION, SEC_WEBSOCKET_ACCEPT, CONTENT_LENGTH] {
                    headers.remove(name);
                }
                *response.status_mut() = StatusCode::OK;
                *response.body_mut() = full_body(Bytes::new());
                response
            }
        }
    }
}

/// Moves messages between the client's connection `io` and the Worker's
/// `channels` until either side closes, or `closing` (the router shuts
/// down: 1012 both ways), counting them in `series`: the edge's one frame
/// loop ([`isolane_edge::websocket::pump`]) as the socket's server.
pub async fn pump<S>(
    io: S,
    channels: SocketChannels,
    closing: CancellationToken,
    series: Option<&SocketSeries>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let SocketChannels {
        to_worker,
        from_worker,
        max_message_bytes,
        write_timeout,
    } = channels;
    let ends = Ends {
        to_local: to_worker,
        from_local: from_worker,
        max_message_bytes,
        write_timeout,
    };
    websocket::pump(io, Role::Server, ends, Some(&closing), &ClientSide(series)).await;
}

/// A client's socket as the frame loop sees it: the call's messages,
/// counted in the Worker's series.
struct ClientSide<'a>(Option<&'a SocketSeries>);

impl Side for ClientSide<'_> {
    type Message = SocketMessage;

    fn to_whole(message: SocketMessage) -> Whole {
        match message {
            SocketMessage::Text(text) => Whole::Text(text),
            SocketMessage::Binary(bytes) => Whole::Binary(bytes),
            SocketMessage::Close(frame) => Whole::Close(frame),
        }
    }

    fn from_whole(whole: Whole) -> SocketMessage {
        match whole {
            Whole::Text(text) => SocketMessage::Text(text),
            Whole::Binary(bytes) => SocketMessage::Binary(bytes),
            Whole::Close(frame) => SocketMessage::Close(frame),
        }
    }

    fn inbound(&self, message: &SocketMessage) {
        if let Some(series) = self.0 {
            series.to_worker(message);
        }
    }

    fn outbound(&self, message: &SocketMessage) {
        if let Some(series) = self.0 {
            series.to_client(message);
        }
    }

    fn closed(&self, code: u16) {
        if let Some(series) = self.0 {
            series.closed(code);
        }
    }
}
