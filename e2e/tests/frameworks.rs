//! Real framework builds on a cluster (issue 59): an Astro site, a React
//! Router app, a Vite + React single-page app and a Next.js app through
//! OpenNext, built here by their own
//! CLIs from npm (`isolane_testenv::frameworks`), each deployed with
//! `isolane deploy --repository` onto a real kube-apiserver, OCI registry,
//! operator, runtime node and router, and asked through the router what a
//! browser asks: the server-rendered pages, a data request the Worker
//! answers, a hashed client chunk from the assets (type, cache control,
//! ETag and its 304, a range), an unknown route (the app's 404 page, or the
//! SPA's `index.html` for a navigation request). Every answer is compared
//! with `isolane dev` serving the same folder: status, body and the headers
//! that say what the answer is (`content-type`, `cache-control`, `etag`,
//! `location`, `content-range`) are equal; what only the cluster adds (the
//! router's `x-isolane-*` headers, `date`) is not compared.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use isolane_e2e::bundles::{self, create_pull_secret, registry_cluster};
use isolane_e2e::cluster::Cluster;
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::process::binary;
use isolane_e2e::workers::{self, wait_ready};
use isolane_testenv::frameworks::{self, asset};
use isolane_testenv::{ControlPlane, Process, Registry, free_port, wait_until};

const NAMESPACE: &str = "apps";
const SETTLE: Duration = Duration::from_secs(120);
/// The long-lived caching a build's hashed chunks get from `_headers`.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const NAVIGATE: (&str, &str) = ("sec-fetch-mode", "navigate");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A built project: its Worker's name, the host it is routed on, its
/// folder, and the assets folder its chunks are in.
struct App {
    name: &'static str,
    host: &'static str,
    dir: PathBuf,
    chunks: PathBuf,
}

/// `vite build` of `compat/apps/vite-spa` (its `wrangler.toml` routes it
/// on `spa.test`).
fn vite_spa() -> App {
    let dir = frameworks::app(&repo(), "vite-spa");
    frameworks::vite_build(&repo(), &dir).unwrap_or_else(|e| panic!("{e}"));
    App {
        name: "vite-spa",
        host: "spa.test",
        chunks: dir.join("dist/assets"),
        dir,
    }
}

/// `astro build` of `compat/apps/astro`, with the route a user's own
/// wrangler config would give it (the adapter copies it into the config it
/// generates, `dist/server/wrangler.json`).
fn astro() -> App {
    let dir = frameworks::app(&repo(), "astro");
    frameworks::astro_build(&repo(), &dir).unwrap_or_else(|e| panic!("{e}"));
    let generated = dir.join("dist/server/wrangler.json");
    let text = std::fs::read_to_string(&generated).expect("the generated config");
    let mut config: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    config["routes"] = serde_json::json!([{ "pattern": "astro.test", "custom_domain": true }]);
    std::fs::write(&generated, config.to_string()).expect("write the config");
    App {
        name: "isolane-compat-astro",
        host: "astro.test",
        chunks: dir.join("dist/client"),
        dir,
    }
}

/// React Router 7 in framework mode (`compat/apps/react-router`), built
/// and bundled into `out` as its Cloudflare template deploys it, with the
/// `_headers` and `_redirects` a user adds to the client build.
fn react_router(out: &Path) -> App {
    frameworks::bundle(&repo().join("compat"), out, &["react-router"])
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        out.join("wrangler.toml"),
        "name = \"react-router\"\nmain = \"react-router.js\"\n\
         compatibility_date = \"2025-06-01\"\ncompatibility_flags = [\"nodejs_compat\"]\n\
         routes = [{ pattern = \"rr.test\", custom_domain = true }]\n\
         [assets]\ndirectory = \"./react-router-build/client\"\n",
    )
    .expect("write wrangler.toml");
    let client = out.join("react-router-build/client");
    std::fs::write(
        client.join("_headers"),
        format!("/assets/*\n  Cache-Control: {IMMUTABLE}\n"),
    )
    .expect("write _headers");
    std::fs::write(client.join("_redirects"), "/people/* /users/:splat 301\n")
        .expect("write _redirects");
    App {
        name: "react-router",
        host: "rr.test",
        chunks: client.join("assets"),
        dir: out.to_path_buf(),
    }
}

