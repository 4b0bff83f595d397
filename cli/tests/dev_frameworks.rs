//! Real framework builds with their static assets, made here by the
//! frameworks' own CLIs, served by `isolane dev` and by `wrangler dev`
//! (Cloudflare's CLI on workerd, Node.js 22 from `bench/node22.sh`) from the
//! same folder and compared request by request (issue 59's proof): the
//! server-rendered pages and data requests the Worker answers, the client
//! chunks the assets answer (type, cache control, each server's own ETag
//! and its 304), an unknown route.
#![allow(clippy::unwrap_used)]

use std::path::Path;

#[path = "support/dev.rs"]
mod support;
use support::{Dev, HttpClient, client, free_port, when_ready};
#[path = "support/peer.rs"]
mod peer;
mod compat {
    pub mod bundle;
}
use peer::{Reply, comparable, get, header, ranges_differ, wrangler_dev, wrangler_ready};

/// The compat suite's build of `app` (its framework's CLI, then the Worker
/// bundled as wrangler bundles it) into `out`.
fn bundle(app: &str, out: &Path) {
    compat::bundle::bundle(&support::repo().join("compat"), out, &[app]);
}

/// The file of `dir` (as `/name`) whose name starts with `prefix` and
/// ends with `suffix`.
fn asset(dir: &Path, prefix: &str, suffix: &str) -> String {
    isolane_testenv::frameworks::asset(dir, prefix, suffix)
        .unwrap_or_else(|| panic!("no {prefix}*{suffix} in {}", dir.display()))
}

/// `isolane dev` and `wrangler dev` in `dir`, both answering `ready`.
async fn both(dir: &Path, client: &HttpClient, ready: &str) -> Servers {
    both_with(dir, client, ready, &[]).await
}

/// [`both`], `isolane dev` with the environment `envs`.
async fn both_with(
    dir: &Path,
    client: &HttpClient,
    ready: &str,
    envs: &[(&str, &std::ffi::OsStr)],
) -> Servers {
    let isolane = free_port().unwrap();
    let mut dev = Dev::start_with(&["--port", &isolane.to_string()], Some(dir), envs);
    let wrangler = free_port().unwrap();
    let process = wrangler_dev(dir, wrangler);
    when_ready(client, &mut dev, isolane, "localhost", ready).await;
    wrangler_ready(client, dir, wrangler, ready).await;
    Servers {
        dev,
        _wrangler: process,
        isolane,
        wrangler,
    }
}

struct Servers {
    dev: Dev,
    _wrangler: isolane_testenv::Process,
    isolane: u16,
    wrangler: u16,
}

impl Servers {
    /// `GET path` from both: Isolane's reply, then wrangler's, after
    /// asserting that they agree on what [`comparable`] holds.
    async fn same(&self, client: &HttpClient, path: &str) -> (Reply, Reply) {
        self.same_with(client, path, &[]).await
    }

