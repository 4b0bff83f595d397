//! Shared helpers: a node service on a real engine, a client, calls.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use isolane_engine::{Engine, EngineConfig, EngineObserver, Limits, PoolMode, WorkerBundle};
use isolane_node::{Admission, BundleIndex, ListenerMode, Listeners, NodeMetrics, NodeService};
use isolane_proto::Outcome;
use isolane_proto::health::pb::health_server::HealthServer;
use isolane_proto::health::server::{HealthReporter, HealthService};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{
    ExecuteRequest, ExecuteResponse, Header, RequestHead, ResponseEnd, ResponseHead,
    execute_response::Frame as Out,
};
use tokio_util::sync::CancellationToken;
use tonic::Streaming;
use tonic::transport::{Channel, Endpoint};

/// How a test node is shaped.
#[derive(Clone, Debug)]
pub struct Shape {
    pub threads: usize,
    pub max_inflight: usize,
    pub revision_wait: Duration,
    pub listeners: ListenerMode,
    pub pin: bool,
    /// Serve mutual TLS with this configuration (plaintext when `None`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            threads: 2,
            max_inflight: 16,
            revision_wait: Duration::from_millis(200),
            listeners: ListenerMode::Single,
            pin: false,
            tls: None,
        }
    }
}

/// A node service on a real engine, listening on local ports.
pub struct TestNode {
    pub bundles: Arc<BundleIndex>,
    pub admission: Arc<Admission>,
    pub registry: prometheus::Registry,
    pub addrs: Vec<SocketAddr>,
    _engine: Engine,
    stop: CancellationToken,
}

impl Drop for TestNode {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub fn start(shape: Shape) -> TestNode {
    let registry = prometheus::Registry::new();
    let metrics = Arc::new(NodeMetrics::register(&registry, shape.threads).unwrap());
    let observer: Arc<dyn EngineObserver> = metrics.clone();
    let engine = Engine::start(
        EngineConfig {
            families: isolane_runtime::families(),
            threads: shape.threads,
            pin_threads: shape.pin,
            pool_mode: PoolMode::Pinned,
            spare_isolates: 1,
            queue_depth: shape.max_inflight,
            ..EngineConfig::default()
        },
        observer,
    )
    .expect("the engine starts");
    let bundles = Arc::new(BundleIndex::new(3));
    let admission = Admission::new(shape.threads, shape.max_inflight, metrics.clone());
    let service = NodeService::new(
        "test-node".into(),
        engine.clone(),
        bundles.clone(),
        admission.clone(),
        metrics,
        shape.revision_wait,
    );
    let listeners = Listeners::bind(
        shape.listeners,
        "127.0.0.1:0".parse().unwrap(),
        shape.threads,
    )
    .unwrap();
    let addrs = listeners.local_addrs().to_vec();
    let health = HealthServer::new(HealthService::from_health_reporter(HealthReporter::new()));
    let stop = CancellationToken::new();
    // The servers stop when the test node is dropped.
    drop(
        listeners
            .serve(service, health, &engine, stop.clone(), shape.tls.clone())
            .unwrap(),
    );
    TestNode {
        bundles,
        admission,
        registry,
        addrs,
        _engine: engine,
        stop,
    }
}

impl TestNode {
    /// A client of the listener serving `thread`.
    pub async fn client(&self, thread: usize) -> RuntimeClient<Channel> {
        let addr = self.addrs[thread % self.addrs.len()];
        connect(&format!("http://{addr}")).await
    }

    /// Puts a worker's bundle into the index; returns it.
    pub fn deploy(&self, id: &str, revision: &str, script: &str) -> WorkerBundle {
        self.deploy_with(id, revision, script, Limits::default())
    }

    pub fn deploy_with(
        &self,
        id: &str,
        revision: &str,
        script: &str,
        limits: Limits,
    ) -> WorkerBundle {
        let bundle = WorkerBundle {
            assets: None,
            id: id.into(),
            revision: revision.into(),
            script: script.into(),
            modules: None,
            env: BTreeMap::new(),
            json_env: BTreeMap::new(),
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
            limits,
            allowed_hosts: Vec::new(),
            compat: Default::default(),
        };
        self.bundles.insert(&format!("secret-{id}"), bundle.clone());
        bundle
    }

    /// Waits until exactly `count` requests hold slots of `thread`.
    pub async fn wait_in_flight(&self, thread: usize, count: usize, what: &str) {
        isolane_testenv::wait_until(what, Duration::from_secs(30), || {
            let reached = self.admission.in_flight(thread) == count;
            async move { reached.then_some(()) }
        })
        .await;
    }