/// Next.js 16 (App Router, `compat/apps/nextjs`) built by OpenNext for
/// Cloudflare (`opennextjs-cloudflare build` in the app's folder, redone
/// only when its source changed) and bundled into `out` as
/// cli/tests/dev_frameworks.rs serves it: the Worker, with
/// `.open-next/assets` behind `ASSETS`, on the compat suite's
/// compatibility date (the one its unenv polyfills were chosen for).
fn next_js(out: &Path) -> App {
    frameworks::bundle(&repo().join("compat"), out, &["nextjs"]).unwrap_or_else(|e| panic!("{e}"));
    let assets = frameworks::app(&repo(), "nextjs").join(".open-next/assets");
    let config = serde_json::json!({
        "name": "nextjs",
        "main": "nextjs.js",
        "compatibility_date": "2026-11-01",
        "compatibility_flags": ["nodejs_compat"],
        "routes": [{ "pattern": "next.test", "custom_domain": true }],
        "assets": { "directory": assets, "binding": "ASSETS" },
    });
    std::fs::write(out.join("wrangler.json"), config.to_string()).expect("write wrangler.json");
    App {
        name: "nextjs",
        host: "next.test",
        chunks: assets.join("_next/static/chunks"),
        dir: out.to_path_buf(),
    }
}

/// `isolane dev` serving an app's folder, and a client of it.
struct Dev {
    _process: Process,
    ingress: Ingress,
}