    /// [`Servers::same`] with request headers.
    async fn same_with(
        &self,
        client: &HttpClient,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (Reply, Reply) {
        let ours = get(client, self.isolane, path, headers).await;
        let theirs = get(client, self.wrangler, path, headers).await;
        assert_eq!(
            comparable(&ours),
            comparable(&theirs),
            "GET {path} {headers:?}"
        );
        (ours, theirs)
    }

    /// An asset from both, the same, each with an ETag of its own that
    /// gets its 304. The ETag values differ: Isolane's are SHA-256 of the
    /// content, workerd's asset Worker's a shorter hash of its own.
    async fn same_asset(&self, client: &HttpClient, path: &str) -> Reply {
        let (ours, theirs) = self.same(client, path).await;
        for (port, reply) in [(self.isolane, &ours), (self.wrangler, &theirs)] {
            let etag = header(&reply.1, "etag");
            assert!(etag.starts_with('"'), "GET {path} on {port}: ETag {etag:?}");
            let (status, _, body) = get(client, port, path, &[("if-none-match", etag)]).await;
            assert_eq!((status, body.as_str()), (304, ""), "{path} on {port}");
        }
        ours
    }
}

const REACT_ROUTER_TOML: &str = r#"
name = "react-router"
main = "react-router.js"
compatibility_date = "2025-06-01"
compatibility_flags = ["nodejs_compat"]

[assets]
directory = "./react-router-build/client"
"#;

/// `_headers` for a build whose `/assets/` file names carry their hash.
const IMMUTABLE_ASSETS: &str = "/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n";
/// The cache control that rule gives.
const IMMUTABLE_CACHE: &str = "public, max-age=31536000, immutable";

/// React Router 7 in framework mode (`compat/apps/react-router`), built by
/// `react-router build` (its Vite plugin: the server build and the client
/// build) and served as its Cloudflare template serves it: the Worker for
/// the pages and `.data` requests, the client build as the assets, with
/// the `_headers` (long-lived caching for the hashed chunks) and
/// `_redirects` a user adds to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_react_router_build_is_served_as_wrangler_dev_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    bundle("react-router", dir.path());
    std::fs::write(dir.path().join("wrangler.toml"), REACT_ROUTER_TOML).unwrap();
    let client_build = dir.path().join("react-router-build/client");
    std::fs::write(client_build.join("_headers"), IMMUTABLE_ASSETS).unwrap();
    std::fs::write(
        client_build.join("_redirects"),
        "/people/* /users/:splat 301\n",
    )
    .unwrap();
    let assets = dir.path().join("react-router-build/client/assets");
    let entry = format!("/assets{}", asset(&assets, "entry.client-", ".js"));
    // The root route's module: always there (a shared chunk's name depends
    // on where node_modules resolves, `chunk-` or `jsx-runtime-`).
    let chunk = format!("/assets{}", asset(&assets, "root-", ".js"));
    let client = client();
    let servers = both(dir.path(), &client, "/").await;
    let (home, _) = servers.same(&client, "/").await;
    assert_eq!(home.0, 200);
    assert!(
        home.2.contains(&entry),
        "the page loads {entry}: {}",
        home.2
    );
    for path in ["/?name=%3Cada%3E", "/users/7", "/users/7.data"] {
        let (reply, _) = servers.same(&client, path).await;
        assert_eq!(reply.0, 200, "GET {path}: {}", reply.2);
    }
    for (path, status) in [("/users/x", 404), ("/nope", 404), ("/people/7", 301)] {
        let (reply, _) = servers.same(&client, path).await;
        assert_eq!(reply.0, status, "GET {path}");
    }
    for path in [&entry, &chunk] {
        let reply = servers.same_asset(&client, path).await;
        let cache = header(&reply.1, "cache-control");
        assert_eq!(cache, "public, max-age=31536000, immutable", "{path}");
        let kind = header(&reply.1, "content-type");
        assert_eq!(kind, "text/javascript; charset=utf-8", "{path}");
    }
    ranges_differ(&client, servers.isolane, servers.wrangler, &chunk).await;
    assert!(servers.dev.interrupt().success());
}

/// Next.js 16 (App Router, `compat/apps/nextjs`) built by OpenNext for
/// Cloudflare (`opennextjs-cloudflare build`, in the app's folder, redone
/// only when its source changed), served as its `wrangler.jsonc` says: the
/// Worker, with `.open-next/assets` as the assets behind `ASSETS`. Both
/// servers run the Worker as the compat suite bundles it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_js_build_through_open_next_is_served_as_wrangler_dev_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    bundle("nextjs", dir.path());
    let assets = support::repo().join("compat/apps/nextjs/.open-next/assets");
    let config = serde_json::json!({
        "name": "nextjs",
        "main": "nextjs.js",
        // The date compat/lib/wrangler.mjs chose unenv's polyfills for.
        "compatibility_date": "2026-11-01",
        "compatibility_flags": ["nodejs_compat"],
        "assets": { "directory": assets, "binding": "ASSETS" },
    });
    std::fs::write(dir.path().join("wrangler.json"), config.to_string()).unwrap();
    let chunks = assets.join("_next/static/chunks");
    let chunk = format!("/_next/static/chunks{}", asset(&chunks, "", ".js"));
    let client = client();
    let servers = both(dir.path(), &client, "/").await;
    let (home, _) = servers.same(&client, "/").await;
    assert_eq!(home.0, 200);
    assert!(home.2.contains("/_next/static/chunks/"), "{}", home.2);
    for (path, status) in [
        ("/users/7", 200),
        ("/api/hello?q=42", 200),
        ("/old-home", 308),
        ("/users/x", 404),
        ("/nope", 404),
    ] {
        let (reply, _) = servers.same(&client, path).await;
        assert_eq!(reply.0, status, "GET {path}: {}", reply.2);
    }
    rsc_navigation(&servers, &client, "/users/7").await;
    let reply = servers.same_asset(&client, &chunk).await;
    assert_eq!(
        header(&reply.1, "content-type"),
        "text/javascript; charset=utf-8"
    );
    ranges_differ(&client, servers.isolane, servers.wrangler, &chunk).await;
    in_its_own_folder(&client, servers.wrangler).await;
    assert!(servers.dev.interrupt().success());
}

