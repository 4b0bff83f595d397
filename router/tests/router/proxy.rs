//! The HTTP application (`Proxy::handle`, no socket) in front of fake nodes.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::SinkExt;
use futures::channel::mpsc;
use http::{Request, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use isolane_placement::thread_for;
use isolane_router::ProxyConfig;
use isolane_testenv::wait_until;

use crate::fake_node::{FakeNode, crashing_member, dead_member};
use crate::support::{
    body, get, header, label_values, proxy, request, sample, worker, worker_preferring,
};

const HOST: &str = "app.example.test";

#[tokio::test]
async fn routes_by_host_and_path_and_carries_worker_revision_and_thread() {
    let node = FakeNode::start("node-a").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(4)]);
    proxy.set_workers(vec![
        worker("ns/root", "rev-root", HOST, "/"),
        worker("ns/api", "rev-api", HOST, "/api"),
        worker("ns/wild", "rev-wild", "*.example.test", "/"),
    ]);

    let response = proxy.handle(get(HOST, "/api/items?x=1", &[])).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("node-a"));
    assert_eq!(header(&response, "x-isolane-revision"), Some("rev-api"));
    assert_eq!(header(&response, "x-echo-worker"), Some("ns/api"));
    assert_eq!(header(&response, "x-echo-revision"), Some("rev-api"));
    let thread = thread_for("ns/api", 4).to_string();
    assert_eq!(header(&response, "x-echo-thread"), Some(thread.as_str()));
    assert_eq!(
        header(&response, "x-echo-url"),
        Some("http://app.example.test/api/items?x=1")
    );
    let deadline_ms: u64 = header(&response, "x-echo-deadline-ms")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        deadline_ms > 29_000 && deadline_ms <= 30_000,
        "{deadline_ms}"
    );
    // A generated request id goes to the node and back to the client.
    let id = header(&response, "x-request-id").unwrap().to_owned();
    assert_eq!(id.len(), 16);
    assert_eq!(header(&response, "x-echo-request-id"), Some(id.as_str()));
    // The node's hop-by-hop header is not passed on.
    assert_eq!(header(&response, "connection"), None);
    assert!(body(response).await.is_empty());

    let response = proxy.handle(get(HOST, "/other", &[])).await;
    assert_eq!(header(&response, "x-echo-worker"), Some("ns/root"));
    drop(response);
    let response = proxy.handle(get("www.example.test:8080", "/", &[])).await;
    assert_eq!(header(&response, "x-echo-worker"), Some("ns/wild"));
    // Metrics are recorded when the response body is done (or dropped).
    drop(response);
    // A trusted proxy's request id is kept.
    let trusted = isolane_router::proxy::Client::new("192.0.2.1".parse().unwrap(), true);
    let response = proxy
        .handle_from(
            get(HOST, "/", &[("x-request-id", "client-id-1")]),
            Some(&trusted),
        )
        .await;
    assert_eq!(header(&response, "x-request-id"), Some("client-id-1"));
    assert_eq!(header(&response, "x-echo-request-id"), Some("client-id-1"));
    drop(response);
    // Anyone else's is replaced by a new one.
    let response = proxy
        .handle(get(HOST, "/", &[("x-request-id", "client-id-1")]))
        .await;
    let id = header(&response, "x-request-id").unwrap().to_owned();
    assert_ne!(id, "client-id-1");
    assert_eq!(header(&response, "x-echo-request-id"), Some(id.as_str()));
    drop(response);

    assert_eq!(
        sample(
            &registry,
            "isolane_router_requests_total",
            &[("status_class", "2xx"), ("node", "node-a")]
        ),
        Some(5.0)
    );
    assert_eq!(
        sample(
            &registry,
            "isolane_router_request_duration_seconds_count",
            &[("status_class", "2xx"), ("node", "node-a")]
        ),
        Some(5.0)
    );
    assert_eq!(
        sample(&registry, "isolane_router_live_nodes", &[]),
        Some(1.0)
    );
    assert_eq!(node.executes(), 5);
}

