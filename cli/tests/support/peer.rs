//! One project served by `isolane dev` and by `wrangler dev` (Cloudflare's
//! CLI on workerd) side by side: plain requests to either, and what the two
//! answers must agree on (shared by dev_assets.rs and dev_frameworks.rs).
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::support::{HttpClient, free_port, repo};

/// A reply: status, headers, body.
pub type Reply = (u16, http::HeaderMap, String);

/// Status, headers and body of `GET path` with `headers`.
pub async fn get(client: &HttpClient, port: u16, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = http::Request::builder().uri(format!("http://127.0.0.1:{port}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status.as_u16(),
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// The value of the header `name`, or "".
pub fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or_default())
}

/// What both servers must agree on: status, body and the headers that say
/// what the answer is.
pub fn comparable(reply: &Reply) -> (u16, String, Vec<String>) {
    let names = ["content-type", "location", "cache-control", "content-range"];
    let headers = names
        .iter()
        .map(|name| format!("{name}: {}", header(&reply.1, name)))
        .collect();
    (reply.0, reply.2.clone(), headers)
}

/// The one way the two differ on an asset, asserted: `Range` gets a 206
/// with the first ten bytes from Isolane (as issue 59 asks), the whole
/// file from `wrangler dev`, whose local asset Worker ignores the header.
pub async fn ranges_differ(client: &HttpClient, isolane: u16, wrangler: u16, path: &str) {
    let range = [("range", "bytes=0-9")];
    let (status, headers, part) = get(client, isolane, path, &range).await;
    let (whole_status, _, whole) = get(client, wrangler, path, &range).await;
    assert_eq!((status, part.len()), (206, 10), "GET {path} bytes=0-9");
    assert!(header(&headers, "content-range").starts_with("bytes 0-9/"));
    assert_eq!(
        whole_status, 200,
        "wrangler dev answers a range: GET {path}"
    );
    assert!(whole.len() > 10 && whole.starts_with(&part), "{part:?}");
}

/// `wrangler dev` in `dir` on `port`, with nothing that leaves the machine
/// ([`isolane_testenv::wrangler`]); its log is `dir/wrangler.log`.
pub fn wrangler_dev(dir: &std::path::Path, port: u16) -> isolane_testenv::Process {
    use isolane_testenv::wrangler;
    let node = wrangler::node22(&repo()).expect("Node.js 22 for wrangler");
    let args = wrangler::dev_args(&wrangler::wrangler_js(&repo()), port, free_port().unwrap());
    let envs = wrangler::OFFLINE_ENV.map(|(name, value)| (name, std::ffi::OsStr::new(value)));
    let log = dir.join("wrangler.log");
    isolane_testenv::Process::spawn_in("wrangler dev", &node, args, &envs, &log, Some(dir)).unwrap()
}

/// Waits (within two minutes) until `wrangler dev` on `port` answers
/// `path` with a 200; its log says why when it never does.
pub async fn wrangler_ready(client: &HttpClient, dir: &std::path::Path, port: u16, path: &str) {
    let waited = isolane_testenv::wait_until(
        "wrangler dev to answer",
        std::time::Duration::from_secs(120),
        || async {
            let request = http::Request::get(format!("http://127.0.0.1:{port}{path}"))
                .body(Full::new(Bytes::new()))
                .ok()?;
            let response = client.request(request).await.ok()?;
            (response.status() == 200).then_some(())
        },
    );
    let _log = LogOnPanic(dir.join("wrangler.log"));
    waited.await;
}

/// Prints a log if dropped while panicking (a peer that never answered).
struct LogOnPanic(std::path::PathBuf);

impl Drop for LogOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.0).unwrap_or_default();
            eprintln!("{}:\n{log}", self.0.display());
        }
    }
}

/// `GET path` from `port` as JSON (a 200 asserted).
pub async fn json(client: &HttpClient, port: u16, path: &str) -> serde_json::Value {
    let (status, _, body) = get(client, port, path, &[]).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// `isolane dev` in the app's folder `app` on `port`, its state in
/// `state`, the app built with Node.js 22 (as wrangler needs).
pub fn dev_with_node(
    app: &std::path::Path,
    port: u16,
    state: &std::path::Path,
) -> crate::support::Dev {
    let node = isolane_testenv::wrangler::node22(&repo()).expect("Node.js 22");
    let envs = [("ISOLANE_NODE", node.as_os_str())];
    let port = port.to_string();
    let args = ["--port", &port, "--state", state.to_str().unwrap()];
    crate::support::Dev::start_with(&args, Some(app), &envs)
}

/// `wrangler dev` in `app` on `port`, its local state (D1, R2) in
/// `persist` (a fresh folder: `.wrangler/state` would keep an earlier
/// run's); its log is `app/wrangler.log`, as [`wrangler_dev`]'s.
pub fn wrangler_dev_persisting(
    app: &std::path::Path,
    port: u16,
    persist: &std::path::Path,
) -> isolane_testenv::Process {
    use isolane_testenv::wrangler;
    let node = wrangler::node22(&repo()).expect("Node.js 22 for wrangler");
    let js = wrangler::wrangler_js(&repo());
    let mut args = wrangler::dev_args(&js, port, free_port().unwrap());
    args.extend(["--persist-to".to_owned(), persist.display().to_string()]);
    let envs = wrangler::OFFLINE_ENV.map(|(name, value)| (name, std::ffi::OsStr::new(value)));
    let log = app.join("wrangler.log");
    isolane_testenv::Process::spawn_in("wrangler dev", &node, args, &envs, &log, Some(app)).unwrap()
}
