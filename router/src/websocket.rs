//! WebSockets from clients at the edge: an HTTP/1.1 `Upgrade: websocket`
//! request goes to its Worker like any other (with its `Upgrade` header
//! kept, so the Worker can tell); when the Worker answers `101` with a
//! socket ([`isolane_proto::socket::Upgrade`] on the answer), the client's
//! connection is upgraded and [`pump`] moves whole messages between its
//! frames (tokio-tungstenite) and the Worker's channels.
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
//! every open socket gets a close with 1012 (service restart), both ways.
//!
//! Not here yet: HTTP/2 extended CONNECT (RFC 8441).

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::Body;
use hyper_util::rt::TokioIo;
use isolane_proto::socket::{
    SERVICE_RESTART, SocketChannels, SocketMessage, Upgrade, restart_frame,
};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use tracing::debug;

use crate::answer::full_body;
use crate::metrics::SocketSeries;
use crate::proxy::{Client, Proxy};
use crate::sockets::ClientUpgrade;
use crate::{BoxError, ResponseBody};

/// The chunk the client's connection is read in.
const READ_BUFFER: usize = 4 << 10;

/// Whether `request` asks for a WebSocket (RFC 6455 §4.1, HTTP/1.1).
pub fn is_upgrade<B>(request: &Request<B>) -> bool {
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
    if !is_upgrade(&request) {
        return proxy.handle_from(request, Some(client)).await;
    }
    let key = request.headers().get(SEC_WEBSOCKET_KEY).cloned();
    let on_upgrade = hyper::upgrade::on(&mut request);
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
    let (Some(channels), Some(key)) = (channels, key) else {
        debug!("a 101 answer without a socket");
        let mut refused = Response::new(full_body(Bytes::from_static(
            b"The Worker's WebSocket cannot be reached from this front end.\n",
        )));
        *refused.status_mut() = StatusCode::BAD_GATEWAY;
        return refused;
    };
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    let sockets = proxy.sockets();
    let closing = sockets.closing.clone();
    sockets.tasks.spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                if let Some(series) = &series {
                    series.open.inc();
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

/// Moves messages between the client's connection `io` and the Worker's
/// `channels` until either side closes, or `closing` (the router shuts
/// down: 1012 both ways), counting them in `series`.
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
        mut from_worker,
        max_message_bytes,
        write_timeout,
    } = channels;
    // Small buffers: an idle socket holds them for its life (tungstenite's
    // defaults are 128 KiB each way); a message is written and flushed
    // before the next is taken, so the write buffer holds at most one.
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(max_message_bytes.saturating_mul(2).max(READ_BUFFER))
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes));
    let mut ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
    let mut reading = true;
    loop {
        tokio::select! {
            () = closing.cancelled() => {
                if let Some(series) = series {
                    series.closed(SERVICE_RESTART);
                }
                let _ = to_worker.try_send(SocketMessage::restart());
                let _ = send(&mut ws, close_message(Some(restart_frame())), write_timeout).await;
                return;
            }
            message = ws.next(), if reading && to_worker.capacity() > 0 => {
                match inbound(message) {
                    Inbound::Message(message) => {
                        let close = matches!(message, SocketMessage::Close(_));
                        if let Some(series) = series {
                            series.to_worker(&message);
                        }
                        // Room was checked: this sender is the only one.
                        if to_worker.try_send(message).is_err() {
                            reading = false;
                        }
                        if close {
                            // tungstenite queued the reply, with the
                            // client's code: send it, and the handshake is
                            // done.
                            let _ = tokio::time::timeout(write_timeout, ws.flush()).await;
                            return;
                        }
                    }
                    Inbound::Skip => {}
                    Inbound::TooBig => {
                        let frame = (u16::from(CloseCode::Size), "message too big".to_owned());
                        if let Some(series) = series {
                            series.closed(frame.0);
                        }
                        let _ = to_worker.try_send(SocketMessage::Close(Some(frame.clone())));
                        let _ = send(&mut ws, close_message(Some(frame)), write_timeout).await;
                        return;
                    }
                    Inbound::Gone => return,
                }
            }
            // The Worker's queue was full: wait for room, then read again.
            permit = to_worker.reserve(), if reading && to_worker.capacity() == 0 => {
                if permit.is_err() {
                    reading = false;
                }
            }
            message = from_worker.recv() => {
                let Some(message) = message else {
                    // Dropped by the Worker (a limit, or this client did
                    // not read): 1011.
                    let frame = (u16::from(CloseCode::Error), "the Worker dropped the socket".to_owned());
                    if let Some(series) = series {
                        series.closed(frame.0);
                    }
                    let _ = send(&mut ws, close_message(Some(frame)), write_timeout).await;
                    return;
                };
                let closed = matches!(message, SocketMessage::Close(_));
                if let Some(series) = series {
                    series.to_client(&message);
                }
                let message = match message {
                    SocketMessage::Text(text) => Message::text(text),
                    SocketMessage::Binary(bytes) => Message::binary(bytes),
                    SocketMessage::Close(frame) => close_message(frame),
                };
                if !send(&mut ws, message, write_timeout).await {
                    return;
                }
                if closed && !reading {
                    return;
                }
            }
        }
    }
}

enum Inbound {
    Message(SocketMessage),
    Skip,
    TooBig,
    Gone,
}

fn inbound(message: Option<Result<Message, tungstenite::Error>>) -> Inbound {
    match message {
        Some(Ok(Message::Text(text))) => Inbound::Message(SocketMessage::Text(text.to_string())),
        Some(Ok(Message::Binary(bytes))) => Inbound::Message(SocketMessage::Binary(bytes)),
        Some(Ok(Message::Close(frame))) => Inbound::Message(SocketMessage::Close(
            frame.map(|f| (u16::from(f.code), f.reason.to_string())),
        )),
        // Pings are answered by tungstenite itself.
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Inbound::Skip,
        Some(Err(tungstenite::Error::Capacity(_))) => Inbound::TooBig,
        Some(Err(error)) => {
            debug!(%error, "the client's WebSocket failed");
            Inbound::Gone
        }
        None => Inbound::Gone,
    }
}

fn close_message(frame: Option<(u16, String)>) -> Message {
    Message::Close(frame.map(|(code, reason)| CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    }))
}

/// Writes one message; false when the client is gone or did not take it
/// within `timeout` (it does not read: it is not waited for).
async fn send<S>(ws: &mut WebSocketStream<S>, message: Message, timeout: Duration) -> bool
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    matches!(
        tokio::time::timeout(timeout, ws.send(message)).await,
        Ok(Ok(()))
    )
}