#[tokio::test]
async fn unknown_host_or_path_is_404_with_a_json_body() {
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_workers(vec![worker("ns/api", "r1", HOST, "/api")]);
    for (host, path) in [("nobody.test:8080", "/x"), (HOST, "/apix")] {
        let response = proxy.handle(get(host, path, &[])).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(header(&response, "content-type"), Some("application/json"));
        assert_eq!(header(&response, "x-isolane-reason"), Some("no_route"));
        let json: serde_json::Value = serde_json::from_slice(&body(response).await).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "error": "no worker routes this host and path",
                "reason": "no_route",
                "host": host.split(':').next().unwrap(),
                "path": path,
            })
        );
    }
    assert_eq!(
        sample(
            &registry,
            "isolane_router_requests_total",
            &[("status_class", "4xx"), ("node", "none")]
        ),
        Some(2.0)
    );
}

#[tokio::test]
async fn no_live_node_is_503_with_a_json_reason() {
    let (proxy, _registry) = proxy(no_wait(), 50);
    proxy.set_workers(vec![worker("ns/api", "r1", HOST, "/")]);
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&response, "x-isolane-reason"), Some("no_live_node"));
    assert_eq!(header(&response, "retry-after"), Some("1"));
    let json: serde_json::Value = serde_json::from_slice(&body(response).await).unwrap();
    assert_eq!(json["error"], "no live runtime node");
    assert_eq!(json["worker"], "ns/api");
}

#[tokio::test]
async fn streams_a_large_body_both_ways_without_buffering_it_whole() {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 32;
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/echo", "r1", HOST, "/")]);

    // Upload, echoed: each chunk comes back before the next is sent, so
    // neither the router nor the node can be holding the whole body.
    let (mut tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(1);
    let upload = Request::builder()
        .method("POST")
        .uri("/upload")
        .header("host", HOST)
        .body(StreamBody::new(rx))
        .unwrap();
    let chunk = |i: usize| Bytes::from(vec![i as u8; CHUNK]);
    let pending = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.handle(upload).await }
    });
    // The router reads up to the replay limit before it calls the node.
    tx.send(Ok(Frame::data(chunk(0)))).await.unwrap();
    tx.send(Ok(Frame::data(chunk(1)))).await.unwrap();
    let response = pending.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut response_body = response.into_body();
    let mut echoed = Vec::new();
    let mut sent = 2 * CHUNK;
    for i in 2..=CHUNKS {
        while echoed.len() < sent {
            let frame = response_body.frame().await.unwrap().unwrap();
            echoed.extend_from_slice(&frame.into_data().unwrap());
        }
        if i == CHUNKS {
            break;
        }
        tx.send(Ok(Frame::data(chunk(i)))).await.unwrap();
        sent += CHUNK;
    }
    drop(tx);
    while let Some(frame) = response_body.frame().await {
        echoed.extend_from_slice(&frame.unwrap().into_data().unwrap());
    }
    assert_eq!(echoed.len(), CHUNKS * CHUNK);
    for (i, piece) in echoed.chunks(CHUNK).enumerate() {
        assert!(piece.iter().all(|b| *b == i as u8), "chunk {i} intact");
    }

    // Download: 32 MiB streamed frame by frame.
    let size = 32 * 1024 * 1024;
    let generate = format!("generate:{size}");
    let response = proxy
        .handle(get(HOST, "/download", &[("x-fake", &generate)]))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let (mut total, mut largest) = (0, 0);
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        total += data.len();
        largest = largest.max(data.len());
    }
    assert_eq!(total, size);
    assert!(largest <= 64 * 1024, "frames arrive as the node sends them");
}

#[tokio::test]
async fn a_replayable_request_is_retried_once_on_the_next_node() {
    let live = FakeNode::start("live").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![dead_member("dead", 2).await, live.member(2)]);
    let id = worker_preferring(&proxy, "dead");
    proxy.set_workers(vec![worker(&id, "r1", HOST, "/")]);

    let response = proxy
        .handle(request("POST", HOST, "/", &[], "small body"))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("live"));
    assert_eq!(body(response).await, "small body");
    assert_eq!(
        sample(
            &registry,
            "isolane_router_retries_total",
            &[("reason", "node_unavailable")]
        ),
        Some(1.0)
    );
    // The dead node is skipped for a while: the next request goes straight on.
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(header(&response, "x-isolane-node"), Some("live"));
    assert_eq!(
        sample(
            &registry,
            "isolane_router_retries_total",
            &[("reason", "node_unavailable")]
        ),
        Some(1.0)
    );
    assert_eq!(live.executes(), 2);
}

