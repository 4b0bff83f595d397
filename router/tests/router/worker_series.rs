//! The busiest-Workers cap on the per-Worker series, as WebSockets meet it:
//! a Worker busy on open sockets keeps its series, and sockets held open
//! cannot push out a Worker that serves requests.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use isolane_proto::socket::SocketMessage;
use isolane_router::RouterMetrics;
use isolane_router::metrics::{Served, WorkerSlot};
use prometheus::Registry;

use crate::support::sample;

const BYTES: &str = "isolane_router_websocket_bytes_total";
const REQUESTS: &str = "isolane_router_worker_requests_total";

fn served<'a>(worker_id: &'a str, slot: &'a WorkerSlot) -> Served<'a> {
    Served {
        worker_id,
        slot,
        revision: "r1",
    }
}

fn bytes_to(registry: &Registry, worker: &str) -> Option<f64> {
    sample(
        registry,
        BYTES,
        &[("worker", worker), ("direction", "to_worker")],
    )
}

/// A Worker whose socket stays open, with no request since, keeps its
/// series through re-ranks and a route table rebuilt (its messages
/// stay exported); once it closes and nothing comes, it drops out, and
/// a Worker no longer routed loses its series at once.
#[test]
fn a_worker_with_a_socket_open_keeps_its_series() {
    let registry = Registry::new();
    let metrics = RouterMetrics::register(&registry, 2).unwrap();
    let slot = metrics.workers.slot("ns/ws");
    let gone = metrics.workers.slot("ns/gone");
    let socket = metrics.socket_series(served("ns/ws", &slot));
    let _other = metrics.socket_series(served("ns/gone", &gone));
    socket.opened();
    let message = SocketMessage::Binary(Bytes::from_static(b"0123456789"));
    for round in 1..=3 {
        metrics.workers.rerank();
        metrics.workers.retain(&HashSet::from(["ns/ws"]));
        socket.to_worker(&message);
        assert_eq!(bytes_to(&registry, "ns/ws"), Some(10.0 * f64::from(round)));
    }
    assert_eq!(bytes_to(&registry, "ns/gone"), None);
    assert_eq!(metrics.workers.tracked(), 1);
    socket.ended();
    metrics.workers.rerank();
    assert_eq!(bytes_to(&registry, "ns/ws"), None);
    assert_eq!(metrics.workers.tracked(), 0);
}

/// What an anonymous client can do with the rule: hold idle sockets open
/// to as many Workers as the cap allows. A Worker that served a request in
/// the window still outranks every one of them and keeps its series.
#[test]
fn idle_sockets_do_not_push_out_a_worker_that_serves_requests() {
    let registry = Registry::new();
    let metrics = RouterMetrics::register(&registry, 2).unwrap();
    let held: Vec<_> = ["ns/held-a", "ns/held-b"]
        .iter()
        .map(|id| (*id, metrics.workers.slot(id)))
        .collect();
    let sockets: Vec<_> = held
        .iter()
        .map(|(id, slot)| {
            let socket = metrics.socket_series(served(id, slot));
            socket.opened();
            socket
        })
        .collect();
    let benign = metrics.workers.slot("ns/benign");
    let request = || {
        metrics.observe(
            Some(served("ns/benign", &benign)),
            "node-a",
            http::StatusCode::OK,
            Duration::from_millis(1),
            None,
        );
    };
    // The held sockets' opening window ends; from here on they are idle.
    metrics.workers.rerank();
    for window in 0..3 {
        request();
        metrics.workers.rerank();
        request();
        assert!(
            sample(&registry, REQUESTS, &[("worker", "ns/benign")]).is_some(),
            "window {window}: the benign Worker has no series of its own"
        );
    }
    drop(sockets);
}
