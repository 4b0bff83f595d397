//! Runs every Web API suite in `tests/web_api/` through the real engine and
//! asserts that none reports a failure (see `tests/web_api/README.md`).

// Test code: unwrapping is the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use isolane_engine::{
    Body, Engine, EngineConfig, EngineObserver, Limits, Outcome, PoolMode, WorkerBundle,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[test]
fn web_api_suites() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run_all());
}

/// The test harness every suite runs with, put before its text.
const HARNESS: &str = include_str!("js_harness/preamble.js");

async fn run_all() {
    let target = start_target_server().await;
    let cpu = Arc::new(LastCpu::default());
    let engine = Engine::start(
        EngineConfig {
            families: isolane_runtime::families(),
            threads: 1,
            pin_threads: false,
            pool_mode: PoolMode::Pinned,
            spare_isolates: 1,
            // The suites fetch from a server on loopback.
            egress: isolane_engine::EgressConfig::open(),
            ..EngineConfig::default()
        },
        cpu.clone(),
    )
    .expect("engine starts");

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/web_api");
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    suites.sort();
    assert!(!suites.is_empty(), "no suites in {}", dir.display());

    let mut failures = Vec::new();
    for path in &suites {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The suites' shared harness comes first (tests/web_api/README.md).
        let script = format!("{HARNESS}{}", std::fs::read_to_string(path).unwrap());
        let bundle = Arc::new(WorkerBundle {
            assets: None,
            id: format!("web-api-{name}"),
            revision: "r1".to_owned(),
            script,
            modules: None,
            env: BTreeMap::from([
                ("TARGET".to_owned(), target.clone()),
                ("SUITE".to_owned(), name.clone()),
            ]),
            // One request runs a whole suite (up to ~0.7 s of CPU in a
            // debug build: fetch.js decodes a 16 MiB data: URL, compression.js
            // inflates megabytes): the default 50 ms would make them fail. fetch.js makes more than the default 50
            // subrequests. Limits have their own tests (tests/engine).
            kv: Default::default(),
            durable_objects: Default::default(),
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
                cpu_ms: 5_000,
                subrequests: 100,
                ..Limits::default()
            },
            allowed_hosts: Vec::new(),
            // Today's globals (MessageChannel is there from 2025-08-15).
            compat: isolane_engine::Compat {
                message_channel: true,
                ..Default::default()
            },
            json_env: Default::default(),
        });
        let request = http::Request::builder()
            .method("POST")
            .uri("http://localhost/suite?x=1")
            .header("content-type", "text/plain;charset=UTF-8")
            .header("x-suite", "web_api")
            .body(Body::from(Bytes::from_static(b"ping")))
            .unwrap();
        let result =
            tokio::time::timeout(Duration::from_secs(60), engine.execute(0, bundle, request)).await;
        let line = match result {
            Err(_) => Err("timed out".to_owned()),
            Ok(Err(error)) => Err(format!("engine error: {error}")),
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                match response.into_body().collect().await {
                    Err(error) => Err(format!("status {status}, body error: {error}")),
                    Ok(body) => {
                        let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
                        check(status, &text)
                    }
                }
            }
        };
        match line {
            Ok(passed) => eprintln!("ok   {name}: {passed} passed ({} CPU)", cpu.take()),
            Err(message) => {
                eprintln!("FAIL {name}: {message} ({} CPU)", cpu.take());
                failures.push(name);
            }
        }
    }
    tokio::task::spawn_blocking(move || engine.shutdown())
        .await
        .unwrap();
    assert!(failures.is_empty(), "failing suites: {failures:?}");
}

/// The CPU time the engine charged to the last request, for the log: each
/// suite is one request under the default limits.
#[derive(Default)]
struct LastCpu(std::sync::Mutex<Option<Duration>>);

impl LastCpu {
    fn take(&self) -> String {
        match self.0.lock().unwrap().take() {
            Some(cpu) => format!("{:.1} ms", cpu.as_secs_f64() * 1e3),
            None => "unknown".to_owned(),
        }
    }
}