/// `isolane dev` in `compat/apps/nextjs` itself, on its own
/// `wrangler.jsonc` (`main` is OpenNext's unbundled `.open-next/worker.js`,
/// its own compatibility date): built by the project's wrangler (the
/// compat suite's), it answers as `wrangler dev` on the compat bundle,
/// whose port is `wrangler`.
async fn in_its_own_folder(client: &HttpClient, wrangler: u16) {
    let app = support::repo().join("compat/apps/nextjs");
    let node = isolane_testenv::wrangler::node22(&support::repo()).expect("Node.js 22");
    let port = free_port().unwrap();
    let envs = [("ISOLANE_NODE", node.as_os_str())];
    let mut dev = Dev::start_with(&["--port", &port.to_string()], Some(&app), &envs);
    when_ready(client, &mut dev, port, "localhost", "/").await;
    for path in ["/", "/users/7", "/api/hello?q=42", "/old-home", "/nope"] {
        let ours = get(client, port, path, &[]).await;
        let theirs = get(client, wrangler, path, &[]).await;
        assert_eq!(comparable(&ours), comparable(&theirs), "GET {path}");
    }
    assert!(dev.interrupt().success());
}

/// A client-side navigation to `path`: the page as its React Server
/// Components payload, which Next's router fetches with `RSC: 1` and an
/// `_rsc` query that hashes its headers (without it, a 307 to the URL with
/// it). The payload names its metadata and viewport boundaries by a random
/// key per request, which differs between any two answers; apart from
/// those, both servers send the same bytes.
async fn rsc_navigation(servers: &Servers, client: &HttpClient, path: &str) {
    let rsc = [("rsc", "1")];
    let (bare, _) = servers.same_with(client, path, &rsc).await;
    let hashed = header(&bare.1, "location").to_owned();
    assert_eq!(bare.0, 307, "{hashed}");
    assert!(hashed.contains("_rsc"), "{hashed}");
    let keys = regex::Regex::new(r#""[A-Za-z0-9_-]{21}([vm])""#).unwrap();
    let (hashed, keys, rsc) = (hashed.as_str(), &keys, &rsc);
    let flight = move |port| async move {
        let (status, headers, body) = get(client, port, hashed, rsc).await;
        let body = keys.replace_all(&body, "\"<key>$1\"").into_owned();
        (status, headers, body)
    };
    let (ours, theirs) = (
        flight(servers.isolane).await,
        flight(servers.wrangler).await,
    );
    assert_eq!(
        comparable(&ours),
        comparable(&theirs),
        "GET {hashed} RSC: 1"
    );
    assert_eq!(header(&ours.1, "content-type"), "text/x-component");
    assert!(ours.2.contains("\"<key>m\""), "{}", ours.2);
}

/// `astro build` of `compat/apps/astro` in its folder.
fn astro_build(app: &Path) {
    isolane_testenv::frameworks::astro_build(&support::repo(), app)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// An Astro site (`compat/apps/astro`: a prerendered page, server-rendered
/// pages, an API route, a public file), built by `astro build` and served
/// from the app's own folder, as `wrangler dev` serves it: both follow the
/// build's redirect to the config it generated. The prerendered page and
/// the public file are assets (each server's own ETag gets its 304); the
/// rest is the Worker's, Astro's own 404 page included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_astro_build_is_served_as_wrangler_dev_serves_it() {
    let app = support::repo().join("compat/apps/astro");
    astro_build(&app);
    let client = client();
    let servers = both(&app, &client, "/").await;
    let home = servers.same_asset(&client, "/").await;
    assert!(home.2.contains("rendered at build time"), "{}", home.2);
    servers.same_asset(&client, "/robots.txt").await;
    for (path, status) in [
        ("/hello/ada?q=1", 200),
        ("/api/hello?q=2", 200),
        ("/hello/nobody", 404),
        ("/nope", 404),
    ] {
        let (reply, _) = servers.same(&client, path).await;
        assert_eq!(reply.0, status, "GET {path}: {}", reply.2);
    }
    let (page, _) = servers.same(&client, "/hello/ada?q=1").await;
    assert!(
        page.2.contains("<h1>Hello ada</h1><p>q = 1</p>"),
        "{}",
        page.2
    );
    // Astro's image endpoint resizes a public file through `env.IMAGES`
    // (the build's `images` binding): the same type and size from both.
    let resized = "/_image?href=%2Fpixel.png&w=16&f=webp";
    let ours = image_reply(&client, servers.isolane, resized).await;
    let theirs = image_reply(&client, servers.wrangler, resized).await;
    assert_eq!(ours, theirs, "GET {resized}");
    assert_eq!(
        ours,
        (200, "image/webp".to_owned(), (16, 12)),
        "GET {resized}"
    );
    assert!(servers.dev.interrupt().success());
    // `isolane deploy` takes the build as it is, its images binding too
    // (a dry run names the artifact by digest, pushing nothing).
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_isolane"))
        .args(["deploy", "--dry-run", "-n", "apps"])
        .args(["--repository", "registry.example/apps/astro"])
        .current_dir(&app)
        .output()
        .unwrap();
    let yaml = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        yaml.contains("  - name: IMAGES\n    images: {}\n"),
        "{yaml}\n{stderr}"
    );
}

