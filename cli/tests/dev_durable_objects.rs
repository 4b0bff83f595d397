//! Durable Objects through `isolane dev` as a user runs it: the real
//! binary, real HTTP, the SQLite file under `--state`. The counter example
//! (examples/durable-counter.js) incremented by 400 concurrent requests
//! ends at exactly 400, each count answered once; the count outlives a
//! restart. Worker YAMLs bind the class in `spec.bindings`, and the same
//! Worker in two Kubernetes namespaces keeps two counts.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

#[path = "support/dev.rs"]
mod support;
use support::{Dev, HttpClient, client, free_port, repo, request, when_ready};

const HOST: &str = "counter.test";

fn counter(port: u16, state: &str) -> Dev {
    Dev::start(&[
        "examples/durable-counter.js",
        "--durable-object",
        "COUNTER=Counter",
        "--state",
        state,
        "--port",
        &port.to_string(),
    ])
}

/// `POST /hits/<name>`: the count it answered. A 503 is the node's
/// admission refusing the request before it ran (its queue is full under
/// 400 at once on a small machine): the client sends it again, as a load
/// balancer would, within the deadline.
async fn increment(client: &HttpClient, port: u16, name: &str) -> u32 {
    let deadline = std::time::Instant::now() + support::DEADLINE;
    loop {
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("http://127.0.0.1:{port}/hits/{name}"))
            .header(http::header::HOST, HOST)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = client.request(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        if status == 503 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        }
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        return String::from_utf8_lossy(&body).trim().parse().unwrap();
    }
}

#[tokio::test]
async fn dev_counter_object_counts_400_concurrent_increments_exactly_and_keeps_them_across_a_restart()
 {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().join("state");
    let state_arg = state_dir.to_str().unwrap().to_owned();
    let port = free_port().unwrap();
    let mut dev = counter(port, &state_arg);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, HOST, "/hits/home").await,
        (200, "0\n".to_owned())
    );
    let started = std::time::Instant::now();
    let increments: Vec<_> = (0..400)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { increment(&client, port, "home").await })
        })
        .collect();
    let mut answered = BTreeSet::new();
    for increment in increments {
        answered.insert(increment.await.unwrap());
    }
    println!(
        "400 concurrent increments of one object answered in {} ms",
        started.elapsed().as_millis()
    );
    // Each of 1..=400 answered once: no increment lost or doubled.
    assert_eq!(answered, (1..=400).collect::<BTreeSet<u32>>());
    assert_eq!(
        request(&client, port, HOST, "/hits/home").await.unwrap(),
        (200, "400\n".to_owned())
    );
    assert_eq!(
        request(&client, port, HOST, "/hits/other").await.unwrap(),
        (200, "0\n".to_owned())
    );
    assert!(dev.interrupt().success());

    // Restarted on the same state folder: the count is still there.
    let port = free_port().unwrap();
    let mut dev = counter(port, &state_arg);
    assert_eq!(
        when_ready(&client, &mut dev, port, HOST, "/hits/home").await,
        (200, "400\n".to_owned())
    );
    assert_eq!(increment(&client, port, "home").await, 401);
    assert!(dev.interrupt().success());
}

/// The counter example as one Worker in each of two namespaces.
const TWO_NAMESPACES: &str = r#"apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: counter, namespace: team-a }
spec:
  routes: [{ host: a.test }]
  bindings: [{ name: COUNTER, durableObject: { className: Counter } }]
  scriptFrom: { configMapKeyRef: { name: code, key: counter.js } }
---
apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: counter, namespace: team-b }
spec:
  routes: [{ host: b.test }]
  bindings: [{ name: COUNTER, durableObject: { className: Counter } }]
  scriptFrom: { configMapKeyRef: { name: code, key: counter.js } }
"#;

