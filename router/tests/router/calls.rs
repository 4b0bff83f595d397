//! The node's shared `Calls` stream seen from the HTTP application
//! (`Proxy::handle`) in front of a fake node: which requests take it, and
//! that no call on it holds up the others.

use std::time::Duration;

use http::StatusCode;
use isolane_router::ProxyConfig;
use isolane_testenv::wait_until;

use crate::fake_node::FakeNode;
use crate::proxy::release;
use crate::support::{body, get, header, proxy, request, worker};

const HOST: &str = "app.example.test";

/// A proxy in front of one fake node of `threads` threads.
async fn one_node(threads: u32) -> (FakeNode, isolane_router::Proxy) {
    let node = FakeNode::start("only").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(threads)]);
    (node, proxy)
}

/// GETs and a POST whose body the router holds whole (at most 64 KiB)
/// share one `Calls` stream; a longer body opens an `Execute` call.
#[tokio::test]
async fn small_requests_share_one_calls_stream_and_a_longer_body_opens_its_own_call() {
    let (node, proxy) = one_node(2).await;
    proxy.set_workers(vec![worker("demo/hello", "r1", HOST, "/")]);
    for _ in 0..5 {
        let response = proxy.handle(get(HOST, "/", &[])).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(header(&response, "x-echo-method"), Some("GET"));
    }
    assert_eq!(node.streams(), 1, "five GETs on one Calls stream");
    let response = proxy
        .handle(request("POST", HOST, "/", &[], "a body"))
        .await;
    assert_eq!(body(response).await, "a body");
    assert_eq!(node.streams(), 1, "a small body comes with its head");
    let limit = isolane_proto::calls::WHOLE_REQUEST_LIMIT;
    let at_limit = "x".repeat(limit);
    let response = proxy
        .handle(request("POST", HOST, "/", &[], at_limit))
        .await;
    assert_eq!(body(response).await.len(), limit);
    assert_eq!(node.streams(), 1, "64 KiB still comes with its head");
    let longer = "x".repeat(limit + 1);
    let response = proxy.handle(request("POST", HOST, "/", &[], longer)).await;
    assert_eq!(body(response).await.len(), limit + 1);
    assert_eq!(node.streams(), 2, "a longer body opens an Execute call");
    assert_eq!(node.executes(), 8);
}

/// A client's flood of 64 KiB POSTs to one Worker, every one held by the
/// node on the shared `Calls` stream, does not hold up another Worker's
/// request on the same stream: it is answered before, during and after.
#[tokio::test]
async fn a_flood_of_held_small_posts_does_not_hold_up_a_neighbour_on_the_same_stream() {
    let (node, proxy) = one_node(1).await;
    proxy.set_workers(vec![
        worker("demo/hostile", "r1", HOST, "/"),
        worker("demo/quiet", "r1", "quiet.test", "/"),
    ]);
    let ask_quiet = || async {
        let quiet = proxy.handle(get("quiet.test", "/", &[]));
        let response = tokio::time::timeout(Duration::from_secs(10), quiet)
            .await
            .expect("the neighbour is answered within 10 s");
        assert_eq!(response.status(), StatusCode::OK);
    };
    ask_quiet().await;
    const FLOOD: usize = 30;
    let body = "x".repeat(isolane_proto::calls::WHOLE_REQUEST_LIMIT);
    let before = node.executes();
    let pending: Vec<_> = (0..FLOOD)
        .map(|_| {
            let (proxy, body) = (proxy.clone(), body.clone());
            tokio::spawn(async move {
                let held = request("POST", HOST, "/", &[("x-fake", "hold")], body);
                proxy.handle(held).await
            })
        })
        .collect();
    wait_until(
        "the flood held on the node",
        Duration::from_secs(10),
        || async { node.executes() == before + FLOOD },
    )
    .await;
    ask_quiet().await;
    assert_eq!(
        node.streams(),
        1,
        "the flood and the neighbour share the stream"
    );
    release(std::slice::from_ref(&node), pending).await;
    ask_quiet().await;
}

#[tokio::test]
async fn a_download_nobody_reads_does_not_hold_up_the_next_request() {
    let (node, proxy) = one_node(1).await;
    proxy.set_workers(vec![worker("demo/hello", "r1", HOST, "/")]);
    // 8 MiB the client never reads, on the same Calls stream as the rest.
    let stalled = proxy
        .handle(get(HOST, "/download", &[("x-fake", "generate:8388608")]))
        .await;
    assert_eq!(stalled.status(), StatusCode::OK);
    for _ in 0..3 {
        let response =
            tokio::time::timeout(Duration::from_secs(10), proxy.handle(get(HOST, "/", &[])))
                .await
                .expect("answered while the download waits");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(header(&response, "x-echo-method"), Some("GET"));
    }
    assert_eq!(node.streams(), 1);
    // Read at last, the download is whole.
    assert_eq!(body(stalled).await.len(), 8 << 20);
}
