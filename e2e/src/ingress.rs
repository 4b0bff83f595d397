//! Requests through the router, as an HTTP client sends them.
//!
//! An [`Ingress`] is an HTTP/1.1 client (hyper, keep-alive, its own connection
//! pool) aimed at the router's listener; each request names the Worker by its
//! `Host` header and path, as a user's client would. A [`Reply`] keeps what the
//! tests look at: the status, the router's `x-isolane-*` headers (reason, node,
//! revision), the content type and the body.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// How long one request may take before it counts as failed.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A response through the router.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// `x-isolane-reason`: why the router or the node refused or failed it.
    pub reason: Option<String>,
    /// `x-isolane-node`: the node that was chosen.
    pub node: Option<String>,
    /// `x-isolane-revision`: the Worker revision that was asked for.
    pub revision: Option<String>,
    /// `retry-after`.
    pub retry_after: Option<String>,
    /// `content-type`.
    pub content_type: Option<String>,
    /// Every response header.
    pub headers: ::http::HeaderMap,
    /// The body as text.
    pub body: String,
}

impl Reply {
    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The value of the response header `name`, or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

/// An HTTP/1.1 client of the router.
#[derive(Clone, Debug)]
pub struct Ingress {
    router: SocketAddr,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl Ingress {
    /// A client of the router listening on `router`, with its own connections.
    pub fn new(router: SocketAddr) -> Self {
        let client = Client::builder(TokioExecutor::new()).build_http();
        Self { router, client }
    }

    /// `GET path` with `Host: host`; `Err` with a description when the
    /// exchange fails or takes longer than [`REQUEST_TIMEOUT`].
    pub async fn get(&self, host: &str, path: &str) -> Result<Reply, String> {
        self.get_with(host, path, &[]).await
    }

    /// [`Ingress::get`] with more request headers.
    pub async fn get_with(
        &self,
        host: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let mut request = ::http::Request::get(format!("http://{}{path}", self.router))
            .header(::http::header::HOST, host);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Empty::new())
            .map_err(|error| format!("request: {error}"))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|error| format!("send: {error:?}"))?;
            let (head, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|error| format!("body: {error:?}"))?
                .to_bytes();
            let header = |name: &str| {
                head.headers
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned)
            };
            Ok(Reply {
                status: head.status.as_u16(),
                reason: header("x-isolane-reason"),
                node: header("x-isolane-node"),
                revision: header("x-isolane-revision"),
                retry_after: header("retry-after"),
                content_type: header("content-type"),
                body: String::from_utf8_lossy(&body).into_owned(),
                headers: head.headers,
            })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| format!("no answer within {REQUEST_TIMEOUT:?}"))?
    }
}