/// A Worker whose requests are lost with two different nodes (as when its
/// request kills each node it runs on) is quarantined: not replayed onto a
/// third node, refused at once for a while; other Workers are unaffected.
#[tokio::test]
async fn a_worker_lost_with_two_nodes_is_quarantined() {
    let live = FakeNode::start("live").await;
    // No wait for the nodes' crash records (these fake nodes never publish
    // one): a suspect is refused at once.
    let no_wait = ProxyConfig {
        node_wait: Duration::ZERO,
        ..ProxyConfig::default()
    };
    let (proxy, registry) = proxy(no_wait, 50);
    proxy.set_members(vec![
        crashing_member("dead-a", 2).await,
        crashing_member("dead-b", 2).await,
        live.member(2),
    ]);
    let id = worker_preferring_dead_a_then_b(&proxy);
    let bystander = worker_preferring(&proxy, "live");
    proxy.set_workers(vec![
        worker(&id, "r1", HOST, "/"),
        worker(&bystander, "r1", "bystander.example.test", "/"),
    ]);

    // Lost with dead-a, replayed onto dead-b, lost again: quarantined, and
    // not replayed a second time.
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&response, "x-isolane-reason"), Some("quarantined"));
    assert_eq!(header(&response, "retry-after"), Some("10"));
    assert_eq!(live.executes(), 0, "the poison never reached a third node");
    // Refused at once meanwhile, whatever the nodes.
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(header(&response, "x-isolane-reason"), Some("quarantined"));
    assert_eq!(live.executes(), 0);
    // Another Worker is served.
    let response = proxy.handle(get("bystander.example.test", "/", &[])).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(live.executes(), 1);
    assert!(
        sample(
            &registry,
            "isolane_router_upstream_errors_total",
            &[("kind", "node_unavailable")]
        )
        .is_some()
    );
}

/// A request that may have run on a node lost under it is replayed only when
/// its method is idempotent: a POST answers 502 and never reaches another
/// node (it could have counted already); a PUT is replayed. A node that
/// refused the connection never had the request: a POST is replayed then
/// (`a_replayable_request_is_retried_once_on_the_next_node`).
#[tokio::test]
async fn a_post_lost_with_its_node_is_not_replayed() {
    let live = FakeNode::start("live").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![crashing_member("dying", 2).await, live.member(2)]);
    let id = worker_preferring(&proxy, "dying");
    proxy.set_workers(vec![worker(&id, "r1", HOST, "/")]);

    let response = proxy.handle(request("POST", HOST, "/", &[], "inc")).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        header(&response, "x-isolane-reason"),
        Some("node_unavailable")
    );
    assert_eq!(live.executes(), 0, "the POST was not run a second time");

    let response = proxy.handle(request("PUT", HOST, "/", &[], "v")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("live"));
    assert_eq!(live.executes(), 1);
}

/// A worker whose first two choices are the nodes `dead-a`, then `dead-b`.
fn worker_preferring_dead_a_then_b(proxy: &isolane_router::Proxy) -> String {
    let fleet = proxy.fleet();
    let config = ProxyConfig::default();
    let load = isolane_router::fleet::WorkerLoad::default();
    (0..10_000)
        .map(|i| format!("ns/w{i}"))
        .find(|id| {
            let Some(first) = fleet.pick(id, &load, config.load_factor, &[]) else {
                return false;
            };
            let second = fleet.pick(id, &load, config.load_factor, &[first.index]);
            let name = |i: usize| fleet.nodes()[i].member.name.clone();
            name(first.index) == "dead-a" && second.is_some_and(|s| name(s.index) == "dead-b")
        })
        .expect("some worker prefers dead-a, then dead-b")
}

