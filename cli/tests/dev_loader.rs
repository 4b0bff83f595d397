//! Worker Loader bindings (Dynamic Workers, docs/loader.md) through
//! `isolane dev --workers` as a user runs it: the real binary, real HTTP,
//! one engine thread. The caller (`compat/apps/loader/caller.js`) loads
//! code of ES, CommonJS, text, JSON, data and Wasm modules and calls it by
//! fetch and JS RPC; workerd serving the same caller with its own
//! `workerLoader` binding answers the same. Thousands of never-seen ids
//! through one caller each answer correctly while the process's memory
//! stays bounded; hostile loaded code ends at its own lowered limits with
//! an error the caller catches, while a neighbour on the same thread
//! answers before, during and after; code loaded with `globalOutbound:
//! null` has no network.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use isolane_testenv::workerd;
use support::{Dev, free_port, request};

const CALLER: &str = include_str!("../../compat/apps/loader/caller.js");

/// The neighbour on the same thread, on its own route.
const NEIGHBOUR: &str = "export default { fetch() { return new Response('neighbour ok'); } };\n";

/// A Worker of the caller's namespace, bound to it as `SVC`: what loaded
/// code reaches when the caller hands it on.
const BACKEND: &str = "import { WorkerEntrypoint } from 'cloudflare:workers';\nexport default class extends WorkerEntrypoint {\n  fetch(request) { return new Response('backend ' + new URL(request.url).pathname); }\n  hello(who) { return 'hello ' + who; }\n}\n";

/// Never-seen ids asked through the one caller.
const IDS: usize = 10_000;

fn indent(js: &str) -> String {
    js.lines().map(|l| format!("    {l}\n")).collect()
}

fn folder() -> String {
    let caller = format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: caller, namespace: platform }}\nspec:\n  routes: [{{ host: loader.test }}]\n  bindings: [{{ name: LOADER, workerLoader: {{}} }}, {{ name: SVC, service: {{ name: backend }} }}]\n  script: |\n{}",
        indent(CALLER)
    );
    let neighbour = format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: neighbour, namespace: neighbours }}\nspec:\n  routes: [{{ host: neighbour.test }}]\n  script: |\n{}",
        indent(NEIGHBOUR)
    );
    let backend = format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: backend, namespace: platform }}\nspec:\n  script: |\n{}",
        indent(BACKEND)
    );
    [caller, neighbour, backend].join("---\n")
}

async fn start() -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
    support::serve_with_neighbour(&folder()).await
}

/// What the caller answers for `/load/<id>`.
fn loaded(id: &str) -> String {
    format!(
        "fetch:200 {id} HELLO! sum=42 raw=1,2,3 /{id}|rpc:hello caller from {id} {{\"tier\":\"gold\"}}"
    )
}

