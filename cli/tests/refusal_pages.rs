//! One error page, whichever way a request travels: the same refusals
//! answered by `isolane dev` (the real binary: router and node in one
//! process, no frames) and by a router that reaches its node over gRPC (the
//! cluster's way, both in this test's process on a real engine) are equal
//! byte for byte — status line, every header but `date` and `x-request-id`,
//! and body. The engine and the node hand refusals on typed; the router
//! renders the page once.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{Engine, EngineConfig, EngineObserver, Limits, WorkerBundle};
use isolane_node::{Admission, BundleIndex, NodeMetrics, NodeService};
use isolane_router::metrics::RouterMetrics;
use isolane_router::routes::RoutableWorker;
use isolane_router::split::Split;
use isolane_router::{Proxy, ProxyConfig};
use isolane_testenv::wait_until;
use isolane_worker::{Claim, Route, WorkerKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port};

/// One Worker with a route for each refusal, and a WebSocket echo.
const SCRIPT: &str = "export default { fetch(request) {
  const path = new URL(request.url).pathname;
  if (request.headers.get('upgrade') === 'websocket') {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    return new Response(null, { status: 101, webSocket: client });
  }
  if (path === '/throw') throw new TypeError('a secret the client never sees');
  if (path === '/spin') { for (;;) {} }
  return new Response('ok');
} };";

const HOST: &str = "pages.test";

/// Each request, raw, whose answer both ways must be equal.
fn requests() -> Vec<(&'static str, String)> {
    let get = |path: &str, host: &str| format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n\r\n");
    vec![
        ("exception", get("/throw", HOST)),
        ("cpu_limit", get("/spin", HOST)),
        (
            "body_too_large",
            format!(
                "POST /ok HTTP/1.1\r\nhost: {HOST}\r\ncontent-length: {}\r\n\r\n",
                200u64 << 20
            ),
        ),
        ("no_route", get("/", "nobody.test")),
    ]
}

#[tokio::test]
async fn a_refusal_is_the_same_page_in_isolane_dev_and_through_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: pages, namespace: dev }}\nspec:\n  routes: [{{ host: {HOST} }}]\n  limits: {{ cpuMs: 50 }}\n  script: |\n{}\n",
        SCRIPT
            .lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::fs::write(dir.path().join("pages.yaml"), yaml).unwrap();
    let dev_port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), dev_port, &[]);
    let ready = wait_until("isolane dev to answer", DEADLINE, || {
        let exited = dev.process.try_exit();
        async move {
            assert!(exited.is_none(), "isolane dev exited early: {exited:?}");
            exchange(dev_port, &get_ok()).await.ok()
        }
    })
    .await;
    let revision = header(&ready, "x-isolane-revision").expect("dev names its revision");
    let cluster = Cluster::start(&revision).await;
    let served = wait_until("the router to route the Worker", DEADLINE, || async {
        let answer = exchange(cluster.port, &get_ok()).await.ok()?;
        answer.starts_with("HTTP/1.1 200").then_some(answer)
    })
    .await;
    assert_eq!(comparable(&served), comparable(&ready));

    for (reason, request) in requests() {
        let in_dev = exchange(dev_port, &request).await.unwrap();
        let through_node = exchange(cluster.port, &request).await.unwrap();
        assert!(
            in_dev.contains(&format!("x-isolane-reason: {reason}\r\n")),
            "{reason}: {in_dev}"
        );
        assert!(!in_dev.contains("secret"), "{in_dev}");
        assert_eq!(comparable(&through_node), comparable(&in_dev), "{reason}");
        eprintln!("{reason}: equal\n{}", comparable(&in_dev));
    }
    // A client over its share of the Worker's WebSockets (16, held once
    // half the Worker's 128 are taken): 429 with Retry-After, the same both
    // ways.
    let (in_dev, _held) = over_the_socket_share(dev_port).await;
    let (through_node, _held_too) = over_the_socket_share(cluster.port).await;
    assert!(in_dev.starts_with("HTTP/1.1 429"), "{in_dev}");
    assert!(in_dev.contains("retry-after: 1\r\n"), "{in_dev}");
    assert_eq!(comparable(&through_node), comparable(&in_dev));
    assert!(dev.interrupt().success());
}

fn get_ok() -> String {
    format!("GET /ok HTTP/1.1\r\nhost: {HOST}\r\n\r\n")
}