impl EngineObserver for LastCpu {
    fn request_finished(
        &self,
        _thread: usize,
        _outcome: Outcome,
        _duration: Duration,
        cpu: Duration,
    ) {
        *self.0.lock().unwrap() = Some(cpu);
    }
}

/// `Ok(passed)` for `200 {"passed":N,"failed":[],…}`, else a description.
fn check(status: u16, text: &str) -> Result<u64, String> {
    let answer: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let passed = answer.as_ref().and_then(|a| a["passed"].as_u64());
    let failed = answer
        .as_ref()
        .and_then(|a| a["failed"].as_array())
        .map(Vec::len);
    match (passed, failed) {
        (Some(n), Some(0)) if status == 200 => Ok(n),
        _ => Err(format!("status {status}: {text}")),
    }
}

// ---- the HTTP server behind env.TARGET (endpoints in tests/web_api/README.md) ----

async fn start_target_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve(stream));
        }
    });
    format!("http://{addr}")
}

struct Incoming {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_request(stream: &mut TcpStream) -> Option<Incoming> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0_u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0_u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Incoming {
        method,
        target,
        headers,
        body,
    })
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
    head_only: bool,
) {
    let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if status != 204 && status != 304 {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    if !head_only && status != 204 && status != 304 {
        let _ = stream.write_all(body).await;
    }
    let _ = stream.shutdown().await;
}

async fn serve(mut stream: TcpStream) {
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let (path, query) = req
        .target
        .split_once('?')
        .unwrap_or((req.target.as_str(), ""));
    // Decoded as URLSearchParams does (as the node harness's server does).
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let head_only = req.method == "HEAD";
    match path {
        "/echo" => {
            // A repeated header keeps its last value, as JSON.parse of the
            // object would.
            let headers: serde_json::Map<String, serde_json::Value> = req
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            let body = serde_json::json!({
                "method": req.method,
                "url": req.target,
                "headers": headers,
                "body": String::from_utf8_lossy(&req.body),
            })
            .to_string();
            respond(
                &mut stream,
                200,
                &[
                    ("content-type", "application/json"),
                    ("x-echo", "yes"),
                    ("set-cookie", "a=1"),
                    ("set-cookie", "b=2"),
                ],
                body.as_bytes(),
                head_only,
            )
            .await;
        }
        "/status" => {
            let code = param("code").and_then(|c| c.parse().ok()).unwrap_or(200);
            let body = param("body").unwrap_or_default();
            respond(
                &mut stream,
                code,
                &[("content-type", "text/plain")],
                body.as_bytes(),
                head_only,
            )
            .await;
        }
        "/redirect" => {
            // `n` hops, each answered with `code`, then to `to` (default /echo).
            let n: u32 = param("n").and_then(|c| c.parse().ok()).unwrap_or(1);
            let code: u16 = param("code").and_then(|c| c.parse().ok()).unwrap_or(302);
            let to = param("to").unwrap_or_else(|| "/echo".to_owned());
            let location = if n > 1 {
                format!("/redirect?n={}&code={code}&to={to}", n - 1)
            } else {
                to
            };
            respond(
                &mut stream,
                code,
                &[("location", location.as_str())],
                b"",
                head_only,
            )
            .await;
        }
        "/stream" => {
            // close-delimited body written in pieces
            let head = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/plain\r\n\r\n";
            let _ = stream.write_all(head.as_bytes()).await;
            for i in 0..5 {
                let _ = stream.write_all(format!("chunk{i};").as_bytes()).await;
                let _ = stream.flush().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let _ = stream.shutdown().await;
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            respond(&mut stream, 200, &[], b"slow", head_only).await;
        }
        "/big" => {
            let body = vec![7_u8; 1 << 20];
            respond(
                &mut stream,
                200,
                &[("content-type", "application/octet-stream")],
                &body,
                head_only,
            )
            .await;
        }
        _ => {
            respond(
                &mut stream,
                404,
                &[("content-type", "text/plain")],
                b"not found",
                head_only,
            )
            .await;
        }
    }
}