/// A Worker lost with two nodes is a suspect: its request waits for the
/// dead nodes' crash records, and once one shows the Worker was not in a
/// turn there, the request is replayed on a live node and served.
#[tokio::test]
async fn a_suspect_waits_for_the_crash_records_and_is_served_when_they_clear_it() {
    let live = FakeNode::start("live").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    let (dead_a, dead_b) = (
        crashing_member("dead-a", 2).await,
        crashing_member("dead-b", 2).await,
    );
    proxy.set_members(vec![dead_a.clone(), dead_b.clone(), live.member(2)]);
    let id = worker_preferring_dead_a_then_b(&proxy);
    proxy.set_workers(vec![worker(&id, "r1", HOST, "/")]);

    let request = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.handle(get(HOST, "/", &[])).await }
    });
    // Lost with both nodes (two upstream errors), now waiting.
    wait_until(
        "the request lost with both dead nodes",
        Duration::from_secs(10),
        || async {
            (sample(&registry, "isolane_router_upstream_errors_total", &[])? >= 2.0).then_some(())
        },
    )
    .await;
    assert_eq!(live.executes(), 0);
    // dead-a restarted and says someone else was in a turn when it died.
    let found_ms = isolane_membership::crash::unix_ms() + 100;
    let record = isolane_membership::CrashRecord {
        started_ms: 0,
        found_ms,
        in_turn: vec!["other/poison".to_owned()],
        unreadable: 0,
    };
    proxy.set_members(vec![
        isolane_membership::NodeMember {
            crash: Some(record),
            ..dead_a
        },
        dead_b,
        live.member(2),
    ]);
    let response = request.await.expect("the request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("live"));
    assert_eq!(live.executes(), 1);
    // And the Worker is not quarantined.
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        sample(&registry, "isolane_router_quarantines_lifted_total", &[]),
        Some(1.0)
    );
}

/// A node that refuses connections never had the request (a node pod that
/// has exited): that is no loss, and never quarantines the Worker.
#[tokio::test]
async fn refused_connections_are_not_losses() {
    let live = FakeNode::start("live").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    let members = vec![
        dead_member("dead-a", 2).await,
        dead_member("dead-b", 2).await,
        live.member(2),
    ];
    proxy.set_members(members.clone());
    let id = worker_preferring(&proxy, "dead-a");
    proxy.set_workers(vec![worker(&id, "r1", HOST, "/")]);
    // Each round the router tries a dead node, skips it, and is served by
    // another; refreshing the membership brings both dead nodes back.
    for round in 0..4 {
        proxy.set_members(Vec::new());
        proxy.set_members(members.clone());
        let response = proxy.handle(get(HOST, "/", &[])).await;
        assert_eq!(response.status(), StatusCode::OK, "round {round}");
    }
}

#[tokio::test]
async fn a_request_too_large_to_replay_fails_with_502_on_a_dead_node() {
    let live = FakeNode::start("live").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![dead_member("dead", 2).await, live.member(2)]);
    let id = worker_preferring(&proxy, "dead");
    proxy.set_workers(vec![worker(&id, "r1", HOST, "/")]);

    let big = vec![1u8; 100 * 1024];
    let response = proxy.handle(request("PUT", HOST, "/", &[], big)).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        header(&response, "x-isolane-reason"),
        Some("node_unavailable")
    );
    assert_eq!(header(&response, "x-isolane-node"), Some("dead"));
    assert_eq!(live.executes(), 0);
    assert_eq!(
        sample(&registry, "isolane_router_retries_total", &[]),
        None,
        "nothing was retried"
    );
    assert_eq!(
        sample(
            &registry,
            "isolane_router_upstream_errors_total",
            &[("kind", "node_unavailable")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn overload_is_503_with_retry_after() {
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);

    let response = proxy
        .handle(get(HOST, "/", &[("x-fake", "overloaded")]))
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        header(&response, "retry-after"),
        Some("2"),
        "1500 ms rounds up"
    );
    assert_eq!(header(&response, "x-isolane-reason"), Some("overloaded"));
    assert_eq!(
        header(&response, "x-isolane-detail"),
        Some("thread queue full")
    );
    drop(response);

    let response = proxy
        .handle(get(HOST, "/", &[("x-fake", "resource-exhausted")]))
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&response, "retry-after"), Some("1"));
    assert_eq!(header(&response, "x-isolane-reason"), Some("overloaded"));
    assert_eq!(node.executes(), 2, "overload is not retried elsewhere");
}

