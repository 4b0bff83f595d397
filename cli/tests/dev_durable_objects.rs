//! Durable Objects through `isolane dev` as a user runs it: the real
//! binary, real HTTP, the SQLite file under `--state`. The counter example
//! (examples/durable-counter.js) incremented by 400 concurrent requests
//! ends at exactly 400, each count answered once; the count outlives a
//! restart.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

#[path = "support/dev.rs"]
mod support;
use support::{Dev, HttpClient, client, free_port, request, when_ready};

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

/// `POST /hits/<name>`: the count it answered.
async fn increment(client: &HttpClient, port: u16, name: &str) -> u32 {
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("http://127.0.0.1:{port}/hits/{name}"))
        .header(http::header::HOST, HOST)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).trim().parse().unwrap()
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