    pub fn metrics_text(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap()
    }
}

pub async fn connect(endpoint: &str) -> RuntimeClient<Channel> {
    let channel = Endpoint::from_shared(endpoint.to_owned())
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("the node accepts connections");
    RuntimeClient::new(channel).max_decoding_message_size(16 << 20)
}

pub fn head(method: &str, worker_id: &str, revision: &str, thread: u32) -> RequestHead {
    RequestHead {
        method: method.into(),
        url: "https://worker.example/path?q=1".into(),
        headers: vec![Header::new("x-test", "yes")],
        worker_id: worker_id.into(),
        revision: revision.into(),
        thread,
        request_id: "req-1".into(),
        deadline_ms: 0,
        body_length: None,
        scheduled: None,
        prewarm: false,
        standby: false,
        whole_answer: false,
    }
}

/// A whole response: head, body bytes, end.
#[derive(Debug)]
pub struct Answer {
    pub head: ResponseHead,
    pub body: Vec<u8>,
    pub end: ResponseEnd,
    /// It came as one `whole` message.
    pub whole: bool,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head
            .headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| String::from_utf8_lossy(&h.value).into_owned())
    }
}

/// Sends a head and whole body, then reads the whole answer.
pub async fn call(
    client: &mut RuntimeClient<Channel>,
    head: RequestHead,
    body: &[&[u8]],
) -> Result<Answer, tonic::Status> {
    let mut frames = vec![ExecuteRequest::head(head)];
    frames.extend(
        body.iter()
            .map(|chunk| ExecuteRequest::body(Bytes::copy_from_slice(chunk))),
    );
    frames.push(ExecuteRequest::end());
    let responses = client
        .execute(tokio_stream::iter(frames))
        .await?
        .into_inner();
    collect(responses).await
}

pub async fn collect(mut responses: Streaming<ExecuteResponse>) -> Result<Answer, tonic::Status> {
    let mut head = None;
    let mut body = Vec::new();
    while let Some(message) = responses.message().await? {
        match message.frame.expect("every frame is set") {
            Out::Head(h) => {
                assert!(head.is_none(), "one head");
                head = Some(h);
            }
            Out::Body(chunk) => {
                assert!(head.is_some(), "the head comes first");
                body.extend_from_slice(&chunk);
            }
            Out::Socket(_) | Out::SocketAck(_) => {
                panic!("a socket frame on a call that opened no socket")
            }
            Out::End(end) => {
                assert!(responses.message().await?.is_none(), "end is last");
                return Ok(Answer {
                    head: head.expect("a head before the end"),
                    body,
                    end,
                    whole: false,
                });
            }
            Out::Whole(whole) => {
                assert!(head.is_none(), "a whole answer is the first frame");
                assert!(
                    responses.message().await?.is_none(),
                    "a whole answer is all"
                );
                return Ok(Answer {
                    head: whole.head.expect("a whole answer has a head"),
                    body: whole.body.to_vec(),
                    end: ResponseEnd {
                        outcome: Outcome::Ok.into(),
                        ..ResponseEnd::default()
                    },
                    whole: true,
                });
            }
        }
    }
    panic!("the stream ended without an end frame");
}

/// The next frame of a response stream.
pub async fn next_frame(responses: &mut Streaming<ExecuteResponse>) -> Out {
    responses
        .message()
        .await
        .expect("the stream stays healthy")
        .expect("another frame follows")
        .frame
        .expect("every frame is set")
}

pub const HELLO: &str = "export default { fetch(request, env) {
    return new Response('hello from ' + new URL(request.url).pathname + ' ' + request.headers.get('x-test'),
        { headers: { 'x-worker': 'hello' } });
} };";

/// Echoes the request body chunk by chunk, then a summary line.
pub const ECHO: &str = "export default { async fetch(request) {
    let chunks = 0, bytes = 0;
    const reader = request.body.getReader();
    const out = new ReadableStream({
        async pull(controller) {
            const { value, done } = await reader.read();
            if (done) { controller.enqueue(new TextEncoder().encode('|' + chunks + ' chunks ' + bytes + ' bytes')); controller.close(); return; }
            chunks++; bytes += value.length;
            controller.enqueue(value);
        },
    });
    return new Response(out);
} };";

pub const THROWS: &str = "export default { fetch() { throw new Error('secret detail'); } };";

pub const SPINS: &str = "export default { fetch() { for (;;) {} } };";

/// Answers only after the request body has ended.
pub const WAITS_FOR_BODY: &str = "export default { async fetch(request) {
    const text = await request.text();
    return new Response('got ' + text.length);
} };";

/// Never answers (until a limit or deadline).
pub const HANGS: &str = "export default { fetch() { return new Promise(() => {}); } };";