#[tokio::test]
async fn node_outcomes_map_to_http_statuses() {
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    for (mode, status, reason) in [
        ("cpu-limit", 503, "cpu_limit"),
        ("unknown-worker", 404, "unknown_worker"),
    ] {
        let response = proxy.handle(get(HOST, "/", &[("x-fake", mode)])).await;
        assert_eq!(response.status().as_u16(), status, "{mode}");
        assert_eq!(
            header(&response, "x-isolane-reason"),
            Some(reason),
            "{mode}"
        );
        assert_eq!(header(&response, "x-isolane-node"), Some("node-a"));
    }
    // A body that fails midway aborts the client's response.
    let response = proxy
        .handle(get(HOST, "/", &[("x-fake", "fail-midway")]))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.into_body().collect().await.is_err());
}

/// Requests that find no live node answer at once.
fn no_wait() -> ProxyConfig {
    ProxyConfig {
        node_wait: Duration::ZERO,
        ..ProxyConfig::default()
    }
}

#[tokio::test]
async fn a_request_that_finds_no_node_waits_for_one_to_join() {
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    let node = FakeNode::start("node-late").await;
    let waiting = tokio::spawn({
        let proxy = proxy.clone();
        async move { proxy.handle(get(HOST, "/", &[])).await }
    });
    // The request is held, not refused, while there is no node.
    wait_until("the request to wait", Duration::from_secs(10), || async {
        sample(&registry, "isolane_router_node_waiting", &[]) == Some(1.0)
    })
    .await;
    assert!(!waiting.is_finished());
    proxy.set_members(vec![node.member(2)]);
    let response = waiting.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("node-late"));
    assert_eq!(
        sample(
            &registry,
            "isolane_router_node_waits_total",
            &[("outcome", "node")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&registry, "isolane_router_node_waiting", &[]),
        Some(0.0)
    );
}

