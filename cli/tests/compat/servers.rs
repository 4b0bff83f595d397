//! The two runtimes under comparison, each one process serving every app
//! (isolane dev routes by host; workerd listens on one port per app), the
//! bundler that feeds them, and the echo server the proxying apps call.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use isolane_testenv::workerd::{self, ModuleKind};
use isolane_testenv::{Process, free_port, wait_until};

use super::answer::HttpClient;
use super::manifest::App;

/// A server's first answer must come within this.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// workerd's compatibility date: recent, so its defaults are today's.
const COMPATIBILITY_DATE: &str = "2026-11-01";

/// A server process; killed (its whole process group) when dropped, and
/// when the test process dies.
pub struct Server {
    pub name: &'static str,
    process: Process,
}

impl Server {
    fn spawn(
        name: &'static str,
        program: &Path,
        args: &[&OsStr],
        envs: &[(&str, &OsStr)],
        log: &Path,
    ) -> Self {
        let process = Process::spawn(name, program, args, envs, log)
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Self { name, process }
    }

    /// Waits until `addr` answers any HTTP response, failing fast with the
    /// log when the process exits.
    pub async fn wait_answering(&mut self, client: &HttpClient, addr: SocketAddr, host: &str) {
        let name = self.name;
        let what = format!("{name} to answer on {addr}");
        let process = &mut self.process;
        wait_until(&what, START_DEADLINE, || {
            let exited = process.try_exit().map(|status| {
                let log = process.log_path().display().to_string();
                (status, log, process.log())
            });
            async move {
                if let Some((status, path, log)) = exited {
                    panic!("{name} exited ({status}) before answering; log {path}:\n{log}");
                }
                let request = http::Request::builder()
                    .uri(format!("http://{addr}/"))
                    .header(http::header::HOST, host)
                    .body(Full::new(Bytes::new()))
                    .unwrap();
                match tokio::time::timeout(Duration::from_secs(5), client.request(request)).await {
                    Ok(Ok(response)) => {
                        let _ = response.into_body().collect().await;
                        true
                    }
                    _ => false,
                }
            }
        })
        .await;
    }
}

/// `isolane dev --workers <dir>`: one Worker YAML per app, routed by its host.
pub fn isolane_dev(
    bin: &Path,
    apps: &[Arc<App>],
    bundles: &Path,
    upstream: &str,
    dir: &Path,
) -> (Server, SocketAddr) {
    let workers = dir.join("isolane-workers");
    std::fs::create_dir_all(&workers).unwrap();
    for app in apps {
        let script = std::fs::read_to_string(bundles.join(format!("{}.js", app.name))).unwrap();
        let env: Vec<serde_json::Value> = app
            .env(upstream)
            .into_iter()
            .map(|(name, value)| serde_json::json!({ "name": name, "value": value }))
            .collect();
        let worker = serde_json::json!({
            "apiVersion": "isolane.dev/v1alpha1",
            "kind": "Worker",
            "metadata": { "name": app.name },
            // workerd run alone has no CPU limit; Isolane's default (50 ms)
            // could cut the first request of a large bundle on a loaded,
            // debug-built machine, which is not what the suite compares.
            "spec": {
                "routes": [{ "host": app.host() }],
                "env": env,
                "limits": { "cpuMs": 2000 },
                "compatibilityDate": COMPATIBILITY_DATE,
                "compatibilityFlags": app.manifest.compatibility_flags,
                "script": script,
            },
        });
        std::fs::write(
            workers.join(format!("{}.yaml", app.name)),
            serde_yaml::to_string(&worker).unwrap(),
        )
        .unwrap();
    }
    spawn_dev(
        bin,
        &["--workers".as_ref(), workers.as_os_str()],
        &dir.join("isolane-dev.log"),
    )
}