#[tokio::test]
async fn dev_worker_yamls_bind_the_class_and_keep_each_namespace_s_objects_apart() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), TWO_NAMESPACES).unwrap();
    let script = std::fs::read_to_string(repo().join("examples/durable-counter.js")).unwrap();
    let indented: String = script.lines().map(|l| format!("    {l}\n")).collect();
    let config_map = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{ name: code }}\ndata:\n  counter.js: |\n{indented}"
    );
    std::fs::write(dir.path().join("code.yaml"), config_map).unwrap();
    let state = dir.path().join("state");
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &["--state", state.to_str().unwrap()]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "a.test", "/hits/home").await,
        (200, "0\n".to_owned())
    );
    let post = |host: &'static str| {
        let client = client.clone();
        async move {
            let request = http::Request::builder()
                .method("POST")
                .uri(format!("http://127.0.0.1:{port}/hits/home"))
                .header(http::header::HOST, host)
                .body(Full::new(Bytes::new()))
                .unwrap();
            let response = client.request(request).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8_lossy(&body).into_owned()
        }
    };
    for _ in 0..3 {
        post("a.test").await;
    }
    assert_eq!(post("b.test").await, "1\n");
    assert_eq!(
        request(&client, port, "a.test", "/hits/home")
            .await
            .unwrap(),
        (200, "3\n".to_owned())
    );
    assert!(dev.interrupt().success());
}

fn reminder(port: u16, state: &str) -> Dev {
    Dev::start(&[
        "examples/durable-reminder.js",
        "--durable-object",
        "REMINDER=Reminder",
        "--state",
        state,
        "--port",
        &port.to_string(),
    ])
}

/// `POST /remind/<name>?in=<ms>`: sets the object's alarm; its state after.
async fn remind(client: &HttpClient, port: u16, name: &str, delay_ms: i64) -> serde_json::Value {
    let request = http::Request::builder()
        .method("POST")
        .uri(format!(
            "http://127.0.0.1:{port}/remind/{name}?in={delay_ms}"
        ))
        .header(http::header::HOST, HOST)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap()
}

/// Waits (within the deadline) until object `name` has rung `times` and
/// the delivery is settled.
async fn rung(client: &HttpClient, port: u16, name: &str, times: u64) -> serde_json::Value {
    let deadline = std::time::Instant::now() + support::DEADLINE;
    loop {
        let (status, body) = request(client, port, HOST, &format!("/remind/{name}"))
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        let state: serde_json::Value = serde_json::from_str(&body).unwrap();
        // Its writes show before the delivery is settled (the alarm gone).
        if state["rang"] == times && state["alarm"].is_null() {
            return state;
        }
        assert!(std::time::Instant::now() < deadline, "never rang: {state}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The reminder example: an alarm set over HTTP in the past rings once; one
/// set for later, with `isolane dev` stopped before it is due, rings after
/// the restart.
#[tokio::test]
async fn dev_alarms_ring_once_and_ring_after_a_restart() {
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().join("state").to_str().unwrap().to_owned();
    let port = free_port().unwrap();
    let mut dev = reminder(port, &state_arg);
    let client = client();
    when_ready(&client, &mut dev, port, HOST, "/remind/now").await;
    let set = remind(&client, port, "now", -1000).await;
    assert!(set["alarm"].is_number(), "{set}");
    rung(&client, port, "now", 1).await;
    // Later: due after the restart below.
    let later = remind(&client, port, "later", 3000).await;
    assert!(later["alarm"].is_number(), "{later}");
    // Another alarm rings after `now`'s: `now` rang once, not again.
    remind(&client, port, "next", 0).await;
    rung(&client, port, "next", 1).await;
    assert_eq!(rung(&client, port, "now", 1).await["rang"], 1);
    assert!(dev.interrupt().success());

    let port = free_port().unwrap();
    let mut dev = reminder(port, &state_arg);
    when_ready(&client, &mut dev, port, HOST, "/remind/later").await;
    rung(&client, port, "later", 1).await;
    assert!(dev.interrupt().success());
}