#[tokio::test]
async fn a_request_refused_by_the_only_node_waits_for_its_replacement() {
    // The node pod being replaced: the old one says "draining", the
    // replacement joins, and the (replayable) request is served by it.
    let old = FakeNode::start("node-old").await;
    let new = FakeNode::start("node-new").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![old.member(2)]);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    let waiting = tokio::spawn({
        let proxy = proxy.clone();
        async move {
            proxy
                .handle(get(HOST, "/", &[("x-fake", "draining-on:node-old")]))
                .await
        }
    });
    wait_until(
        "the old node to refuse it",
        Duration::from_secs(10),
        || async { sample(&registry, "isolane_router_node_waiting", &[]) == Some(1.0) },
    )
    .await;
    assert_eq!(old.executes(), 1);
    proxy.set_members(vec![new.member(2)]);
    let response = waiting.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("node-new"));
    assert_eq!((old.executes(), new.executes()), (1, 1));
    assert_eq!(
        sample(
            &registry,
            "isolane_router_retries_total",
            &[("reason", "draining")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_wait_for_a_node_ends_at_node_wait() {
    let (proxy, registry) = proxy(
        ProxyConfig {
            node_wait: Duration::from_millis(200),
            ..ProxyConfig::default()
        },
        50,
    );
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&response, "x-isolane-reason"), Some("no_live_node"));
    assert_eq!(
        sample(
            &registry,
            "isolane_router_node_waits_total",
            &[("outcome", "timeout")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_node_that_is_draining_is_retried_on_the_next_one() {
    let a = FakeNode::start("node-a").await;
    let b = FakeNode::start("node-b").await;
    let (proxy, registry) = proxy(no_wait(), 50);
    proxy.set_members(vec![a.member(2), b.member(2)]);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    // Both fake nodes answer "draining" to this request: one retry, then 503
    // (no node left to try, and no waiting for one).
    let response = proxy
        .handle(get(HOST, "/", &[("x-fake", "draining")]))
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&response, "x-isolane-reason"), Some("draining"));
    assert_eq!(header(&response, "retry-after"), Some("1"));
    assert_eq!((a.executes(), b.executes()), (1, 1));
    assert_eq!(
        sample(
            &registry,
            "isolane_router_retries_total",
            &[("reason", "draining")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn the_deadline_is_504() {
    let node = FakeNode::start("node-a").await;
    let config = ProxyConfig {
        request_timeout: Duration::from_millis(300),
        ..ProxyConfig::default()
    };
    let (proxy, _registry) = proxy(config, 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/w", "r1", HOST, "/")]);
    let started = Instant::now();
    let response = proxy.handle(get(HOST, "/", &[("x-fake", "hang")])).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(header(&response, "x-isolane-reason"), Some("deadline"));
    assert!(started.elapsed() < Duration::from_secs(3));
    let sent = node.heads()[0].deadline_ms;
    assert!(
        sent > 0 && sent <= 300,
        "the node is told the deadline: {sent}"
    );
}

/// Three fake nodes of two threads and a proxy in front of them.
async fn three_nodes() -> ([FakeNode; 3], isolane_router::Proxy) {
    let nodes = [
        FakeNode::start("node-a").await,
        FakeNode::start("node-b").await,
        FakeNode::start("node-c").await,
    ];
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(nodes.iter().map(|n| n.member(2)).collect());
    (nodes, proxy)
}

/// Lets the held requests answer, and checks each answered 200.
pub(crate) async fn release(
    nodes: &[FakeNode],
    pending: Vec<tokio::task::JoinHandle<http::Response<isolane_router::ResponseBody>>>,
) {
    for node in nodes {
        node.release();
    }
    for response in pending {
        assert_eq!(response.await.unwrap().status(), StatusCode::OK);
    }
}

/// Sends `count` requests to `HOST` that the fake nodes hold until
/// released, and waits until every one has reached a node.
async fn hold_on(
    proxy: &isolane_router::Proxy,
    nodes: &[FakeNode],
    count: usize,
) -> Vec<tokio::task::JoinHandle<http::Response<isolane_router::ResponseBody>>> {
    hold_on_at(proxy, nodes, HOST, count).await
}

/// As [`hold_on`], to `host`.
async fn hold_on_at(
    proxy: &isolane_router::Proxy,
    nodes: &[FakeNode],
    host: &'static str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<http::Response<isolane_router::ResponseBody>>> {
    let executes = || nodes.iter().map(FakeNode::executes).sum::<usize>();
    let before = executes();
    let pending = (0..count)
        .map(|_| {
            let proxy = proxy.clone();
            tokio::spawn(async move { proxy.handle(get(host, "/", &[("x-fake", "hold")])).await })
        })
        .collect();
    wait_until(
        "every request to reach a node",
        Duration::from_secs(10),
        || async { executes() == before + count },
    )
    .await;
    pending
}

#[tokio::test]
async fn a_hot_worker_overflows_to_its_next_candidate_node() {
    let (nodes, proxy) = three_nodes().await;
    proxy.set_workers(vec![worker("ns/hot", "r1", HOST, "/")]);
    let primary = proxy.fleet().primary("ns/hot").unwrap().to_owned();

    const REQUESTS: usize = 30;
    let pending = hold_on(&proxy, &nodes, REQUESTS).await;
    let per_node: HashMap<&str, usize> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.executes()))
        .collect();
    // Bounded load: no node holds more than ⌈1.25 × 30 / 3⌉ = 13 (plus one for rounding).
    assert!(per_node.values().all(|n| *n <= 14), "{per_node:?}");
    assert!(per_node.values().all(|n| *n > 0), "{per_node:?}");
    assert_eq!(
        per_node[primary.as_str()],
        *per_node.values().max().unwrap(),
        "the first choice takes the most: {per_node:?}"
    );
    release(&nodes, pending).await;
    // With the load gone, the worker is back on its first choice.
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(header(&response, "x-isolane-node"), Some(primary.as_str()));
}

/// A client flooding one Worker cannot push a quiet neighbour off the node
/// both prefer: the flood spills at the load bound, while the neighbour's
/// lone requests (nothing else of it in flight) stay on its first choice,
/// where it is warm, before, during and after.
#[tokio::test]
async fn a_flood_of_one_worker_leaves_a_neighbours_lone_request_at_home() {
    let (nodes, proxy) = three_nodes().await;
    let home = proxy.fleet().primary("ns/hot").unwrap().to_owned();
    let quiet = worker_preferring(&proxy, &home);
    proxy.set_workers(vec![
        worker("ns/hot", "r1", HOST, "/"),
        worker(&quiet, "r1", "quiet.test", "/"),
    ]);
    let ask_quiet = || async {
        let response = proxy.handle(get("quiet.test", "/", &[])).await;
        assert_eq!(response.status(), StatusCode::OK);
        header(&response, "x-isolane-node").map(str::to_owned)
    };
    assert_eq!(ask_quiet().await.as_deref(), Some(home.as_str()), "before");
    let home_node = nodes.iter().find(|n| n.name == home).unwrap();
    let home_before = home_node.executes();

    const REQUESTS: usize = 30;
    let pending = hold_on(&proxy, &nodes, REQUESTS).await;
    let at_home = home_node.executes() - home_before;
    // The flood spilled: its home is at its bound, 1.25 × 31 / 3 ≈ 12.9
    // counting one more request, so a request of a busy Worker would go on.
    assert!((12..REQUESTS).contains(&at_home), "{at_home} at home");
    // The quiet Worker's lone request stays (its bound is twice that).
    assert_eq!(ask_quiet().await.as_deref(), Some(home.as_str()), "during");
    release(&nodes, pending).await;
    assert_eq!(ask_quiet().await.as_deref(), Some(home.as_str()), "after");
}

/// The first time a Worker has a request placed while another is in
/// flight, the router sends it one standby prewarm, to a node that is not
/// its first choice (where its spills go) even when the first choice has
/// room; more busy requests send no more.
#[tokio::test]
async fn a_worker_first_seen_busy_gets_one_standby_prewarm_where_it_would_spill() {
    let (nodes, proxy) = three_nodes().await;
    let hot = "hot.test";
    let primary = proxy.fleet().primary("ns/hot").unwrap().to_owned();
    // Another Worker with another first choice keeps every node busy, so
    // that the bound, not an idle fleet, leaves `ns/hot`'s first choice
    // with room for it.
    let elsewhere = nodes.iter().find(|n| n.name != primary).unwrap();
    let other = worker_preferring(&proxy, &elsewhere.name);
    proxy.set_workers(vec![
        worker("ns/hot", "r1", hot, "/"),
        worker(&other, "r1", HOST, "/"),
    ]);
    let background = hold_on(&proxy, &nodes, 30).await;
    let standbys = || {
        nodes
            .iter()
            .flat_map(|n| n.prewarms().into_iter().map(|h| (n.name.clone(), h)))
            .filter(|(_, h)| h.worker_id == "ns/hot")
            .collect::<Vec<_>>()
    };
    let pending = hold_on_at(&proxy, &nodes, hot, 2).await;
    wait_until("a standby prewarm", Duration::from_secs(10), || async {
        !standbys().is_empty()
    })
    .await;
    release(&nodes, pending).await;
    let pending = hold_on_at(&proxy, &nodes, hot, 4).await;
    release(&nodes, pending).await;
    release(&nodes, background).await;
    let sent = standbys();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let (node, head) = &sent[0];
    assert_ne!(node, &primary, "not on the first choice");
    assert!(head.prewarm && head.standby, "{head:?}");
    assert_eq!(head.revision, "r1");
}

#[tokio::test]
async fn per_worker_series_are_capped_at_the_busiest_k() {
    let node = FakeNode::start("node-a").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 2);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(
        (0..5)
            .map(|i| worker(&format!("ns/w{i}"), "r1", &format!("w{i}.test"), "/"))
            .collect(),
    );
    let send = |i: usize, times: usize| {
        let proxy = proxy.clone();
        async move {
            for _ in 0..times {
                let response = proxy.handle(get(&format!("w{i}.test"), "/", &[])).await;
                assert_eq!(response.status(), StatusCode::OK);
            }
        }
    };
    for i in 0..5 {
        send(i, 1).await;
    }
    // The first two seen got their own series, the rest share "other".
    let workers = label_values(&registry, "isolane_router_worker_requests_total", "worker");
    assert_eq!(workers, ["ns/w0", "ns/w1", "other"]);
    assert_eq!(
        sample(
            &registry,
            "isolane_router_worker_requests_total",
            &[("worker", "other")]
        ),
        Some(3.0)
    );

    // w4 and w3 become the busiest: a re-rank gives them the two series.
    send(4, 5).await;
    send(3, 3).await;
    proxy.metrics().workers.rerank();
    assert_eq!(proxy.metrics().workers.tracked(), 2);
    send(4, 1).await;
    send(0, 1).await;
    let workers = label_values(&registry, "isolane_router_worker_requests_total", "worker");
    assert_eq!(workers, ["ns/w4", "other"]);
    let latency = label_values(
        &registry,
        "isolane_router_worker_request_duration_seconds_count",
        "worker",
    );
    assert_eq!(latency, ["ns/w4", "other"]);
    send(3, 1).await;
    let workers = label_values(&registry, "isolane_router_worker_requests_total", "worker");
    assert_eq!(workers, ["ns/w3", "ns/w4", "other"]);
}

/// A request that looped through Workers' `fetch` more than a few times is
/// refused before it reaches a node; below the bound it passes on, hop count
/// and all.
#[tokio::test]
async fn a_request_that_loops_through_workers_is_refused() {
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/self", "r1", HOST, "/")]);
    let too_many = (isolane_router::proxy::MAX_HOPS + 1).to_string();
    let response = proxy
        .handle(get(HOST, "/", &[("x-isolane-hops", too_many.as_str())]))
        .await;
    assert_eq!(response.status(), StatusCode::LOOP_DETECTED);
    assert_eq!(header(&response, "x-isolane-reason"), Some("loop_detected"));
    assert_eq!(node.executes(), 0);
    let at_bound = isolane_router::proxy::MAX_HOPS.to_string();
    let response = proxy
        .handle(get(HOST, "/", &[("x-isolane-hops", at_bound.as_str())]))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let head = node.heads().pop().unwrap();
    assert!(
        head.headers
            .iter()
            .any(|h| h.name == "x-isolane-hops" && h.value.as_ref() == at_bound.as_bytes())
    );
}

/// A client cannot send the platform's own headers (`x-isolane-*`, in any
/// case) to a Worker: they are dropped before the request is routed, but for
/// the two that are a client's to send (the hop count, which the node reads
/// to count the next hop, and a revision override); its other headers pass.
#[tokio::test]
async fn a_client_s_platform_headers_do_not_reach_the_worker() {
    let node = FakeNode::start("node-a").await;
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(2)]);
    proxy.set_workers(vec![worker("ns/app", "r1", HOST, "/")]);
    let response = proxy
        .handle(get(
            HOST,
            "/",
            &[
                ("x-isolane-worker", "other/thing"),
                ("X-Isolane-Scheduled", "1"),
                ("x-user", "kept"),
                ("x-isolane-hops", "2"),
                ("x-isolane-revision", "r1"),
            ],
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-revision"), Some("r1"));
    let head = node.heads().pop().unwrap();
    let mut seen: Vec<(&str, &str)> = head
        .headers
        .iter()
        .filter(|h| h.name.starts_with("x-isolane-") || h.name == "x-user")
        .map(|h| (h.name.as_str(), std::str::from_utf8(&h.value).unwrap()))
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            ("x-isolane-hops", "2"),
            ("x-isolane-revision", "r1"),
            ("x-user", "kept"),
        ]
    );
}