/// `isolane dev <what…> --port <free> --threads 1`, logging warnings.
fn spawn_dev(bin: &Path, what: &[&OsStr], log: &Path) -> (Server, SocketAddr) {
    let port = free_port().unwrap();
    let port_arg = port.to_string();
    // Its state beside its log, not in the crate's source tree.
    let state = log.with_extension("state");
    let mut args: Vec<&OsStr> = vec!["dev".as_ref()];
    args.extend_from_slice(what);
    for arg in ["--port", port_arg.as_str(), "--threads", "1"] {
        args.push(OsStr::new(arg));
    }
    if !what.iter().any(|arg| *arg == "--state") {
        args.extend(["--state".as_ref(), state.as_os_str()]);
    }
    let server = Server::spawn(
        "isolane dev",
        bin,
        &args,
        &[("ISOLANE_LOG", "warn".as_ref())],
        log,
    );
    (server, SocketAddr::from(([127, 0, 0, 1], port)))
}

/// The workerd binary the npm package `workerd` installed.
pub fn workerd_binary(compat: &Path) -> PathBuf {
    workerd::binary(compat)
}

/// `workerd serve` of a generated config: a service and a socket per app,
/// and an outbound network that may reach the loopback echo server.
pub fn workerd(
    bin: &Path,
    apps: &[Arc<App>],
    bundles: &Path,
    upstream: &str,
    dir: &Path,
) -> (Server, BTreeMap<String, SocketAddr>) {
    let mut services = Vec::new();
    let mut addrs = BTreeMap::new();
    for app in apps {
        // capnp resolves an absolute embed path against its import path:
        // name the bundle relative to the config file instead.
        let file = bundles
            .strip_prefix(dir)
            .expect("bundles live in the run's folder")
            .join(format!("{}.js", app.name))
            .display()
            .to_string();
        let address = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
        let mut service = workerd::Service::module(&app.name, &file, COMPATIBILITY_DATE, address);
        if app.service_worker() {
            service.code = workerd::Code::ServiceWorker(file);
        }
        service.bindings = app.env(upstream).into_iter().collect();
        service.compatibility_flags = app.manifest.compatibility_flags.clone();
        service.network = true;
        addrs.insert(app.name.clone(), address);
        services.push(service);
    }
    let config = workerd::write_config(dir, "workerd.capnp", &services).unwrap();
    let process = workerd::serve(
        bin,
        &config,
        &["--verbose".into()],
        &dir.join("workerd.log"),
    )
    .unwrap_or_else(|e| panic!("starting workerd: {e}"));
    let server = Server {
        name: "workerd",
        process,
    };
    (server, addrs)
}

/// workerd serving the modules of `example` (`examples/bundle`: main.js,
/// add.wasm, greeting.txt) as wrangler would upload them.
pub fn workerd_example_bundle(bin: &Path, example: &Path, dir: &Path) -> (Server, SocketAddr) {
    let modules = [
        ("main.js", ModuleKind::EsModule),
        ("add.wasm", ModuleKind::Wasm),
        ("greeting.txt", ModuleKind::Text),
    ];
    workerd_modules(bin, example, &modules, &[], dir)
}

/// workerd serving `compat/node` (main.js and checks.cjs, the Node.js
/// compatibility checks) with `nodejs_compat`.
pub fn workerd_node_checks(bin: &Path, checks: &Path, dir: &Path) -> (Server, SocketAddr) {
    let modules = [
        ("main.js", ModuleKind::EsModule),
        ("checks.cjs", ModuleKind::CommonJs),
    ];
    workerd_modules(bin, checks, &modules, &["nodejs_compat"], dir)
}