/// The response without what differs by nature between two servers: the
/// `date` and the generated `x-request-id`.
fn comparable(response: &str) -> String {
    response
        .split("\r\n")
        .filter(|line| {
            let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
            name != "date" && name != "x-request-id"
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

fn header(response: &str, name: &str) -> Option<String> {
    response.split("\r\n").find_map(|line| {
        let (n, v) = line.split_once(": ")?;
        n.eq_ignore_ascii_case(name).then(|| v.to_owned())
    })
}

/// Sends `request` on a new connection; the answer's head and body, as sent.
async fn exchange(port: u16, request: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.write_all(request.as_bytes()).await?;
    read_answer(&mut stream).await
}

/// One answer from `stream`: its head, then `content-length` bytes of body.
async fn read_answer(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = header(&head, "content-length").map_or(0, |l| l.parse::<usize>().unwrap());
    let mut body = vec![0u8; length];
    tokio::time::timeout(DEADLINE, stream.read_exact(&mut body))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    Ok(head + &String::from_utf8_lossy(&body))
}

/// Opens the client's share of sockets (kept open), then the refused one's
/// answer.
async fn over_the_socket_share(port: u16) -> (String, Vec<TcpStream>) {
    let upgrade = format!(
        "GET /ws HTTP/1.1\r\nhost: {HOST}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n"
    );
    let mut held = Vec::new();
    loop {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(upgrade.as_bytes()).await.unwrap();
        let answer = read_answer(&mut stream).await.unwrap();
        if !answer.starts_with("HTTP/1.1 101") {
            return (answer, held);
        }
        held.push(stream);
        // One address alone takes at most half the budget.
        assert!(held.len() <= 64, "no share: {answer}");
    }
}

/// A node on a real engine behind gRPC, and a router that reaches it the
/// cluster's way (no Kubernetes: its member and Worker are set directly).
struct Cluster {
    port: u16,
    _engine: Engine,
    stop: CancellationToken,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Cluster {
    async fn start(revision: &str) -> Self {
        let registry = prometheus::Registry::new();
        let metrics = Arc::new(NodeMetrics::register(&registry, 1).unwrap());
        let observer: Arc<dyn EngineObserver> = metrics.clone();
        let config = EngineConfig {
            families: isolane_runtime::families(),
            threads: 1,
            ..EngineConfig::default()
        };
        let engine = Engine::start(config.clone(), observer).unwrap();
        let bundles = Arc::new(BundleIndex::new(3));
        bundles.insert("secret-pages", bundle(revision));
        let admission = Admission::new(1, config.queue_depth, metrics.clone());
        let service = NodeService::new(
            "local".into(),
            engine.clone(),
            bundles,
            admission,
            metrics,
            Duration::from_secs(2),
        );
        let stop = CancellationToken::new();
        let grpc: SocketAddr = format!("127.0.0.1:{}", free_port().unwrap())
            .parse()
            .unwrap();
        let serving = tonic::transport::Server::builder()
            .add_service(service.into_server())
            .serve_with_shutdown(grpc, stop.clone().cancelled_owned());
        tokio::spawn(serving);
        let router_metrics = Arc::new(RouterMetrics::register(&registry, 10).unwrap());
        let proxy = Proxy::builder(ProxyConfig::default(), router_metrics).build();
        proxy.set_members(vec![isolane_membership::NodeMember {
            name: "local".into(),
            endpoints: vec![format!("http://{grpc}")],
            threads: 1,
            draining: false,
            expires_at: None,
            crash: None,
        }]);
        proxy.set_workers(vec![RoutableWorker {
            claim: Claim {
                worker: WorkerKey::new("dev", "pages"),
                since: None,
                routes: vec![Route::new(HOST, "/")],
            },
            split: Split::single(revision),
            triggers: None,
        }]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let grace = Duration::from_secs(1);
        tokio::spawn(isolane_router::server::serve(
            listener,
            proxy,
            stop.clone(),
            grace,
        ));
        Cluster {
            port,
            _engine: engine,
            stop,
        }
    }
}

/// The Worker as `isolane dev` runs it, at dev's revision.
fn bundle(revision: &str) -> WorkerBundle {
    WorkerBundle {
        assets: None,
        id: "dev/pages".into(),
        revision: revision.into(),
        script: SCRIPT.into(),
        modules: None,
        env: BTreeMap::new(),
        kv: BTreeMap::new(),
        durable_objects: BTreeMap::new(),
        sqlite_classes: Default::default(),
        hosted_objects: Default::default(),
        services: Default::default(),
        dispatchers: Default::default(),
        queues: Default::default(),
        d1: Default::default(),
        images: Default::default(),
        loaders: Default::default(),
        no_network: false,
        cpu_ms_per_second: None,
        r2: Default::default(),
        workflows: Default::default(),
        queue_consumers: Default::default(),
        limits: Limits {
            cpu_ms: 50,
            ..Limits::default()
        },
        allowed_hosts: Vec::new(),
        compat: Default::default(),
        json_env: Default::default(),
    }
}
