//! Outbound WebSockets: `fetch(url, { headers: { Upgrade: 'websocket' } })`
//! and `new WebSocket(url)` (js/26_websocket.js builds the second on the
//! first, as workerd does) send their handshake here.
//!
//! It takes `fetch`'s own path (the core's `host/outbound.rs`, `api::fetch`): one of the request's
//! subrequests, the Worker's `egress.allowedHosts`, IP literals checked
//! against the egress policy and every resolved name through the policy's
//! resolver, rustls — on the thread's HTTP/1.1-only variant of the same
//! client (`isolane_egress::Versions::Http1`), since a connection that upgrades
//! cannot be an HTTP/2 one. A handshake is one hop: a redirect is answered
//! as it is. The `101` (its `Sec-WebSocket-Accept` checked) is taken with
//! `hyper::upgrade::on`, and the socket is an [`Entry`](super::Entry) like
//! an accepted one — the same queues, memory charge, idle timeout and count
//! of the Worker's sockets (its place is taken before connecting) — whose
//! far end is the engine's own client (`websocket/client.rs`).

use std::rc::{Rc, Weak};

use http::{HeaderName, HeaderValue, header};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use isolane_engine::Body;
use isolane_engine::api::fetch::{
    FetchHead, HOPS_HEADER, check_hop, connection_headers, send_upgrade,
};
use isolane_engine::api::headers::header_map;
use isolane_engine::api::net::{Refused, Slot};
use isolane_engine::api::service::CallOutbound;
use isolane_engine::api::{
    HostError, HostState, IsolateTurns, Settlement, Unit, begin_op, too_many,
};

use super::{open_entry, sockets};

/// Headers of the handshake the engine writes itself (RFC 6455 §4.1),
/// whatever the Worker put in its request. Extensions are not offered
/// (no permessage-deflate).
const HANDSHAKE_HEADERS: [HeaderName; 4] = [
    header::SEC_WEBSOCKET_KEY,
    header::SEC_WEBSOCKET_VERSION,
    header::SEC_WEBSOCKET_ACCEPT,
    header::SEC_WEBSOCKET_EXTENSIONS,
];

/// Outbound WebSockets: `new WebSocket(url)` and `fetch` with `Upgrade:
/// websocket` (their JavaScript is the WebSocket unit's, `websocket.rs`).
pub(crate) fn unit() -> Unit {
    Unit::new("websocket_connect").function("webSocketConnect", web_socket_connect)
}

