//! The Grafana dashboards and the alert rules against the metrics the binaries
//! really export.
//!
//! - [`dashboards_query_only_metrics_the_binaries_export`]: every panel of every
//!   dashboard (charts/isolane/dashboards) is well formed and names only metrics
//!   that appear in the operator's, node's and router's source; so do the alerts.
//! - [`every_panel_query_returns_data_from_a_running_system`]: the operator, a
//!   runtime node and the router run as processes (from the target directory,
//!   built if needed) against a real kube-apiserver, with Workers applied and
//!   traffic sent, including Workers that throw, burn CPU past their limit and
//!   overload a thread, and WebSocket clients of an echo Worker (messages
//!   both ways, text and binary, and closes, one socket held open); each component's /metrics passes `promtool check
//!   metrics`; a real Prometheus scrapes the three admin ports and evaluates the
//!   alert rules; every panel query must return data (a non-NaN sample) through
//!   Prometheus's HTTP API before a deadline, and every alert rule must evaluate
//!   without error.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use isolane_crds::Worker;
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions, RouterOptions};
use isolane_e2e::http;
use isolane_e2e::operator::OperatorOptions;
use isolane_e2e::process::workspace_root;
use isolane_e2e::prometheus::{self, PrometheusOptions, query};
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::ControlPlane;
use isolane_testenv::{free_port, wait_until};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DASHBOARDS: [&str; 4] = ["overview", "workers", "nodes", "operator"];
/// Namespace of the test's Workers.
const NAMESPACE: &str = "demo";
/// The histograms that carry trace exemplars.
const EXEMPLAR_HISTOGRAMS: [&str; 2] = [
    "isolane_router_request_duration_seconds_bucket",
    "isolane_node_request_duration_seconds_bucket",
];

// === dashboards, statically ===

fn dashboard(name: &str) -> Value {
    let path = workspace_root().join(format!("charts/isolane/dashboards/{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
}

/// (dashboard, panel title, query) of every panel target.
fn panel_queries() -> Vec<(String, String, String)> {
    let mut queries = Vec::new();
    for name in DASHBOARDS {
        let dashboard = dashboard(name);
        for panel in dashboard["panels"].as_array().expect("panels") {
            if panel["type"] == "row" {
                continue;
            }
            let title = panel["title"].as_str().expect("a panel title").to_owned();
            for target in panel["targets"].as_array().expect("targets") {
                let expr = target["expr"].as_str().expect("an expr").to_owned();
                queries.push((name.to_owned(), title.clone(), expr));
            }
        }
    }
    queries
}

/// The alert rules the chart renders (deploy/alerts holds them; chart.rs keeps it in sync).
fn alert_rules() -> Vec<(String, String)> {
    let path = workspace_root().join("deploy/alerts/isolane.rules.yaml");
    let rules: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("read the rules"))
            .expect("rules parse");
    rules["groups"]
        .as_sequence()
        .expect("groups")
        .iter()
        .flat_map(|group| group["rules"].as_sequence().expect("rules"))
        .map(|rule| {
            (
                rule["alert"].as_str().expect("alert").to_owned(),
                rule["expr"].as_str().expect("expr").to_owned(),
            )
        })
        .collect()
}

/// The `isolane_*` identifiers in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("isolane_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// Every `"isolane_…"` string literal in the Rust sources under `dirs`.
fn exported_metrics(dirs: &[&str]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|dir| workspace_root().join(dir)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                stack.push(entry.expect("entry").path());
            }
        } else if path.extension() == Some(OsStr::new("rs")) {
            let source = std::fs::read_to_string(&path).expect("read source");
            for piece in source.split("\"isolane_").skip(1) {
                let name: String = piece
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if piece[name.len()..].starts_with('"') {
                    names.insert(format!("isolane_{name}"));
                }
            }
        }
    }
    names
}

fn is_exported(name: &str, exported: &BTreeSet<String>) -> bool {
    exported.contains(name)
        || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
            name.strip_suffix(suffix)
                .is_some_and(|base| exported.contains(base))
        })
}

