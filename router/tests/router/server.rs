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
