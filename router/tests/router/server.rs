//! The HTTP server on a real socket: HTTP/1.1 and cleartext HTTP/2 on one
//! port, served by per-core router worker threads.

use std::num::NonZeroUsize;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use isolane_router::ProxyConfig;
use isolane_router::server::{self, RouterWorkers};
use tokio_util::sync::CancellationToken;

use crate::fake_node::FakeNode;
use crate::support::{proxy, worker};

/// What a client says about itself, forged.
const FORGED: [(&str, &str); 4] = [
    ("cf-connecting-ip", "10.1.1.1"),
    ("true-client-ip", "10.2.2.2"),
    ("x-real-ip", "10.3.3.3"),
    ("x-request-id", "forged-id-1"),
];

const HOST: &str = "app.example.test";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_http1_and_h2c_on_one_port_from_router_workers() {
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    // Routed by IP too: HTTP/1.1 sends it as Host, HTTP/2 as :authority.
    let mut app = worker("ns/app", "r7", HOST, "/");
    app.claim
        .routes
        .push(isolane_worker::Route::new("127.0.0.1", "/"));
    proxy.set_workers(vec![app]);

    let listener = server::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let workers = RouterWorkers::spawn(
        listener,
        NonZeroUsize::new(2).unwrap(),
        proxy,
        shutdown.clone(),
        Duration::from_secs(5),
    )
    .unwrap();

    let http1: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let http2: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    for (client, version) in [
        (&http1, http::Version::HTTP_11),
        (&http2, http::Version::HTTP_2),
    ] {
        for _ in 0..3 {
            let request = Request::builder()
                .method("POST")
                .uri(format!("http://{addr}/echo"))
                .body(Full::new(Bytes::from_static(b"ping")))
                .unwrap();
            let response = client.request(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(response.version(), version);
            assert_eq!(response.headers()["x-isolane-node"], "node-a");
            assert_eq!(response.headers()["x-isolane-revision"], "r7");
            assert_eq!(response.headers()["x-echo-worker"], "ns/app");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "ping");
        }
    }
    // The node sees the client's address in x-forwarded-for.
    let head = &node.heads()[0];
    let forwarded = head
        .headers
        .iter()
        .find(|h| h.name == "x-forwarded-for")
        .map(|h| h.value.clone());
    assert_eq!(forwarded.as_deref(), Some(b"127.0.0.1".as_slice()));

    drop((http1, http2));
    shutdown.cancel();
    tokio::task::spawn_blocking(move || workers.join())
        .await
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "closed after shutdown"
    );
}

/// Sends `FORGED` over HTTP/1.1 and over h2c to a router on a real socket
/// that trusts `trusted`; returns, per request, the response's
/// `x-request-id` and the headers the Worker saw (the node's request head).
async fn forged_requests(trusted: Vec<ipnet::IpNet>) -> Vec<(String, Vec<(String, String)>)> {
    let node = FakeNode::start("node-a").await;
    let metrics = std::sync::Arc::new(
        isolane_router::RouterMetrics::register(&prometheus::Registry::new(), 50).unwrap(),
    );
    let proxy = isolane_router::Proxy::builder(ProxyConfig::default(), metrics)
        .trusted_proxies(trusted)
        .build();
    proxy.set_members(vec![node.member(1)]);
    // HTTP/2 routes by :authority, the address.
    proxy.set_workers(vec![worker("ns/app", "r1", "127.0.0.1", "/")]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(server::serve(
        listener,
        proxy,
        shutdown.clone(),
        Duration::from_secs(5),
    ));
    let http1: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let http2: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let mut ids = Vec::new();
    for client in [&http1, &http2] {
        let mut request = Request::builder().uri(format!("http://{addr}/"));
        for (name, value) in FORGED {
            request = request.header(name, value);
        }
        let response = client
            .request(request.body(Full::new(Bytes::new())).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        ids.push(
            response.headers()["x-request-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    drop((http1, http2));
    shutdown.cancel();
    served.await.unwrap();
    let heads = node.heads();
    assert_eq!(heads.len(), 2);
    ids.into_iter()
        .zip(heads)
        .map(|(id, head)| {
            let seen = head
                .headers
                .iter()
                .filter(|h| FORGED.iter().any(|(name, _)| h.name == *name))
                .map(|h| (h.name.clone(), String::from_utf8(h.value.to_vec()).unwrap()))
                .collect();
            (id, seen)
        })
        .collect()
}

#[tokio::test]
async fn an_untrusted_client_cannot_forge_its_address_or_request_id() {
    for (id, mut seen) in forged_requests(Vec::new()).await {
        assert_ne!(id, "forged-id-1");
        seen.sort();
        let mut expected: Vec<(String, String)> = [
            ("x-request-id", id.as_str()),
            ("cf-connecting-ip", "127.0.0.1"),
            ("true-client-ip", "127.0.0.1"),
            ("x-real-ip", "127.0.0.1"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        expected.sort();
        assert_eq!(seen, expected);
    }
}

#[tokio::test]
async fn a_trusted_proxy_s_client_address_and_request_id_are_kept() {
    for (id, mut seen) in forged_requests(vec!["127.0.0.0/8".parse().unwrap()]).await {
        assert_eq!(id, "forged-id-1");
        seen.sort();
        let mut expected: Vec<(String, String)> = FORGED
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(seen, expected);
    }
}

/// Sends one keep-alive GET on `stream` and reads its answer's head and
/// body (`content-length` framed); `None` when the connection closed first.
async fn keep_alive_get(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = format!("GET /echo HTTP/1.1\r\nHost: {HOST}\r\ncontent-length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_ascii_lowercase();
            if head.contains("transfer-encoding: chunked") {
                if text.ends_with("0\r\n\r\n") && text.len() > end + 4 {
                    return Some(text);
                }
                let n = stream.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                got.extend_from_slice(&buf[..n]);
                continue;
            }
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return Some(text);
            }
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// A shutdown does not close an idle HTTP/1.1 keep-alive connection under
/// its client's next request (which would fail mid-flight): the next
/// request on it is answered, with `connection: close`, and then the
/// connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_answers_a_keep_alive_connection_s_next_request_with_close() {
    use tokio::io::AsyncReadExt as _;
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/app", "r7", HOST, "/")]);
    let listener = server::bind("127.0.0.1:0".parse().expect("an address")).expect("bound");
    let addr = listener.local_addr().expect("its address");
    let shutdown = CancellationToken::new();
    let workers = RouterWorkers::spawn(
        listener,
        NonZeroUsize::new(1).expect("one"),
        proxy,
        shutdown.clone(),
        Duration::from_secs(5),
    )
    .expect("router workers");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connected");
    let first = keep_alive_get(&mut stream).await.expect("the first answer");
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(
        !first.to_ascii_lowercase().contains("connection: close"),
        "{first}"
    );

    // The connection is idle when the shutdown starts; its next request
    // comes a moment later, as a client's would.
    shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = keep_alive_get(&mut stream)
        .await
        .expect("the next request on the idle connection is answered");
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert!(
        second.to_ascii_lowercase().contains("connection: close"),
        "{second}"
    );
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0))), "closed after it: {closed:?}");
    tokio::task::spawn_blocking(move || workers.join())
        .await
        .expect("joined");
}