#[test]
fn dashboards_query_only_metrics_the_binaries_export() {
    let exported = exported_metrics(&["operator/src", "runtime-node/src", "router/src"]);
    assert!(
        exported.len() > 20,
        "too few metrics found in the sources: {exported:?}"
    );
    let mut uids = BTreeSet::new();
    for name in DASHBOARDS {
        let dashboard = dashboard(name);
        let uid = dashboard["uid"].as_str().expect("uid");
        assert!(uids.insert(uid.to_owned()), "uid {uid} is used twice");
        let variables = dashboard["templating"]["list"]
            .as_array()
            .expect("templating");
        assert!(
            variables.iter().any(|v| v["name"] == "datasource"
                && v["type"] == "datasource"
                && v["query"] == "prometheus"),
            "{name}: the data source is not a template variable"
        );
        let mut exemplar_panels = 0;
        for panel in dashboard["panels"].as_array().expect("panels") {
            if panel["type"] == "row" {
                continue;
            }
            let title = panel["title"].as_str().unwrap_or("?");
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "{name}: {title}"
            );
            assert!(
                panel["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{name}: {title} has no description"
            );
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{name}: {title} has no query");
            for target in targets {
                assert_eq!(
                    target["datasource"]["uid"], "${datasource}",
                    "{name}: {title}"
                );
                // The histograms with exemplars show them (docs/metrics.md).
                let expr = target["expr"].as_str().unwrap_or("");
                if EXEMPLAR_HISTOGRAMS.iter().any(|h| expr.contains(h)) {
                    assert_eq!(target["exemplar"], true, "{name}: {title} shows exemplars");
                    exemplar_panels += 1;
                }
            }
        }
        // Where exemplars show, their traces open in an optional Tempo.
        if exemplar_panels > 0 {
            assert!(
                variables.iter().any(|v| v["name"] == "tempo"
                    && v["type"] == "datasource"
                    && v["query"] == "tempo"),
                "{name}: no tempo data source variable"
            );
        }
    }
    let mut unknown = Vec::new();
    for (dashboard, title, expr) in panel_queries() {
        let names = metric_names(&expr);
        assert!(
            !names.is_empty(),
            "{dashboard}: {title} queries no Isolane metric"
        );
        for metric in names
            .into_iter()
            .filter(|metric| !is_exported(metric, &exported))
        {
            unknown.push(format!("{dashboard} / {title}: {metric}"));
        }
    }
    for (alert, expr) in alert_rules() {
        for metric in metric_names(&expr)
            .into_iter()
            .filter(|metric| !is_exported(metric, &exported))
        {
            unknown.push(format!("alert {alert}: {metric}"));
        }
    }
    assert!(
        unknown.is_empty(),
        "metrics no binary exports:\n{}",
        unknown.join("\n")
    );
    // What each dashboard is for, by panel.
    let titles: BTreeMap<String, Vec<String>> =
        panel_queries()
            .into_iter()
            .fold(BTreeMap::new(), |mut map, (d, t, _)| {
                map.entry(d).or_default().push(t);
                map
            });
    for (dashboard, wanted) in [
        (
            "overview",
            &[
                "Requests per second",
                "Error ratio (5xx)",
                "Latency p50 / p99",
                "Cold starts per second",
                "Live nodes",
            ][..],
        ),
        (
            "workers",
            &[
                "Requests per second",
                "Error ratio (5xx)",
                "Latency p99",
                "WebSockets open",
                "WebSocket messages per second",
                "WebSocket bytes per second",
                "WebSocket closes by code",
            ],
        ),
        (
            "nodes",
            &[
                "Live isolates per thread",
                "Isolate cache hit ratio",
                "Evictions by reason",
                "Heap per thread",
                "CPU time per thread",
                "Terminations by reason",
                "Queue rejections by reason",
                "WebSockets open per thread",
            ],
        ),
        (
            "operator",
            &[
                "Reconciles per second by result",
                "Reconcile failures",
                "Workers by condition",
            ],
        ),
    ] {
        for title in wanted {
            assert!(
                titles[dashboard].iter().any(|t| t == title),
                "{dashboard} has no panel {title:?}"
            );
        }
    }
}