/// `GET path`'s status, content type and decoded image size.
async fn image_reply(client: &HttpClient, port: u16, path: &str) -> (u16, String, (u32, u32)) {
    use http_body_util::BodyExt;
    let request = http::Request::get(format!("http://127.0.0.1:{port}{path}"))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let kind = header(response.headers(), "content-type").to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let size =
        image::load_from_memory(&body).map_or((0, 0), |image| (image.width(), image.height()));
    (status, kind, size)
}

/// The Vite + React single-page app (`compat/apps/vite-spa`), built by
/// `vite build` and served from its folder by both: its `wrangler.toml`
/// runs the Worker first for `/api/*` only (`run_worker_first` routes), so
/// every other path the assets do not have gets the SPA page, navigation
/// or not; a dotfile folder is served and what `.assetsignore` names is
/// not. (isolane dev builds the Worker with the project's wrangler, on
/// Node.js 22.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vite_spa_with_worker_routes_is_served_as_wrangler_dev_serves_it() {
    let repo = support::repo();
    let app = isolane_testenv::frameworks::app(&repo, "vite-spa");
    isolane_testenv::frameworks::vite_build(&repo, &app).unwrap_or_else(|e| panic!("{e}"));
    let chunk = format!(
        "/assets{}",
        asset(&app.join("dist/assets"), "index-", ".js")
    );
    let node = isolane_testenv::wrangler::node22(&repo).expect("Node.js 22");
    let client = client();
    let envs = [("ISOLANE_NODE", node.as_os_str())];
    let servers = both_with(&app, &client, "/", &envs).await;
    let page = servers.same_asset(&client, "/").await;
    assert!(page.2.contains(&chunk), "{}", page.2);
    let script = servers.same_asset(&client, &chunk).await;
    assert_eq!(header(&script.1, "cache-control"), IMMUTABLE_CACHE);
    servers
        .same_asset(&client, "/.well-known/security.txt")
        .await;
    let (user, _) = servers.same(&client, "/api/users/7").await;
    assert_eq!(user.2, r#"{"id":7,"name":"user 7"}"#);
    let (missing, _) = servers.same(&client, "/api/nope").await;
    assert_eq!(missing.0, 404);
    let navigate = [("sec-fetch-mode", "navigate")];
    let map = format!("{chunk}.map");
    for (path, headers) in [
        ("/users/7", &navigate[..]),
        ("/users/7", &[]),
        (map.as_str(), &[]),
        ("/.assetsignore", &[]),
    ] {
        let (reply, _) = servers.same_with(&client, path, headers).await;
        assert_eq!(
            (reply.0, &reply.2),
            (200, &page.2),
            "GET {path} {headers:?}"
        );
    }
    assert!(servers.dev.interrupt().success());
}
