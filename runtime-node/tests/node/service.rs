//! The gRPC service against a real engine: bundles inserted straight into
//! the index, requests over local sockets.

use std::time::Duration;

use bytes::Bytes;
use isolane_engine::Limits;
use isolane_node::ListenerMode;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::{
    ExecuteRequest, Header, StatsRequest, execute_response::Frame as Out,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use isolane_testenv::wait_until;

use crate::support::*;

#[tokio::test]
async fn a_request_runs_on_the_chosen_thread_and_answers() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    for thread in 0..2 {
        let mut client = node.client(thread).await;
        let answer = call(
            &mut client,
            head("GET", "demo/hello", "r1", thread as u32),
            &[],
        )
        .await
        .unwrap();
        assert_eq!(answer.head.status, 200);
        assert_eq!(answer.head.outcome(), Outcome::Ok);
        assert_eq!(answer.text(), "hello from /path yes");
        assert_eq!(answer.header("x-worker").as_deref(), Some("hello"));
        assert_eq!(answer.end.outcome(), Outcome::Ok);
    }
    // An empty revision means the newest.
    let mut client = node.client(0).await;
    let answer = call(&mut client, head("GET", "demo/hello", "", 0), &[])
        .await
        .unwrap();
    assert_eq!(answer.head.status, 200);
    let metrics = node.metrics_text();
    for thread in ["0", "1"] {
        let line = format!(r#"isolane_node_requests_total{{outcome="ok",thread="{thread}"}}"#);
        assert!(metrics.contains(&line), "{line} in\n{metrics}");
    }
    assert!(
        metrics.contains(r#"isolane_node_isolate_cache_lookups_total{result="miss",thread="0"} 1"#)
    );
    assert!(
        metrics.contains(r#"isolane_node_isolate_cache_lookups_total{result="hit",thread="0"} 1"#)
    );
}

#[tokio::test]
async fn bodies_stream_both_ways_chunk_by_chunk() {
    let node = start(Shape::default());
    node.deploy("demo/echo", "r1", ECHO);
    let mut client = node.client(1).await;
    let (tx, rx) = mpsc::channel(1);
    tx.send(ExecuteRequest::head(head("POST", "demo/echo", "r1", 1)))
        .await
        .unwrap();
    let mut responses = client
        .execute(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let Out::Head(response_head) = next_frame(&mut responses).await else {
        panic!("expected the head first");
    };
    assert_eq!(response_head.status, 200);
    // Each chunk comes back before the next is sent: neither side holds the
    // body whole.
    const CHUNKS: usize = 32;
    const SIZE: usize = 64 * 1024;
    for i in 0..CHUNKS {
        let chunk = Bytes::from(vec![b'a' + (i % 26) as u8; SIZE]);
        tx.send(ExecuteRequest::body(chunk.clone())).await.unwrap();
        let Out::Body(echoed) = next_frame(&mut responses).await else {
            panic!("expected body chunk {i}");
        };
        assert_eq!(echoed, chunk, "chunk {i}");
    }
    tx.send(ExecuteRequest::end()).await.unwrap();
    let Out::Body(summary) = next_frame(&mut responses).await else {
        panic!("expected the summary");
    };
    assert_eq!(
        String::from_utf8_lossy(&summary),
        format!("|{CHUNKS} chunks {} bytes", CHUNKS * SIZE)
    );
    let Out::End(end) = next_frame(&mut responses).await else {
        panic!("expected the end");
    };
    assert_eq!(end.outcome(), Outcome::Ok);
    assert!(responses.message().await.unwrap().is_none());
}

#[tokio::test]
async fn a_large_response_is_split_into_frames() {
    let node = start(Shape::default());
    // 5 MiB in one enqueue: more than a gRPC message should carry.
    node.deploy(
        "demo/big",
        "r1",
        "export default { fetch() { return new Response(new Uint8Array(5 * 1024 * 1024).fill(120)); } };",
    );
    let mut client = node.client(0).await;
    let answer = call(&mut client, head("GET", "demo/big", "r1", 0), &[])
        .await
        .unwrap();
    assert_eq!(answer.head.status, 200);
    assert_eq!(answer.body.len(), 5 << 20);
    assert!(answer.body.iter().all(|b| *b == b'x'));
}

#[tokio::test]
async fn an_unknown_worker_is_not_found_after_a_bounded_wait() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(0).await;
    let started = std::time::Instant::now();
    let status = call(&mut client, head("GET", "demo/nobody", "r1", 0), &[])
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert!(
        status.message().contains("demo/nobody"),
        "{}",
        status.message()
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    let status = call(&mut client, head("GET", "demo/hello", "r-next", 0), &[])
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert!(status.message().contains("r-next"), "{}", status.message());
}

#[tokio::test]
async fn a_revision_that_arrives_while_waiting_is_served() {
    let node = start(Shape {
        revision_wait: Duration::from_secs(10),
        ..Shape::default()
    });
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(0).await;
    let pending =
        tokio::spawn(
            async move { call(&mut client, head("GET", "demo/hello", "r2", 0), &[]).await },
        );
    // Deploy only once the request is waiting for r2.
    node.wait_in_flight(0, 1, "the request to wait").await;
    node.deploy(
        "demo/hello",
        "r2",
        "export default { fetch() { return new Response('r2') } };",
    );
    let answer = pending.await.unwrap().unwrap();
    assert_eq!(answer.text(), "r2");
}

#[tokio::test]
async fn a_prewarm_waits_for_its_revision_until_its_deadline() {
    // revision_wait is 200 ms: a request for r2 gives up after that, a
    // prewarm (a node still pulling r2's bundle) waits until r2 arrives.
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(0).await;
    let mut prewarm = head("GET", "demo/hello", "r2", 0);
    prewarm.prewarm = true;
    prewarm.deadline_ms = 30_000;
    let pending = tokio::spawn(async move { call(&mut client, prewarm, &[]).await });
    node.wait_in_flight(0, 1, "the prewarm to wait").await;
    // Past revision_wait (with a margin), the prewarm is still waiting.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !pending.is_finished(),
        "the prewarm gave up at revision_wait"
    );
    node.deploy(
        "demo/hello",
        "r2",
        "export default { fetch() { return new Response('r2') } };",
    );
    let answer = pending.await.unwrap().unwrap();
    assert_eq!(answer.head.status, 204);
    // A request for a revision never deployed still gives up at revision_wait.
    let mut client = node.client(0).await;
    let mut request = head("GET", "demo/hello", "r3", 0);
    request.deadline_ms = 30_000;
    let status = call(&mut client, request, &[]).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
}

#[tokio::test]
async fn a_thread_out_of_range_is_invalid_argument() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(0).await;
    let status = call(&mut client, head("GET", "demo/hello", "r1", 2), &[])
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(
        node.metrics_text().contains(
            r#"isolane_node_requests_total{outcome="invalid_thread",thread="invalid"} 1"#
        )
    );
}

#[tokio::test]
async fn a_stream_without_a_head_is_invalid_argument() {
    let node = start(Shape::default());
    let mut client = node.client(0).await;
    let status = client
        .execute(tokio_stream::iter([ExecuteRequest::body(&b"x"[..])]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn overload_is_resource_exhausted() {
    let node = start(Shape {
        max_inflight: 1,
        ..Shape::default()
    });
    node.deploy("demo/waits", "r1", WAITS_FOR_BODY);
    let mut client = node.client(0).await;
    // One request holds thread 0's only slot: its body has not ended.
    let (tx, rx) = mpsc::channel(4);
    tx.send(ExecuteRequest::head(head("POST", "demo/waits", "r1", 0)))
        .await
        .unwrap();
    tx.send(ExecuteRequest::body(&b"abc"[..])).await.unwrap();
    let first = {
        let mut client = client.clone();
        tokio::spawn(async move {
            let responses = client.execute(ReceiverStream::new(rx)).await?.into_inner();
            collect(responses).await
        })
    };
    node.wait_in_flight(0, 1, "the first request in flight")
        .await;
    let status = call(&mut client, head("GET", "demo/waits", "r1", 0), &[])
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    // Thread 1 has its own bound.
    let other = call(&mut client, head("POST", "demo/waits", "r1", 1), &[b"zz"])
        .await
        .unwrap();
    assert_eq!(other.text(), "got 2");
    tx.send(ExecuteRequest::end()).await.unwrap();
    assert_eq!(first.await.unwrap().unwrap().text(), "got 3");
    assert!(
        node.metrics_text()
            .contains(r#"isolane_node_rejections_total{reason="overloaded",thread="0"} 1"#)
    );
    node.wait_in_flight(0, 0, "the slot to free").await;
    let again = call(&mut client, head("POST", "demo/waits", "r1", 0), &[b"q"])
        .await
        .unwrap();
    assert_eq!(again.text(), "got 1");
}

#[tokio::test]
async fn a_throwing_worker_answers_500_in_the_head() {
    let node = start(Shape::default());
    node.deploy("demo/throws", "r1", THROWS);
    let mut client = node.client(0).await;
    let answer = call(&mut client, head("GET", "demo/throws", "r1", 0), &[])
        .await
        .unwrap();
    assert_eq!(answer.head.status, 500);
    assert_eq!(answer.head.outcome(), Outcome::Exception);
    assert_eq!(answer.head.reason, "the worker threw an exception");
    // Typed: the router renders the page, the node sends none.
    assert!(answer.head.headers.is_empty(), "{:?}", answer.head.headers);
    assert!(answer.body.is_empty(), "{}", answer.text());
    assert_eq!(answer.head.body_length, Some(0));
    assert_eq!(answer.end.outcome(), Outcome::Ok);
    assert!(
        node.metrics_text()
            .contains(r#"isolane_node_requests_total{outcome="exception",thread="0"} 1"#)
    );
}

#[tokio::test]
async fn a_cpu_limit_is_a_503_head_with_its_reason() {
    let node = start(Shape::default());
    node.deploy_with(
        "demo/spins",
        "r1",
        SPINS,
        Limits {
            cpu_ms: 20,
            ..Limits::default()
        },
    );
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(1).await;
    let answer = call(&mut client, head("GET", "demo/spins", "r1", 1), &[])
        .await
        .unwrap();
    assert_eq!(answer.head.status, 503);
    assert_eq!(answer.head.outcome(), Outcome::CpuLimit);
    assert_eq!(answer.head.reason, "CPU time limit of 20 ms exceeded");
    assert_eq!(answer.head.retry_after_ms, None);
    assert!(answer.body.is_empty(), "{}", answer.text());
    // The thread serves others right after.
    let ok = call(&mut client, head("GET", "demo/hello", "r1", 1), &[])
        .await
        .unwrap();
    assert_eq!(ok.head.status, 200);
    assert!(
        node.metrics_text()
            .contains(r#"isolane_node_terminations_total{reason="cpu_limit",thread="1"} 1"#)
    );
}

/// An anonymous client, through the node's gRPC service: requests to a
/// Worker's expensive route that each end at the CPU limit, many in a row,
/// and bodies declared over the node's cap; each fails alone (503
/// `cpu_limit`, 413 `body_too_large`), and the same Worker's cheap route
/// answers after every one of them (once, three in a row quarantined it).
#[tokio::test]
async fn limits_fail_the_request_never_the_worker() {
    let node = start(Shape::default());
    node.deploy_with(
        "shop/app",
        "r1",
        "export default { fetch(request) {
            if (new URL(request.url).pathname === '/heavy') { for (;;) {} }
            return new Response('ok');
        } };",
        Limits {
            cpu_ms: 20,
            ..Limits::default()
        },
    );
    let mut client = node.client(0).await;
    let route = |path: &str| {
        let mut head = head("POST", "shop/app", "r1", 0);
        head.url = format!("https://worker.example{path}");
        head
    };
    for _ in 0..6 {
        let heavy = call(&mut client, route("/heavy"), &[]).await.unwrap();
        assert_eq!(heavy.head.status, 503);
        assert_eq!(heavy.head.outcome(), Outcome::CpuLimit);
        let mut oversized = route("/cheap");
        oversized
            .headers
            .push(Header::new("content-length", (200u64 << 20).to_string()));
        let oversized = call(&mut client, oversized, &[]).await.unwrap();
        assert_eq!(oversized.head.status, 413);
        assert_eq!(oversized.head.outcome(), Outcome::BodyTooLarge);
        assert_eq!(
            oversized.head.reason,
            format!("the request body is larger than {} bytes", 100u64 << 20)
        );
        let cheap = call(&mut client, route("/cheap"), &[]).await.unwrap();
        assert_eq!(
            (cheap.head.status, cheap.body.as_slice()),
            (200, &b"ok"[..])
        );
    }
}

#[tokio::test]
async fn the_head_deadline_is_honoured() {
    let node = start(Shape::default());
    node.deploy("demo/hangs", "r1", HANGS);
    let mut client = node.client(0).await;
    let mut slow = head("GET", "demo/hangs", "r1", 0);
    slow.deadline_ms = 150;
    let started = std::time::Instant::now();
    let answer = call(&mut client, slow, &[]).await.unwrap();
    assert_eq!(answer.head.status, 504);
    assert_eq!(answer.head.outcome(), Outcome::WallTimeout);
    assert!(started.elapsed() < Duration::from_secs(5));
    node.wait_in_flight(0, 0, "the slot to free").await;
}

#[tokio::test]
async fn draining_refuses_new_requests_with_unavailable() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    let mut client = node.client(0).await;
    node.admission.start_draining();
    let status = call(&mut client, head("GET", "demo/hello", "r1", 0), &[])
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert!(stats.draining);
}

#[tokio::test]
async fn stats_report_threads_and_bundles() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    node.deploy("demo/hello", "r2", HELLO);
    let mut client = node.client(0).await;
    call(&mut client, head("GET", "demo/hello", "r2", 1), &[])
        .await
        .unwrap();
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.node, "test-node");
    assert!(!stats.draining);
    assert_eq!(stats.threads.len(), 2);
    assert_eq!(stats.threads[1].thread, 1);
    assert!(stats.threads[1].live_isolates >= 1);
    assert!(stats.threads[1].heap_bytes > 0);
    let revisions: Vec<_> = stats.bundles.iter().map(|b| b.revision.as_str()).collect();
    assert_eq!(revisions, ["r2", "r1"]);
}

#[tokio::test]
async fn per_thread_listeners_each_serve_their_thread() {
    let node = start(Shape {
        listeners: ListenerMode::PerThread,
        ..Shape::default()
    });
    assert_eq!(node.addrs.len(), 2);
    assert_ne!(node.addrs[0], node.addrs[1]);
    node.deploy("demo/hello", "r1", HELLO);
    for thread in 0..2u32 {
        let mut client = node.client(thread as usize).await;
        let answer = call(&mut client, head("GET", "demo/hello", "r1", thread), &[])
            .await
            .unwrap();
        assert_eq!(answer.head.status, 200);
    }
    let metrics = node.metrics_text();
    assert!(
        metrics.contains(r#"isolane_node_requests_total{outcome="ok",thread="1"} 1"#),
        "{metrics}"
    );
}

/// A Worker that never answers, called by more clients than its namespace's
/// share of a thread's slots: the excess is refused as overloaded, a
/// bystander of another namespace on the same thread is served, the in-flight gauge says what is in flight, and
/// when the callers go away every slot is free again at once.
#[tokio::test]
async fn a_never_settling_worker_gets_its_share_of_slots_and_frees_them() {
    let node = start(Shape {
        max_inflight: 16,
        ..Shape::default()
    });
    let share = 16 / 4;
    node.deploy(
        "demo/tarpit",
        "r1",
        "export default { fetch() { return new Promise(() => {}); } };",
    );
    node.deploy(
        "web/hello",
        "r1",
        "export default { fetch() { return new Response('hello'); } };",
    );
    let client = node.client(0).await;
    let callers: Vec<_> = (0..12)
        .map(|_| {
            let mut client = client.clone();
            tokio::spawn(async move {
                call(&mut client, head("GET", "demo/tarpit", "r1", 0), &[]).await
            })
        })
        .collect();
    wait_until("the excess refused", Duration::from_secs(30), || {
        let refused = callers.iter().filter(|c| c.is_finished()).count() == 12 - share
            && node.admission.in_flight(0) == share;
        async move { refused.then_some(()) }
    })
    .await;
    assert!(
        node.metrics_text().contains(&format!(
            r#"isolane_node_in_flight_requests{{thread="0"}} {share}"#
        )),
        "{}",
        node.metrics_text()
    );
    let mut bystander = client.clone();
    let answer = call(&mut bystander, head("GET", "web/hello", "r1", 0), &[])
        .await
        .unwrap();
    assert_eq!(answer.text(), "hello");
    for caller in &callers {
        caller.abort();
    }
    node.wait_in_flight(0, 0, "every slot free").await;
    assert!(
        node.metrics_text()
            .contains(r#"isolane_node_in_flight_requests{thread="0"} 0"#)
    );
}

/// A Worker's fetch of anything on the node's loopback (its admin port, etcd,
/// the router) is refused by the egress policy, and counted.
#[tokio::test]
async fn fetch_to_the_node_s_loopback_is_refused_and_counted() {
    let node = start(Shape::default());
    node.deploy(
        "demo/ssrf",
        "r1",
        "export default { async fetch() {
            try { await fetch('http://127.0.0.1:2379/v3/kv/range'); return new Response('reached'); }
            catch (e) { return new Response(String(e)); }
        } };",
    );
    let mut client = node.client(0).await;
    let answer = call(&mut client, head("GET", "demo/ssrf", "r1", 0), &[])
        .await
        .unwrap();
    assert_eq!(
        answer.text(),
        "TypeError: fetch to 127.0.0.1 refused by the egress policy: loopback address"
    );
    assert!(
        node.metrics_text()
            .contains(r#"isolane_node_egress_refused_total{reason="loopback"} 1"#),
        "{}",
        node.metrics_text()
    );
}

/// A head carrying a cron tick runs the worker's `scheduled` handler on the
/// chosen thread: OK with a bodiless 200, or EXCEPTION when it throws.
#[tokio::test]
async fn a_scheduled_tick_runs_the_scheduled_handler() {
    let node = start(Shape::default());
    node.deploy(
        "demo/cron",
        "r1",
        r#"let last = 'none';
export default {
  scheduled(controller) {
    if (controller.cron === 'bad') throw new Error('bad tick');
    last = `${controller.cron}@${controller.scheduledTime}`;
  },
  fetch() { return new Response(last); },
};"#,
    );
    let mut client = node.client(1).await;
    let tick = |cron: &str| {
        let mut head = head("GET", "demo/cron", "r1", 1);
        head.scheduled = Some(isolane_proto::runtime::v1::ScheduledTick {
            cron: cron.to_owned(),
            scheduled_time_ms: 1_700_000_000_000,
        });
        head
    };
    let answer = call(&mut client, tick("*/5 * * * *"), &[]).await.unwrap();
    assert_eq!(
        (answer.head.status, answer.head.outcome()),
        (200, Outcome::Ok)
    );
    assert!(answer.body.is_empty());
    let answer = call(&mut client, head("GET", "demo/cron", "r1", 1), &[])
        .await
        .unwrap();
    assert_eq!(answer.text(), "*/5 * * * *@1700000000000");
    let answer = call(&mut client, tick("bad"), &[]).await.unwrap();
    assert_eq!(answer.head.outcome(), Outcome::Exception);
}