host_fn! {
/// `webSocketConnect(url, headers)` → Promise of a fetch's answer, with
/// `webSocket` the id of the new socket when the server answered `101`.
fn web_socket_connect<'s>(
    scope,
    host: Rc<HostState>,
    url: String,
    headers: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let handshake = header_map(scope, headers)
        .and_then(|headers| prepare(&host, ctx, &url, headers))
        .map_err(HostError::type_error);
    let (resolver, promise, (request, key, slot)) = match begin_op(scope, handshake)? {
        Ok(begun) => begun,
        Err(promise) => return Some(promise),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let settlement = connect(&me, ctx, request, key, slot).await;
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, settlement);
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// The handshake request for `url`, checked and counted: a subrequest
/// taken, the hop's egress checks passed, a place among the Worker's
/// sockets held.
fn prepare(
    host: &HostState,
    ctx: u32,
    url: &str,
    mut headers: http::HeaderMap,
) -> Result<(http::Request<Body>, String, Slot), String> {
    let mut url = url::Url::parse(url).map_err(|_| format!("invalid URL {url:?}"))?;
    let scheme = match url.scheme() {
        "ws" | "http" => "http",
        "wss" | "https" => "https",
        other => return Err(format!("WebSocket: unsupported URL scheme {other:?}")),
    };
    // Between special schemes this cannot fail.
    let _ = url.set_scheme(scheme);
    url.set_fragment(None);
    let uri: http::Uri = url
        .as_str()
        .parse()
        .map_err(|_| format!("invalid URL {:?}", url.as_str()))?;
    if !host.request_live(ctx) {
        // The Worker's global scope, or a request that has ended.
        return Err("WebSocket: a socket can only be opened while handling a request".to_owned());
    }
    no_outbound(host, ctx, &url)?;
    let limit = host.worker().map_or(0, |w| w.limits.subrequests);
    host.take_subrequest(ctx, limit).map_err(too_many)?;
    check_hop(host, &url)?;
    let slot = match host.socket_slot() {
        Ok(slot) => slot,
        Err(Refused::Worker { limit } | Refused::Client { limit }) => {
            return Err(format!(
                "WebSocket refused: this Worker already has {limit} WebSockets open (its limit per engine thread)"
            ));
        }
    };
    connection_headers(&mut headers, &http::Method::GET, None);
    for name in HANDSHAKE_HEADERS {
        headers.remove(name);
    }
    let key = generate_key();
    let value = HeaderValue::from_str(&key).map_err(|_| "WebSocket: invalid key".to_owned())?;
    headers.insert(header::SEC_WEBSOCKET_KEY, value);
    headers.insert(
        header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        HeaderName::from_static(HOPS_HEADER),
        HeaderValue::from(host.outbound_hops(ctx)),
    );
    let mut request = http::Request::new(Body::empty());
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Ok((request, key, slot))
}

/// Sends the handshake and settles the Worker's promise: a socket on `101`,
/// the response as it is otherwise.
async fn connect(
    me: &Weak<dyn IsolateTurns>,
    ctx: u32,
    request: http::Request<Body>,
    key: String,
    slot: Slot,
) -> Settlement {
    let url = request.uri().to_string();
    let Some(sent) = me
        .upgrade()
        .map(|isolate| send_upgrade(isolate.host(), request))
    else {
        return Settlement::Undefined;
    };
    let mut response = match sent.await {
        Ok(response) => response,
        Err(message) => return Settlement::TypeError(message),
    };
    if response.status() != http::StatusCode::SWITCHING_PROTOCOLS {
        let Some(isolate) = me.upgrade() else {
            return Settlement::Undefined;
        };
        let head = FetchHead::new(isolate.host(), ctx, response.map(Body::wrap), url);
        return Settlement::Fetch(head);
    }
    if let Err(message) = check_accept(response.headers(), &key) {
        return Settlement::TypeError(message);
    }
    let upgraded = match hyper::upgrade::on(&mut response).await {
        Ok(upgraded) => upgraded,
        Err(error) => return Settlement::TypeError(format!("WebSocket failed: {error}")),
    };
    let Some(isolate) = me.upgrade() else {
        return Settlement::Undefined;
    };
    let host = isolate.host();
    let Ok(sockets) = sockets(host) else {
        return Settlement::TypeError("WebSockets are not available".to_owned());
    };
    if !host.request_live(ctx) {
        return Settlement::Undefined;
    }
    let (id, end) = open_entry(host, sockets, ctx, slot);
    let tally = host.observer().outbound_socket_opened(host.thread_index());
    tokio::task::spawn_local(super::client::run(TokioIo::new(upgraded), end, tally));
    let mut head = FetchHead::new(host, ctx, response.map(|_| Body::empty()), url);
    head.web_socket = id;
    Settlement::Fetch(head)
}

/// The server's `101` must prove it read this handshake (RFC 6455 §4.1):
/// `Upgrade: websocket` and the accept value of our key.
fn check_accept(headers: &http::HeaderMap, key: &str) -> Result<(), String> {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !upgrade {
        return Err(
            "WebSocket failed: the server's 101 does not say Upgrade: websocket".to_owned(),
        );
    }
    let expected = derive_accept_key(key.as_bytes());
    match headers.get(header::SEC_WEBSOCKET_ACCEPT) {
        Some(accept) if accept.as_bytes() == expected.as_bytes() => Ok(()),
        _ => Err(
            "WebSocket failed: the server's Sec-WebSocket-Accept does not match the key".to_owned(),
        ),
    }
}

/// Refused in a request given an outbound Worker (a dispatched call's),
/// which takes its `fetch()` calls only.
fn no_outbound(host: &HostState, ctx: u32, url: &url::Url) -> Result<(), String> {
    match host.call_outbound(ctx) {
        Some(_) => Err(CallOutbound::refusal(
            "WebSocket",
            url.host_str().unwrap_or(""),
        )),
        None => Ok(()),
    }
}