// === a running system ===

/// A Worker with `script` on host `<name>.test`, with `cpu_ms` as its CPU limit.
fn worker(name: &str, script: &str, cpu_ms: u32) -> Worker {
    let mut worker = inline_worker(name, script, &[&format!("{name}.test")]);
    worker.spec.limits.cpu_ms = cpu_ms;
    worker
}

/// The test's Workers: each drives some panels (errors, terminations,
/// evictions, rejections) to have data.
fn test_workers() -> Vec<Worker> {
    let fast = |text: &str| workers::hello_script(text);
    vec![
        worker("hello", &fast("hello"), 50),
        worker("api", &fast("api"), 50),
        worker("pages", &fast("pages"), 50),
        // 500: an exception in the handler.
        worker(
            "boom",
            "export default { fetch() { throw new Error(\"boom\"); } };\n",
            50,
        ),
        // 503: burns past its 5 ms CPU limit (a termination, and an eviction).
        worker("burn", "export default { fetch() { for (;;) {} } };\n", 5),
        // Echoes WebSocket messages (the WebSockets row).
        worker("socket", SOCKET_ECHO, 50),
        // Holds its thread's in-flight slots, so a burst is refused (overloaded).
        worker(
            "slow",
            "export default { async fetch() { await new Promise((r) => setTimeout(r, 300)); return new Response(\"slow\"); } };\n",
            50,
        ),
    ]
}

/// The echo Worker of docs/websockets.md.
const SOCKET_ECHO: &str = "export default { fetch(request) { if (request.headers.get('upgrade') !== 'websocket') return new Response('expected a WebSocket', { status: 426 }); const [client, server] = Object.values(new WebSocketPair()); server.accept(); server.addEventListener('message', (event) => server.send(event.data)); return new Response(null, { status: 101, webSocket: client }); } };\n";

/// One WebSocket client of `socket.test`: a text and a binary message
/// echoed, then a close with 1000, or every other round the connection
/// dropped without one (1006); whether both came back.
async fn socket_client(router: SocketAddr, round: u64) -> bool {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let exchange = async {
        let tcp = TcpStream::connect(router).await.ok()?;
        let (mut socket, _) = tokio_tungstenite::client_async("ws://socket.test/", tcp)
            .await
            .ok()?;
        for message in [
            Message::text(format!("round {round}")),
            Message::binary(vec![7u8; 512]),
        ] {
            socket.send(message.clone()).await.ok()?;
            (socket.next().await?.ok()? == message).then_some(())?;
        }
        if round.is_multiple_of(2) {
            let normal = tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal,
                reason: "done".into(),
            };
            socket.close(Some(normal)).await.ok()?;
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
        .is_some()
}

type HeldSocket = tokio_tungstenite::WebSocketStream<TcpStream>;

/// A WebSocket to `socket.test`, or `None` when it cannot be opened yet.
async fn open_socket(router: SocketAddr) -> Option<HeldSocket> {
    let exchange = async {
        let tcp = TcpStream::connect(router).await.ok()?;
        let (socket, _) = tokio_tungstenite::client_async("ws://socket.test/", tcp)
            .await
            .ok()?;
        Some(socket)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}

/// One message echoed on a held socket (so it never idles out); the socket
/// while it works, `None` once it does not.
async fn keep_open(mut socket: HeldSocket, round: u64) -> Option<HeldSocket> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let message = Message::text(format!("held {round}"));
    let exchange = async {
        socket.send(message.clone()).await.ok()?;
        (socket.next().await?.ok()? == message).then_some(())
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()?;
    Some(socket)
}

/// `GET /` with `Host: host` through the router; the status, or `None` when the
/// connection fails.
async fn get_host(router: SocketAddr, host: &str) -> Option<u16> {
    let exchange = async {
        let mut stream = TcpStream::connect(router).await.ok()?;
        let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.ok()?;
        let head = String::from_utf8_lossy(&raw);
        head.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}

/// Sends traffic until `stop`: every Worker in turn, bursts at the slow one,
/// and a new revision of the `churn` Worker each round, so that the operator
/// keeps reconciling (and the nodes replace revisions).
fn start_traffic(
    router: SocketAddr,
    client: kube::Client,
    hosts: Vec<String>,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
) {
    tokio::spawn(async move {
        let mut round = 0_u64;
        let mut held = None;
        while !stop.load(Ordering::Relaxed) {
            round += 1;
            let churn = worker(
                "churn",
                &workers::hello_script(&format!("revision {round}")),
                50,
            );
            workers::apply(&client, NAMESPACE, &churn).await;
            for host in &hosts {
                get_host(router, host).await;
                sent.fetch_add(1, Ordering::Relaxed);
            }
            socket_client(router, round).await;
            // One socket open throughout: a Worker has a series in the
            // per-Worker open gauge only while it has sockets open.
            held = match held {
                Some(socket) => keep_open(socket, round).await,
                None => open_socket(router).await,
            };
            let burst: Vec<_> = (0..8)
                .map(|_| tokio::spawn(get_host(router, "slow.test")))
                .collect();
            for request in burst {
                let _ = request.await;
            }
        }
    });
}

/// Whether a vector result has at least one sample that is a number.
fn has_number(result: &[Value]) -> bool {
    result.iter().any(|sample| {
        sample["value"][1]
            .as_str()
            .and_then(|value| value.parse::<f64>().ok())
            .is_some_and(|value| !value.is_nan())
    })
}

/// The query as Prometheus runs it: Grafana's `$__rate_interval` becomes 30s
/// (1 s scrapes), and every template variable (`$worker`, `$instance`) matches all.
fn concrete(expr: &str) -> String {
    let expr = expr.replace("$__rate_interval", "30s");
    let mut out = String::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                chars.next();
            }
            out.push_str(".+");
        } else {
            out.push(c);
        }
    }
    out
}

