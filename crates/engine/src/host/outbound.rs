//! What every outbound HTTP request of a Worker shares, `fetch()`'s
//! (`isolane-web`'s `fetch.rs`) and the WebSocket client's handshake
//! (`isolane-web`'s `websocket/connect.rs`): the checks of a hop (the Worker's own
//! `egress.allowedHosts`, an IP literal against the egress policy), the
//! connection's own headers, the wait for a response head, the message of a
//! failure, and [`send`], one hop on the thread's HTTP client
//! ([`send_upgrade`] on its HTTP/1.1-only variant, for a handshake).

use std::future::Future;

use http::{HeaderMap, HeaderName, HeaderValue, Method, header};

use super::HostState;
use crate::body::Body;

/// How long one hop may take to answer with its response head: connection,
/// TLS handshake and headers (the body then streams within the request's
/// wall limit).
pub(crate) const HEADERS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends one hop on the thread's HTTP client (the egress policy's
/// resolver and connector): its response head within [`HEADERS_TIMEOUT`],
/// or the `TypeError` message of its failure.
pub fn send(
    host: &HostState,
    request: http::Request<Body>,
) -> impl Future<Output = Result<http::Response<Body>, String>> + 'static {
    let (client, thread) = (host.thread.client.clone(), host.thread.clone());
    let to = request.uri().host().unwrap_or("").to_owned();
    async move {
        match tokio::time::timeout(HEADERS_TIMEOUT, client.request(request)).await {
            Err(_) => Err(format!(
                "fetch failed: no response from {to} within {} s",
                HEADERS_TIMEOUT.as_secs()
            )),
            Ok(Ok(response)) => Ok(response.map(Body::wrap)),
            Ok(Err(error)) => Err(failure(&thread, &error)),
        }
    }
}

/// Sends a WebSocket handshake on the thread's HTTP/1.1-only client (a
/// connection that upgrades cannot be an HTTP/2 one): the response head
/// as it is (its `101` upgraded by the caller) within [`HEADERS_TIMEOUT`],
/// or the `TypeError` message of its failure.
pub fn send_upgrade(
    host: &HostState,
    request: http::Request<Body>,
) -> impl Future<Output = Result<http::Response<hyper::body::Incoming>, String>> + use<> {
    let thread = host.thread.clone();
    let to = request.uri().host().unwrap_or("").to_owned();
    async move {
        let sent = tokio::time::timeout(HEADERS_TIMEOUT, thread.upgrade_client.request(request));
        match sent.await {
            Err(_) => Err(format!(
                "WebSocket failed: no response from {to} within {} s",
                HEADERS_TIMEOUT.as_secs()
            )),
            Ok(Err(error)) => Err(failure(&thread, &error)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// The checks of every hop before it connects: the Worker's own narrowing
/// (`spec.egress.allowedHosts`), and an IP literal against the egress
/// policy (it is connected to without resolving; names are checked by the
/// resolver).
pub fn check_hop(host: &HostState, url: &url::Url) -> Result<(), String> {
    let host_name = url.host_str().unwrap_or("");
    if let Some(worker) = host.worker.get().filter(|w| !w.may_fetch(host_name)) {
        return Err(worker.egress_refusal("fetch", host_name));
    }
    check_literal(&host.thread, url)
}

/// The TypeError message of a request the client could not send: the
/// egress policy's refusal (counted) or the network error.
pub(crate) fn failure(
    thread: &crate::thread_ctx::ThreadCtx,
    error: &hyper_util::client::legacy::Error,
) -> String {
    match isolane_egress::refusal_in(error) {
        Some(refused) => {
            thread.observer.egress_refused(thread.index, refused.reason);
            refused.to_string()
        }
        None => format!("fetch failed: {error}"),
    }
}

/// Headers that describe the connection, not the request: the engine's
/// HTTP client sets them for the connection it makes (`Host` from the target
/// URL, `Content-Length` from the body), whatever a worker copied from the
/// request it got (the Fetch Standard forbids them; workerd drops them too).
const CONNECTION_HEADERS: [HeaderName; 7] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

/// Drops the [`CONNECTION_HEADERS`] and sets `Content-Length`: the body's
/// length (the body is whole), or 0 for a POST or PUT without a body (Fetch
/// Standard, HTTP-network-or-cache fetch).
pub fn connection_headers(headers: &mut HeaderMap, method: &Method, body_len: Option<usize>) {
    for name in CONNECTION_HEADERS {
        headers.remove(name);
    }
    let length = match body_len {
        Some(len) => len,
        None if method == Method::POST || method == Method::PUT => 0,
        None => return,
    };
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
}

/// Refuses a URL whose host is an IP address the egress policy refuses
/// (the WHATWG parser has turned every spelling of it into one address).
fn check_literal(thread: &crate::thread_ctx::ThreadCtx, url: &url::Url) -> Result<(), String> {
    let address = match url.host() {
        Some(url::Host::Ipv4(ip)) => std::net::IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => std::net::IpAddr::V6(ip),
        _ => return Ok(()),
    };
    thread.shared.egress.check(address).map_err(|refused| {
        thread.observer.egress_refused(thread.index, refused.reason);
        refused.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copied() -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("host", "incoming.example"),
            ("content-length", "99"),
            ("connection", "keep-alive"),
            ("keep-alive", "5"),
            ("x-kept", "1"),
        ] {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        headers
    }

    #[test]
    fn the_connection_headers_are_the_clients() {
        let mut headers = copied();
        connection_headers(&mut headers, &Method::POST, Some(3));
        assert_eq!(headers.get(header::HOST), None);
        assert_eq!(headers.get(header::CONNECTION), None);
        assert_eq!(headers.get("keep-alive"), None);
        assert_eq!(headers[header::CONTENT_LENGTH], "3");
        assert_eq!(headers["x-kept"], "1");
    }

    #[test]
    fn a_post_or_put_without_a_body_says_content_length_0() {
        for method in [Method::POST, Method::PUT] {
            let mut headers = copied();
            connection_headers(&mut headers, &method, None);
            assert_eq!(headers[header::CONTENT_LENGTH], "0", "{method}");
        }
        for method in [Method::GET, Method::DELETE] {
            let mut headers = copied();
            connection_headers(&mut headers, &method, None);
            assert_eq!(headers.get(header::CONTENT_LENGTH), None, "{method}");
        }
    }
}
