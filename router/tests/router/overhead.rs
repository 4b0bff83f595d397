//! What the router adds to a request: the same fake node called directly over
//! gRPC and through the router over HTTP/1.1, sequentially (latency) and with
//! 32 requests in flight (throughput). A measurement, not a check: run with
//!
//! ```text
//! cargo test --release -p isolane-router --test router overhead -- --ignored --nocapture
//! ```

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{ExecuteRequest, RequestHead};
use isolane_router::ProxyConfig;
use isolane_router::server::{self, RouterWorkers};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::fake_node::FakeNode;
use crate::support::{proxy, worker};

const SEQUENTIAL: usize = 5_000;
const CONCURRENT: usize = 32;
const PER_TASK: usize = 1_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn report(what: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let p50 = percentile(&samples, 0.5);
    eprintln!(
        "{what:>28}: p50 {:>7.1} µs  p99 {:>7.1} µs",
        p50.as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6
    );
    p50
}

async fn direct_call(channel: Channel) {
    let mut client = RuntimeClient::new(channel);
    let frames = futures::stream::iter([
        ExecuteRequest::head(RequestHead {
            method: "GET".into(),
            url: "http://bench.test/".into(),
            worker_id: "ns/bench".into(),
            revision: "r1".into(),
            ..RequestHead::default()
        }),
        ExecuteRequest::end(),
    ]);
    let mut stream = client.execute(frames).await.unwrap().into_inner();
    while stream.next().await.is_some() {}
}

async fn routed_call(client: &Client<HttpConnector, Full<Bytes>>, url: &str) {
    let request = Request::get(url)
        .header("host", "bench.test")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert!(response.status().is_success());
    response.into_body().collect().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --release --ignored --nocapture"]
async fn overhead() {
    let node = FakeNode::start("bench-node").await;
    let channel = Channel::from_shared(format!("http://{}", node.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();

    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    proxy.set_members(vec![node.member(1)]);
    proxy.set_workers(vec![worker("ns/bench", "r1", "bench.test", "/")]);
    let listener = server::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let workers = RouterWorkers::spawn(
        listener,
        NonZeroUsize::new(1).unwrap(),
        proxy,
        shutdown.clone(),
        Duration::from_secs(1),
    )
    .unwrap();
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);

    for _ in 0..500 {
        direct_call(channel.clone()).await;
        routed_call(&client, &url).await;
    }
    let mut direct = Vec::with_capacity(SEQUENTIAL);
    let mut routed = Vec::with_capacity(SEQUENTIAL);
    for _ in 0..SEQUENTIAL {
        let started = Instant::now();
        direct_call(channel.clone()).await;
        direct.push(started.elapsed());
        let started = Instant::now();
        routed_call(&client, &url).await;
        routed.push(started.elapsed());
    }
    let d = report("direct gRPC, sequential", direct);
    let r = report("through router, sequential", routed);
    eprintln!(
        "{:>28}: {:.1} µs at p50",
        "router overhead",
        (r.as_secs_f64() - d.as_secs_f64()) * 1e6
    );

    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let channel = channel.clone();
            tokio::spawn(async move {
                for _ in 0..PER_TASK {
                    direct_call(channel.clone()).await;
                }
            })
        })
        .collect();
    futures::future::join_all(tasks).await;
    let direct_rps = (CONCURRENT * PER_TASK) as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                for _ in 0..PER_TASK {
                    routed_call(&client, &url).await;
                }
            })
        })
        .collect();
    futures::future::join_all(tasks).await;
    let routed_rps = (CONCURRENT * PER_TASK) as f64 / started.elapsed().as_secs_f64();
    eprintln!("{:>28}: {direct_rps:.0} req/s", "direct gRPC, 32 in flight");
    eprintln!(
        "{:>28}: {routed_rps:.0} req/s (1 router worker)",
        "through router, 32 in flight"
    );

    drop(client);
    shutdown.cancel();
    tokio::task::spawn_blocking(move || workers.join())
        .await
        .unwrap();
}
