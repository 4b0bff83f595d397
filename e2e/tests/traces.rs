//! OpenTelemetry traces across the fleet (issue 34, docs/tracing.md): a real
//! OpenTelemetry Collector (isolane_testenv::Collector), a kube-apiserver,
//! the operator, a runtime node and the router as processes, each exporting
//! to the collector: the router and operator over OTLP/gRPC, the node over
//! OTLP/HTTP (protobuf), so both transports are exercised.
//!
//! A client request carrying a W3C `traceparent` gives one trace holding
//! the router's, the node's, the handler's and the subrequest's spans, each
//! the child of the one before, with the Worker's namespace, name and
//! revision; the Worker's subrequest reaches its server with a
//! `traceparent` naming the subrequest's span, and the client's `tracestate`.
//!
//! A real Prometheus with exemplar storage scrapes the router and the node
//! (OpenMetrics, as it asks): the request latency histograms of both carry
//! the traced request's trace id as an exemplar, the id the collector got.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::loopback;
use isolane_e2e::operator::OperatorOptions;
use isolane_e2e::prometheus::{self, PrometheusOptions};
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::collector::ReceivedSpan;
use isolane_testenv::{Collector, ControlPlane, free_port, wait_until};

const SETTLE: Duration = Duration::from_secs(90);
/// The client's trace and span: the trace every span must join.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// The client's vendor trace state, which goes along with the context.
const CLIENT_STATE: &str = "vendor=opaque-1";

/// The `traceparent` and `tracestate` headers the subrequest server received.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A loopback HTTP server recording each request's `traceparent` and
/// `tracestate`.
async fn start_upstream() -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let shared = seen.clone();
    let addr = loopback::serve(move |request: http::Request<hyper::body::Incoming>| {
        let seen = shared.clone();
        async move {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned()
            };
            let context = (header("traceparent"), header("tracestate"));
            seen.lock().expect("seen lock").push(context);
            loopback::ok("upstream")
        }
    })
    .await;
    (addr, seen)
}

fn otel_env(service: &str, endpoint: &str, protocol: &str) -> Vec<(String, String)> {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
        ("OTEL_SERVICE_NAME", service),
        // Short batches, so the test does not wait the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec()
}

/// The one span named `name` in `spans`.
fn one<'s>(spans: &'s [ReceivedSpan], name: &str) -> &'s ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one {name} span in {spans:#?}");
    found[0]
}

fn assert_child(child: &ReceivedSpan, parent: &ReceivedSpan) {
    assert_eq!(
        child.parent_span_id, parent.span_id,
        "{} is a child of {}: {child:#?} {parent:#?}",
        child.name, parent.name
    );
}