/// workerd serving one Worker of `modules` ((file in `from`, kind)), the
/// first its main, with compatibility `flags`.
fn workerd_modules(
    bin: &Path,
    from: &Path,
    modules: &[(&str, ModuleKind)],
    flags: &[&str],
    dir: &Path,
) -> (Server, SocketAddr) {
    for (file, _) in modules {
        std::fs::copy(from.join(file), dir.join(file)).unwrap();
    }
    let address = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let mut service = workerd::Service::module("main", "", COMPATIBILITY_DATE, address);
    service.code = workerd::Code::Modules(
        modules
            .iter()
            .map(|(file, kind)| ((*file).to_owned(), *kind))
            .collect(),
    );
    service.compatibility_flags = flags.iter().map(|f| (*f).to_owned()).collect();
    let config = workerd::write_config(dir, "workerd-bundle.capnp", &[service]).unwrap();
    let process = workerd::serve(bin, &config, &[], &dir.join("workerd-bundle.log"))
        .unwrap_or_else(|e| panic!("starting workerd: {e}"));
    let server = Server {
        name: "workerd",
        process,
    };
    (server, address)
}

/// `isolane dev <main> <args…>`.
pub fn isolane_dev_file_with(
    bin: &Path,
    main: &Path,
    args: &[&str],
    dir: &Path,
) -> (Server, SocketAddr) {
    let mut what: Vec<&OsStr> = vec![main.as_os_str()];
    what.extend(args.iter().map(OsStr::new));
    spawn_dev(bin, &what, &dir.join("isolane-dev-file.log"))
}

/// `isolane dev <main>`: a Worker from its main module's file.
pub fn isolane_dev_file(bin: &Path, main: &Path, dir: &Path) -> (Server, SocketAddr) {
    spawn_dev(bin, &[main.as_os_str()], &dir.join("isolane-dev-file.log"))
}

// === the echo server ===

/// A loopback HTTP server the proxying apps call: `/echo/*` answers the
/// request it got as JSON, plus a redirect, a chosen status, extra headers,
/// JSON and HTML. Returns its origin (`http://127.0.0.1:<port>`).
pub async fn upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let base = origin.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let base = base.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let base = base.clone();
                    async move { Ok::<_, Infallible>(echo(request, &base).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    origin
}

async fn echo(request: http::Request<Incoming>, base: &str) -> http::Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let reply = |status: u16, content_type: &str, body: String| {
        http::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    if let Some(echoed) = path.strip_prefix("/echo") {
        let method = request.method().to_string();
        let query = request.uri().query().unwrap_or("").to_owned();
        let mut headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        headers.sort();
        let body = request.into_body().collect().await.map(|b| b.to_bytes());
        let body = body.map_or_else(
            |e| format!("<error {e}>"),
            |b| String::from_utf8_lossy(&b).into(),
        );
        let json = serde_json::json!({
            "method": method, "path": echoed, "query": query, "headers": headers, "body": body,
        });
        return reply(
            200,
            "application/json",
            serde_json::to_string_pretty(&json).unwrap(),
        );
    }
    if let Some(status) = path.strip_prefix("/status/") {
        let status = status.parse().unwrap_or(400);
        return reply(status, "text/plain", format!("status {status}"));
    }
    match path.as_str() {
        "/redirect" => http::Response::builder()
            .status(302)
            .header("location", format!("{base}/echo/redirected"))
            .body(Full::new(Bytes::new()))
            .unwrap(),
        "/headers" => http::Response::builder()
            .header("content-type", "text/plain")
            .header("x-upstream-secret", "hidden")
            .header("cache-control", "no-store")
            .header("set-cookie", "a=1; Path=/")
            .header("set-cookie", "b=2; Path=/; HttpOnly")
            .body(Full::new(Bytes::from("with headers")))
            .unwrap(),
        "/stream" => reply(200, "text/plain", "first chunk, second chunk, last".into()),
        "/json/a" | "/json/b" => reply(
            200,
            "application/json",
            serde_json::json!({ "name": &path[6..] }).to_string(),
        ),
        "/html" => reply(
            200,
            "text/html; charset=utf-8",
            "<!DOCTYPE html><html><head><title>Up</title></head><body><a href=\"http://old.example.com/x\">x</a><div class=\"ad\">ad</div><p id=\"greet\">Hi NAME</p><!-- up --></body></html>".into(),
        ),
        _ => reply(404, "text/plain", "no such upstream path".into()),
    }
}