/// `isolane dev` in `app`'s folder with `envs`, answering `GET /` on its
/// host.
async fn isolane_dev(app: &App, (logs, envs): (&Path, &[(&str, &OsStr)])) -> Dev {
    let port = free_port().expect("a free port");
    let state = logs.join(format!("{}-state", app.name));
    let args = [
        "dev".to_owned(),
        "--port".to_owned(),
        port.to_string(),
        "--threads".to_owned(),
        "1".to_owned(),
        "--state".to_owned(),
        state.display().to_string(),
    ];
    let process = Process::spawn_in(
        "isolane dev",
        &binary("isolane", "ISOLANE_BIN"),
        args,
        envs,
        &logs.join(format!("{}-dev.log", app.name)),
        Some(&app.dir),
    )
    .expect("isolane dev starts");
    let ingress = Ingress::new(([127, 0, 0, 1], port).into());
    wait_until("isolane dev answers", SETTLE, || async {
        let reply = ingress.get(app.host, "/").await.ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    Dev {
        _process: process,
        ingress,
    }
}

/// What the cluster and `isolane dev` must agree on.
fn comparable(reply: &Reply) -> (u16, &str, Vec<String>) {
    let names = [
        "content-type",
        "cache-control",
        "etag",
        "location",
        "content-range",
    ];
    let headers = names
        .iter()
        .map(|name| format!("{name}: {}", reply.header(name)))
        .collect();
    (reply.status, reply.body.as_str(), headers)
}

/// One app on the cluster (through the router) and in `isolane dev`.
struct Both<'a> {
    app: &'a App,
    cluster: &'a Ingress,
    dev: Dev,
}

impl<'a> Both<'a> {
    /// `app` through the router of `cluster`, and `isolane dev` started in
    /// its folder (its log in `logs`).
    async fn start(app: &'a App, cluster: &'a Ingress, logs: (&Path, &[(&str, &OsStr)])) -> Self {
        let dev = isolane_dev(app, logs).await;
        Both { app, cluster, dev }
    }

    /// `GET path` with `headers` through the router, asserted equal to
    /// `isolane dev`'s answer.
    async fn same(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let host = self.app.host;
        let ours = self.cluster.get_with(host, path, headers).await;
        let ours = ours.unwrap_or_else(|e| panic!("GET {host}{path}: {e}"));
        let dev = self.dev.ingress.get_with(host, path, headers).await;
        let dev = dev.unwrap_or_else(|e| panic!("isolane dev: GET {host}{path}: {e}"));
        assert_eq!(
            comparable(&ours),
            comparable(&dev),
            "GET {host}{path} {headers:?}: the cluster, then isolane dev"
        );
        ours
    }

    /// [`Both::same`] with an expected status.
    async fn status(&self, path: &str, headers: &[(&str, &str)], status: u16) -> Reply {
        let reply = self.same(path, headers).await;
        assert_eq!(reply.status, status, "GET {path}: {}", reply.body);
        reply
    }

    /// An asset from both, the same: its type, a strong ETag that gets its
    /// 304 (from both), and the first ten bytes for a range.
    async fn asset(&self, path: &str, kind: &str) -> Reply {
        let reply = self.status(path, &[], 200).await;
        assert_eq!(reply.header("content-type"), kind, "{path}");
        let etag = reply.header("etag").to_owned();
        assert!(etag.starts_with('"') && etag.len() == 66, "{path}: {etag}");
        let again = self.status(path, &[("if-none-match", &etag)], 304).await;
        assert_eq!(again.body, "", "{path}");
        let part = self.status(path, &[("range", "bytes=0-9")], 206).await;
        let whole = reply.header("content-length");
        assert_eq!(part.header("content-range"), format!("bytes 0-9/{whole}"));
        reply
    }
}

/// The SPA: its page and hashed chunk, the API the Worker runs first for,
/// and client routes, which get `index.html` (the SPA fallback).
async fn vite_spa_answers(both: &Both<'_>) {
    let page = both.asset("/", "text/html; charset=utf-8").await;
    let chunk = format!(
        "/assets{}",
        asset(&both.app.chunks, "index-", ".js").expect("the entry chunk")
    );
    assert!(page.body.contains(&chunk), "{}", page.body);
    let script = both.asset(&chunk, "text/javascript; charset=utf-8").await;
    assert_eq!(script.header("cache-control"), IMMUTABLE, "_headers");
    let user = both.status("/api/users/7", &[], 200).await;
    assert_eq!(user.body, r#"{"id":7,"name":"user 7"}"#);
    both.status("/api/nope", &[], 404).await;
    // `run_worker_first` routes ("static routing"): what they do not send
    // to the Worker is the assets', the SPA page for a path no file has,
    // navigation or not.
    for (path, headers) in [
        ("/users/7", &[NAVIGATE][..]),
        ("/settings/deep/link", &[NAVIGATE]),
        ("/users/7", &[]),
    ] {
        let fallback = both.status(path, headers, 200).await;
        assert_eq!(fallback.body, page.body, "the SPA page for {path}");
    }
    both.asset("/robots.txt", "text/plain; charset=utf-8").await;
    // A dotfile folder is assets too, as wrangler uploads it; the source
    // map that `.assetsignore` names is not (its path gets the SPA page),
    // nor is `.assetsignore` itself.
    both.asset("/.well-known/security.txt", "text/plain; charset=utf-8")
        .await;
    let map = format!("{chunk}.map");
    assert!(both.app.dir.join(format!("dist{map}")).is_file(), "{map}");
    for path in [map.as_str(), "/.assetsignore"] {
        let left_out = both.status(path, &[], 200).await;
        assert_eq!(left_out.body, page.body, "{path}");
    }
}

/// Astro: the prerendered page and the public files are assets; the
/// server-rendered pages, the API route and Astro's 404 page are the
/// Worker's.
async fn astro_answers(both: &Both<'_>) {
    let home = both.asset("/", "text/html; charset=utf-8").await;
    assert!(
        home.body.contains("rendered at build time"),
        "{}",
        home.body
    );
    both.asset("/robots.txt", "text/plain; charset=utf-8").await;
    both.asset("/pixel.png", "image/png").await;
    let page = both.status("/hello/ada?q=1", &[], 200).await;
    assert!(
        page.body.contains("<h1>Hello ada</h1><p>q = 1</p>"),
        "{}",
        page.body
    );
    both.status("/api/hello?q=2", &[], 200).await;
    both.status("/hello/nobody", &[], 404).await;
    both.status("/nope", &[NAVIGATE], 404).await;
}

/// React Router: the server-rendered pages and their `.data` requests
/// (single fetch), the hashed client chunks the page loads, a
/// `_redirects` rule, and the app's 404s.
async fn react_router_answers(both: &Both<'_>) {
    let chunks = &both.app.chunks;
    let entry = format!(
        "/assets{}",
        asset(chunks, "entry.client-", ".js").expect("entry")
    );
    let root = format!("/assets{}", asset(chunks, "root-", ".js").expect("root"));
    let home = both.status("/", &[], 200).await;
    assert!(home.body.contains(&entry), "the page loads {entry}");
    for path in ["/?name=%3Cada%3E", "/users/7", "/users/7.data"] {
        both.status(path, &[], 200).await;
    }
    both.status("/users/x", &[], 404).await;
    both.status("/nope", &[NAVIGATE], 404).await;
    let moved = both.status("/people/7", &[], 301).await;
    assert_eq!(moved.header("location"), "/users/7");
    for path in [&entry, &root] {
        let chunk = both.asset(path, "text/javascript; charset=utf-8").await;
        assert_eq!(chunk.header("cache-control"), IMMUTABLE, "{path}");
    }
}

/// Next.js: the dynamic pages, the route handler (a data request), the
/// proxy's (middleware's) redirect, `notFound()` and the prerendered 404,
/// and a `/_next/static/chunks/` file (the app ships no `_headers`: the
/// default cache control).
async fn next_js_answers(both: &Both<'_>) {
    let chunk = asset(&both.app.chunks, "", ".js").expect("a chunk");
    let chunk = format!("/_next/static/chunks{chunk}");
    let home = both.status("/", &[], 200).await;
    assert!(home.body.contains("/_next/static/chunks/"), "{}", home.body);
    for (path, status) in [
        ("/users/7", 200),
        ("/api/hello?q=42", 200),
        ("/old-home", 308),
        ("/users/x", 404),
        ("/nope", 404),
    ] {
        both.status(path, &[], status).await;
    }
    let script = both.asset(&chunk, "text/javascript; charset=utf-8").await;
    assert_eq!(
        script.header("cache-control"),
        "public, max-age=0, must-revalidate"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framework_builds_deployed_answer_as_isolane_dev_serves_them() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    // The builds first: their CPU does not race the cluster's start.
    let apps = [
        vite_spa(),
        astro(),
        react_router(&dir.path().join("react-router")),
        next_js(&dir.path().join("nextjs")),
    ];
    let built = started.elapsed();
    // A project with wrangler in its `node_modules` is built by it, on the
    // Node.js it needs (22).
    let node22 = isolane_testenv::wrangler::node22(&repo()).expect("Node.js 22");
    let node = [("ISOLANE_NODE", node22.as_os_str())];
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let registry = Registry::start("isolane", "pull-me").expect("registry starts");
    let client = cp.client();
    create_pull_secret(&client, NAMESPACE, &registry).await;
    for app in &apps {
        let target = (app.dir.as_path(), NAMESPACE);
        let pushed = bundles::deploy_with(&cp, &registry, target, app.name, &node);
        assert!(pushed.contains("asset files"), "{pushed}");
        if app.name == "vite-spa" {
            // What wrangler uploads of its dist/ (7 files): index.html, the
            // chunk, robots.txt, .well-known/security.txt and `_headers`;
            // not the source map nor `.assetsignore`.
            assert!(pushed.contains(" 5 asset files"), "{pushed}");
        }
    }
    let cluster = Cluster::start(&cp, dir.path(), registry_cluster(&registry, Vec::new())).await;
    let ingress = Ingress::new(cluster.ingress());
    for app in &apps {
        wait_ready(&client, NAMESPACE, app.name, SETTLE).await;
        wait_until("the router answers", SETTLE, || async {
            let reply = ingress.get(app.host, "/").await.ok()?;
            (reply.status == 200).then_some(())
        })
        .await;
    }
    let [spa, astro, rr, next] = &apps;
    // One `isolane dev` at a time (two cores): each is stopped on drop.
    let logs = (dir.path(), &node[..]);
    vite_spa_answers(&Both::start(spa, &ingress, logs).await).await;
    astro_answers(&Both::start(astro, &ingress, logs).await).await;
    react_router_answers(&Both::start(rr, &ingress, logs).await).await;
    next_js_answers(&Both::start(next, &ingress, logs).await).await;
    eprintln!(
        "frameworks: built in {built:?}, all answered in {:?}",
        started.elapsed()
    );
}