fn assert_worker(span: &ReceivedSpan, revision: &str) {
    let attribute = |key: &str| span.attributes.get(key).map(String::as_str);
    assert_eq!(attribute("worker.namespace"), Some("tenant-a"), "{span:#?}");
    assert_eq!(attribute("worker.name"), Some("caller"), "{span:#?}");
    assert_eq!(attribute("worker.id"), Some("tenant-a/caller"), "{span:#?}");
    assert_eq!(attribute("worker.revision"), Some(revision), "{span:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_traceparent_gives_one_trace_across_router_node_and_subrequest() {
    let collector = Collector::start().expect("the collector starts");
    let (upstream, seen) = start_upstream().await;
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &["tenant-a"]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let grpc = collector.grpc_endpoint();
    let options = ClusterOptions {
        nodes: 1,
        node: NodeOptions {
            extra_args: vec!["--egress-allow".to_owned(), "127.0.0.1/32".to_owned()],
            extra_env: otel_env("isolane-node", &collector.http_endpoint(), "http/protobuf"),
            ..NodeOptions::default()
        },
        router: RouterOptions {
            extra_env: otel_env("isolane-router", &grpc, "grpc"),
            ..RouterOptions::default()
        },
        operator: OperatorOptions {
            extra_env: otel_env("isolane-operator", &grpc, "grpc"),
            ..OperatorOptions::default()
        },
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let client = cp.client();
    let script = format!(
        "export default {{ async fetch(request) {{
            const answer = await fetch('http://{upstream}/sub');
            return new Response('called ' + (await answer.text()));
        }} }};"
    );
    workers::apply(
        &client,
        "tenant-a",
        &inline_worker("caller", &script, &["a.test"]),
    )
    .await;
    let ready = workers::wait_ready(&client, "tenant-a", "caller", SETTLE).await;
    let revision = ready
        .status
        .and_then(|s| s.revision)
        .expect("a ready Worker has a revision");
    let ingress = Ingress::new(cluster.ingress());
    // Served once without a trace context (placement settles, the isolate
    // is made), so the traced request is one attempt on one node.
    wait_until("the Worker to answer", SETTLE, || {
        let ingress = ingress.clone();
        async move {
            let reply = ingress.get("a.test", "/warm").await.ok()?;
            (reply.status == 200).then_some(())
        }
    })
    .await;
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let reply = ingress
        .get_with(
            "a.test",
            "/traced",
            &[("traceparent", &traceparent), ("tracestate", CLIENT_STATE)],
        )
        .await
        .expect("the traced request is answered");
    assert_eq!(reply.status, 200, "{reply:?}");

    let names = [
        "router.request",
        "router.place",
        "router.attempt",
        "node.execute",
        "node.admission",
        "node.bundle",
        "node.handler",
        "engine.isolate",
        "worker.fetch",
    ];
    let spans = wait_until("the trace's spans at the collector", SETTLE, || {
        let spans: Vec<ReceivedSpan> = collector
            .spans()
            .into_iter()
            .filter(|s| s.trace_id == CLIENT_TRACE)
            .collect();
        let complete = names.iter().all(|n| spans.iter().any(|s| s.name == *n));
        async move { complete.then_some(spans) }
    })
    .await;
    let by_service: BTreeMap<&str, Vec<&str>> =
        spans.iter().fold(BTreeMap::new(), |mut map, span| {
            map.entry(span.service.as_str())
                .or_default()
                .push(span.name.as_str());
            map
        });
    println!("trace {CLIENT_TRACE}: {by_service:?}");

    let request = one(&spans, "router.request");
    let attempt = one(&spans, "router.attempt");
    let execute = one(&spans, "node.execute");
    let handler = one(&spans, "node.handler");
    let fetch = one(&spans, "worker.fetch");
    assert_eq!(request.parent_span_id, CLIENT_SPAN, "{request:#?}");
    assert_child(attempt, request);
    assert_child(execute, attempt);
    assert_child(handler, execute);
    assert_child(fetch, handler);
    // Placement, admission, the revision's bundle and the isolate: each a
    // span where it happens. The traced request found its isolate warm.
    assert_child(one(&spans, "router.place"), request);
    assert_child(one(&spans, "node.admission"), execute);
    assert_child(one(&spans, "node.bundle"), execute);
    let isolate = one(&spans, "engine.isolate");
    assert_child(isolate, handler);
    assert!(
        spans.iter().all(|s| s.name != "engine.cold_start"),
        "{spans:#?}"
    );
    // The first request (the router sampled it, a trace of its own) made
    // the isolate: its cold start is a child of its isolate span.
    wait_until(
        "the first request's cold start at the collector",
        SETTLE,
        || {
            let all = collector.spans();
            let found = all.iter().any(|cold| {
                cold.name == "engine.cold_start"
                    && cold.trace_id != CLIENT_TRACE
                    && all
                        .iter()
                        .any(|s| s.name == "engine.isolate" && s.span_id == cold.parent_span_id)
            });
            async move { found.then_some(()) }
        },
    )
    .await;
    assert_eq!(request.service, "isolane-router");
    assert_eq!(attempt.service, "isolane-router");
    assert_eq!(execute.service, "isolane-node");
    assert_eq!(fetch.service, "isolane-node");
    assert_eq!(
        (request.kind, attempt.kind, execute.kind, fetch.kind),
        (2, 3, 2, 3)
    );
    assert_worker(request, &revision);
    assert_worker(execute, &revision);
    assert_eq!(request.attributes["http.request.method"], "GET");
    assert_eq!(request.attributes["http.response.status_code"], "200");
    assert_eq!(fetch.attributes["http.response.status_code"], "200");
    assert_eq!(
        fetch.attributes["url.full"],
        format!("http://{upstream}/sub")
    );

    // The subrequest carried the subrequest span's context, and the
    // client's trace state.
    let want = (
        format!("00-{CLIENT_TRACE}-{}-01", fetch.span_id),
        CLIENT_STATE.to_owned(),
    );
    let received = seen.lock().expect("seen lock").clone();
    assert!(received.contains(&want), "{want:?} in {received:?}");

    exemplars_name_the_trace(&cluster, dir.path(), &collector).await;

    // The operator exports its reconciles too.
    wait_until("the operator's spans at the collector", SETTLE, || {
        let found = collector
            .spans()
            .iter()
            .any(|s| s.service == "isolane-operator" && s.name == "reconcile");
        async move { found.then_some(()) }
    })
    .await;
    cluster.shutdown();
}

/// Prometheus (exemplar storage on) scrapes the router and the node: each
/// one's request latency histogram has the traced request's trace id as an
/// exemplar, a trace the collector holds.
async fn exemplars_name_the_trace(cluster: &Cluster, dir: &std::path::Path, collector: &Collector) {
    let listen: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let targets = [
        ("isolane-router", cluster.router.admin),
        ("isolane-node", cluster.nodes[0].admin),
    ];
    let options = PrometheusOptions {
        targets: &targets,
        rules: None,
        features: &["exemplar-storage"],
    };
    let prometheus_dir = dir.join("prometheus");
    std::fs::create_dir_all(&prometheus_dir).expect("prometheus dir");
    let mut server = prometheus::start(&prometheus_dir, listen, &options).await;
    for metric in [
        "isolane_router_request_duration_seconds_bucket",
        "isolane_node_request_duration_seconds_bucket",
    ] {
        let what = format!("the exemplars of {metric} in Prometheus");
        let ids = wait_until(&what, SETTLE, || async {
            let ids = prometheus::exemplar_trace_ids(listen, metric).await.ok()?;
            ids.iter().any(|id| id == CLIENT_TRACE).then_some(ids)
        })
        .await;
        println!("{metric} exemplars: {ids:?}");
        // Each exemplar names a trace that reached the collector.
        let what = format!("the traces of {metric}'s exemplars at the collector");
        wait_until(&what, SETTLE, || {
            let traced: Vec<String> = collector.spans().into_iter().map(|s| s.trace_id).collect();
            let all = ids.iter().all(|id| traced.contains(id));
            async move { all.then_some(()) }
        })
        .await;
    }
    server.terminate(Duration::from_secs(10));
}