/// The callback count of `/load/<id>` (header `x-callbacks`), and the body.
async fn load(client: &support::HttpClient, port: u16, id: &str) -> (String, String) {
    let request = http::Request::builder()
        .uri(format!("http://127.0.0.1:{port}/load/{id}"))
        .header(http::header::HOST, "loader.test")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let callbacks = response.headers()["x-callbacks"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (callbacks, String::from_utf8_lossy(&body).into_owned())
}

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap()
        / 1024
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[tokio::test]
async fn dev_loads_code_of_every_module_type_and_keeps_memory_bounded_over_many_ids() {
    let (dev, port, client, _dir) = start().await;
    // One id: the callback runs once, then the code is warm.
    assert_eq!(
        load(&client, port, "first").await,
        ("1".to_owned(), loaded("first"))
    );
    assert_eq!(
        load(&client, port, "first").await,
        ("0".to_owned(), loaded("first"))
    );
    let (status, anon) = request(&client, port, "loader.test", "/anon")
        .await
        .unwrap();
    assert_eq!(
        (status, anon.as_str()),
        (200, "anonymous HELLO! sum=42 raw=1,2,3 /anon")
    );
    // Never-seen ids, every answer checked, memory read as they go.
    let pid = dev.process.pid();
    let mut cold = Vec::with_capacity(IDS);
    let mut rss = Vec::new();
    for i in 0..IDS {
        let id = format!("id-{i}");
        let asked = Instant::now();
        assert_eq!(
            load(&client, port, &id).await,
            ("1".to_owned(), loaded(&id))
        );
        cold.push(asked.elapsed());
        if (i + 1) % 2000 == 0 {
            rss.push((i + 1, rss_mib(pid)));
        }
    }
    let mut warm = Vec::new();
    for _ in 0..200 {
        let asked = Instant::now();
        assert_eq!(load(&client, port, "first").await.1, loaded("first"));
        warm.push(asked.elapsed());
    }
    cold.sort();
    warm.sort();
    eprintln!(
        "never-seen id, request to answer (LOADER.get, the callback, a new isolate, fetch + RPC): p50 {:?} p99 {:?}; the same id warm: p50 {:?} p99 {:?}",
        percentile(&cold, 50),
        percentile(&cold, 99),
        percentile(&warm, 50),
        percentile(&warm, 99)
    );
    eprintln!("isolane dev RSS (MiB) after N never-seen ids: {rss:?}");
    let (first, last) = (rss[0].1, rss[rss.len() - 1].1);
    assert!(
        last <= first + 128,
        "RSS grew from {first} MiB to {last} MiB over {IDS} ids: {rss:?}"
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_hostile_loaded_code_ends_at_its_limits_and_spares_the_neighbour() {
    let (dev, port, client, _dir) = start().await;
    let neighbour = || request(&client, port, "neighbour.test", "/");
    for (kind, expected) in [
        ("loop", "CPU time limit of 50 ms"),
        ("memory", "memory"),
        ("hang", "wall time limit of 500 ms"),
        ("wasm", "memory limit of 32 MiB"),
        (
            "loader",
            "env.LOADER is not a JSON value nor a service binding",
        ),
    ] {
        assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
        let path = format!("/hostile/{kind}");
        let started = Instant::now();
        let (hostile, during) = tokio::join!(request(&client, port, "loader.test", &path), async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            neighbour().await.unwrap()
        });
        let (status, body) = hostile.unwrap();
        eprintln!(
            "hostile {kind}: {status} {body:?} after {:?}",
            started.elapsed()
        );
        assert_eq!(status, 503, "{kind}: {body}");
        assert!(body.starts_with("caught "), "{kind}: {body}");
        assert!(body.contains(expected), "{kind}: {body}");
        assert_eq!(during, (200, "neighbour ok".to_owned()));
        assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
        // The caller itself serves on.
        assert_eq!(load(&client, port, "after").await.1, loaded("after"));
    }
    // The caller's own service binding, handed on: the one capability the
    // loaded code has (no network besides).
    assert_eq!(
        request(&client, port, "loader.test", "/stub")
            .await
            .unwrap(),
        (
            200,
            "loaded got: backend /from-loaded / hello loaded".to_owned()
        )
    );
    for how in ["fetch", "connect"] {
        let (status, body) = request(&client, port, "loader.test", &format!("/offline/{how}"))
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(
            body.starts_with("refused ") && body.contains("globalOutbound: null"),
            "{how}: {body}"
        );
    }
    assert!(dev.interrupt().success());
}

/// workerd serving the same caller (its `workerLoader` binding, an
/// experimental feature there) answers each path as `isolane dev`.
#[tokio::test]
async fn dev_answers_as_workerd_serving_the_same_caller() {
    let (dev, port, client, _dir) = start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("caller.js"), CALLER).unwrap();
    let workerd_port = free_port().unwrap();
    let address = SocketAddr::from(([127, 0, 0, 1], workerd_port));
    let service = workerd::Service::module("caller", "caller.js", "2025-06-01", address);
    let config = workerd::render(&[service]).replace(
        "bindings = [],",
        "bindings = [(name = \"LOADER\", workerLoader = ())],",
    );
    let config_path = dir.path().join("workerd.capnp");
    std::fs::write(&config_path, config).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let log = dir.path().join("workerd.log");
    let _workerd = workerd::serve(&bin, &config_path, &["--experimental".into()], &log).unwrap();
    isolane_testenv::wait_until("workerd to answer", support::DEADLINE, || {
        request(&client, workerd_port, "loader.test", "/anon")
    })
    .await;
    for path in ["/load/a", "/load/b", "/load/a", "/anon"] {
        let ours = request(&client, port, "loader.test", path).await.unwrap();
        let theirs = request(&client, workerd_port, "loader.test", path)
            .await
            .unwrap();
        assert_eq!(ours, theirs, "{path}");
    }
    // Both refuse the network to code loaded with globalOutbound: null
    // (in their own words).
    for how in ["fetch", "connect"] {
        let path = format!("/offline/{how}");
        let ours = request(&client, port, "loader.test", &path).await.unwrap();
        let theirs = request(&client, workerd_port, "loader.test", &path)
            .await
            .unwrap();
        eprintln!("{path}: isolane {ours:?}, workerd {theirs:?}");
        assert!(ours.1.starts_with("refused "), "{ours:?}");
        assert!(theirs.1.starts_with("refused "), "{theirs:?}");
    }
    assert!(dev.interrupt().success());
}