fn promtool_check_metrics(component: &str, exposition: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (hack/install-deps.sh installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("write the exposition");
    let output = child.wait_with_output().expect("promtool finishes");
    assert!(
        output.status.success(),
        "promtool check metrics on {component}'s /metrics:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One runtime node: 2 threads, one warm isolate each (so that Workers
/// sharing a thread evict each other) and 2 requests in flight per thread;
/// a router with 4 per-worker series re-ranked every 5 s.
fn cluster_options() -> ClusterOptions {
    ClusterOptions {
        nodes: 1,
        node: NodeOptions {
            threads: 2,
            isolates_per_thread: 1,
            max_inflight_per_thread: 2,
            lease_duration: Duration::from_secs(3),
            drain_timeout: Duration::from_secs(30),
            ..NodeOptions::default()
        },
        router: RouterOptions {
            extra_args: ["--max-worker-series", "4", "--worker-series-interval", "5s"]
                .map(str::to_owned)
                .to_vec(),
            ..RouterOptions::default()
        },
        operator: OperatorOptions::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_panel_query_returns_data_from_a_running_system() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let client = cp.client();

    // Operator, node and router, each ready (`isolane_e2e::cluster`).
    let cluster = Cluster::start(&cp, dir.path(), cluster_options()).await;
    let operator = &cluster.operator;
    let node_admin = cluster.nodes[0].admin;
    let (router_listen, router_admin) = (cluster.router.listen, cluster.router.admin);

    let workers = test_workers();
    for worker in &workers {
        workers::apply(&client, NAMESPACE, worker).await;
    }
    for worker in &workers {
        let name = worker.metadata.name.as_deref().expect("name");
        workers::wait_ready(&client, NAMESPACE, name, Duration::from_secs(60)).await;
    }
    // Served once the router and the node have caught up with the bundles.
    wait_until(
        "hello.test to answer 200 through the router",
        Duration::from_secs(60),
        || async { (get_host(router_listen, "hello.test").await == Some(200)).then_some(()) },
    )
    .await;

    // Every component's exposition is clean, as promtool sees it.
    for (component, admin) in [
        ("operator", operator.admin),
        ("node", node_admin),
        ("router", router_admin),
    ] {
        let response = http::get(admin, "/metrics")
            .await
            .expect("/metrics answers");
        assert_eq!(response.status, 200, "{component} /metrics");
        promtool_check_metrics(component, &response.body);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let hosts = workers
        .iter()
        .map(|worker| format!("{}.test", worker.metadata.name.as_deref().expect("name")))
        .collect();
    start_traffic(
        router_listen,
        client.clone(),
        hosts,
        Arc::clone(&stop),
        Arc::clone(&sent),
    );

    let prometheus_addr: SocketAddr =
        ([127, 0, 0, 1], free_port().expect("a free local port")).into();
    let targets = [
        ("isolane-operator", operator.admin),
        ("isolane-node", node_admin),
        ("isolane-router", router_admin),
    ];
    let prometheus_dir = dir.path().join("prometheus");
    std::fs::create_dir_all(&prometheus_dir).expect("prometheus dir");
    // Prometheus evaluates the alert rules too.
    let rules = workspace_root().join("deploy/alerts/isolane.rules.yaml");
    let options = PrometheusOptions {
        targets: &targets,
        rules: Some(&rules),
        features: &[],
    };
    let mut prometheus_process =
        prometheus::start(&prometheus_dir, prometheus_addr, &options).await;
    wait_until(
        "the three targets to be up",
        Duration::from_secs(60),
        || async {
            let up = query(prometheus_addr, "sum(up)").await.ok()?;
            (up.first()?["value"][1] == "3").then_some(())
        },
    )
    .await;

    // Every panel query returns a number; report all that do not by the deadline.
    let started = Instant::now();
    let deadline = Duration::from_secs(120);
    let mut pending: Vec<(String, String, String)> = panel_queries();
    let mut last_error: BTreeMap<String, String> = BTreeMap::new();
    let total = pending.len();
    while !pending.is_empty() && started.elapsed() < deadline {
        let mut still = Vec::new();
        for (dashboard, title, expr) in pending {
            match query(prometheus_addr, &concrete(&expr)).await {
                Ok(result) if has_number(&result) => {}
                Ok(result) => {
                    last_error.insert(expr.clone(), format!("no number: {result:?}"));
                    still.push((dashboard, title, expr));
                }
                Err(error) => {
                    last_error.insert(expr.clone(), error);
                    still.push((dashboard, title, expr));
                }
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let missing: Vec<String> = pending
        .iter()
        .map(|(dashboard, title, expr)| {
            format!(
                "{dashboard} / {title}: {}\n    {}",
                concrete(expr),
                last_error.get(expr).map_or("", String::as_str)
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {total} panel queries returned no data within {deadline:?} ({} requests sent):\n{}",
        missing.len(),
        sent.load(Ordering::Relaxed),
        missing.join("\n")
    );
    eprintln!(
        "all {total} panel queries returned data after {:.1}s ({} requests sent)",
        started.elapsed().as_secs_f64(),
        sent.load(Ordering::Relaxed)
    );

    // Every alert expression evaluates (in Prometheus's rule manager, and as a query).
    for (alert, expr) in alert_rules() {
        if let Err(error) = query(prometheus_addr, &expr).await {
            panic!("alert {alert} does not evaluate: {error}");
        }
    }
    wait_until(
        "every alert rule to have been evaluated without error",
        Duration::from_secs(30),
        || async {
            let rules = prometheus::api(prometheus_addr, "/api/v1/rules").await?;
            let rules: Vec<&Value> = rules["data"]["groups"]
                .as_array()?
                .iter()
                .flat_map(|group| group["rules"].as_array().into_iter().flatten())
                .collect();
            for rule in &rules {
                assert_ne!(rule["health"], "err", "alert rule failed: {rule}");
            }
            (rules.len() == alert_rules().len() && rules.iter().all(|rule| rule["health"] == "ok"))
                .then_some(())
        },
    )
    .await;

    stop.store(true, Ordering::Relaxed);
    prometheus_process.terminate(Duration::from_secs(10));
    cluster.shutdown();
}
