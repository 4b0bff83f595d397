//! `isolane dev` in a wrangler project with static assets, as a user runs
//! it: the real binary started in the folder, real HTTP. The assets answer
//! before the Worker, as Cloudflare's Workers Static Assets do: files with
//! their type, ETag (304) and ranges, `_headers`, `_redirects`, the
//! trailing-slash redirect, the single-page-application fallback for
//! navigation requests; what no asset matches reaches the Worker, and no
//! asset request enters it (the Worker counts its own invocations). With
//! `binding` and `run_worker_first`, the Worker answers first and reaches
//! its assets through `env.ASSETS.fetch`.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use support::{Dev, HttpClient, client, free_port, when_ready};
#[path = "support/peer.rs"]
mod peer;
use peer::{comparable, get, header, ranges_differ, wrangler_dev, wrangler_ready};

const WRANGLER_TOML: &str = r#"
name = "site"
main = "src/index.js"
compatibility_date = "2025-06-01"

[assets]
directory = "./public"
not_found_handling = "single-page-application"
"#;

const INDEX_JS: &str = r#"
let invocations = 0;
export default {
  fetch(request) {
    invocations += 1;
    const { pathname } = new URL(request.url);
    return new Response(`worker ${pathname} ${invocations}`);
  },
};
"#;

/// Writes the project into `dir`.
fn project(dir: &std::path::Path) {
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("wrangler.toml", WRANGLER_TOML);
    write("src/index.js", INDEX_JS);
    write("public/index.html", "<h1>home</h1>\n");
    write("public/app.js", "console.log('app');\n");
    write("public/docs/index.html", "docs\n");
    write("public/_headers", "/app.js\n  X-Test: yes\n");
    write("public/_redirects", "/old /docs/ 301\n");
}

#[tokio::test]
async fn dev_serves_a_project_s_assets_before_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let client = client();
    let home = when_ready(&client, &mut dev, port, "localhost", "/").await;
    assert_eq!(home, (200, "<h1>home</h1>\n".to_owned()));

    let (status, headers, body) = get(&client, port, "/app.js", &[]).await;
    assert_eq!((status, body.as_str()), (200, "console.log('app');\n"));
    assert_eq!(
        header(&headers, "content-type"),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(header(&headers, "x-test"), "yes", "from _headers");
    let etag = header(&headers, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() > 2, "{etag}");
    let (status, _, body) = get(&client, port, "/app.js", &[("if-none-match", &etag)]).await;
    assert_eq!((status, body.as_str()), (304, ""));
    let (status, headers, body) = get(&client, port, "/app.js", &[("range", "bytes=0-6")]).await;
    assert_eq!((status, body.as_str()), (206, "console"));
    assert_eq!(header(&headers, "content-range"), "bytes 0-6/20");

    let (status, headers, _) = get(&client, port, "/docs", &[]).await;
    assert_eq!((status, header(&headers, "location")), (307, "/docs/"));
    let (status, _, body) = get(&client, port, "/docs/", &[]).await;
    assert_eq!((status, body.as_str()), (200, "docs\n"));
    let (status, headers, _) = get(&client, port, "/old", &[]).await;
    assert_eq!((status, header(&headers, "location")), (301, "/docs/"));
    // A navigation no asset matches gets the single page; anything else
    // the Worker, whose first invocation this is.
    let navigate = [("sec-fetch-mode", "navigate")];
    let (status, _, body) = get(&client, port, "/app/settings", &navigate).await;
    assert_eq!((status, body.as_str()), (200, "<h1>home</h1>\n"));
    let (status, _, body) = get(&client, port, "/api/items", &[]).await;
    assert_eq!((status, body.as_str()), (200, "worker /api/items 1"));
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_does_not_warn_about_the_assets_key_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    when_ready(&client(), &mut dev, port, "localhost", "/").await;
    assert!(
        !dev.log().contains("wrangler key not supported"),
        "dev serves the assets key, and says nothing against it: {}",
        dev.log()
    );
    assert!(dev.interrupt().success());
}

const BOUND_TOML: &str = r#"
name = "site"
main = "src/index.js"
compatibility_date = "2025-06-01"

[assets]
directory = "./public"
binding = "ASSETS"
not_found_handling = "single-page-application"
run_worker_first = true
"#;

const BOUND_JS: &str = r#"
export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/hello') return new Response('api');
    if (pathname === '/by-url') return env.ASSETS.fetch('http://any.host/app.js');
    const asset = await env.ASSETS.fetch(request);
    const response = new Response(asset.body, asset);
    response.headers.set('x-worker', String(env.ASSETS));
    return response;
  },
};
"#;

#[tokio::test]
async fn the_worker_first_reaches_its_assets_through_the_binding() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    std::fs::write(dir.path().join("wrangler.toml"), BOUND_TOML).unwrap();
    std::fs::write(dir.path().join("src/index.js"), BOUND_JS).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let client = client();
    let api = when_ready(&client, &mut dev, port, "localhost", "/api/hello").await;
    assert_eq!(api, (200, "api".to_owned()));
    // Every request runs the Worker first; the asset comes through it.
    let (status, headers, body) = get(&client, port, "/app.js", &[]).await;
    assert_eq!((status, body.as_str()), (200, "console.log('app');\n"));
    assert_eq!(header(&headers, "x-worker"), "[object Fetcher]");
    assert_eq!(header(&headers, "x-test"), "yes", "from _headers");
    assert_eq!(
        header(&headers, "content-type"),
        "text/javascript; charset=utf-8"
    );
    let etag = header(&headers, "etag").to_owned();
    let (status, _, body) = get(&client, port, "/app.js", &[("if-none-match", &etag)]).await;
    assert_eq!((status, body.as_str()), (304, ""));
    let (status, _, body) = get(&client, port, "/by-url", &[]).await;
    assert_eq!((status, body.as_str()), (200, "console.log('app');\n"));
    let (status, headers, _) = get(&client, port, "/old", &[]).await;
    assert_eq!((status, header(&headers, "location")), (301, "/docs/"));
    // What no asset matches: the binding applies not_found_handling (the
    // single page), never the Worker again.
    let (status, headers, body) = get(&client, port, "/app/settings", &[]).await;
    assert_eq!((status, body.as_str()), (200, "<h1>home</h1>\n"));
    assert_eq!(header(&headers, "x-worker"), "[object Fetcher]");
    assert!(dev.interrupt().success());
}

/// An assets-only project (wrangler's `assets` and no `main`): every asset
/// as before, the `404-page` for what no asset matches, with no Worker of
/// the project's own.
#[tokio::test]
async fn dev_serves_an_assets_only_project() {
    let dir = tempfile::tempdir().unwrap();
    let public = dir.path().join("public");
    std::fs::create_dir_all(&public).unwrap();
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = \"brochure\"\ncompatibility_date = \"2025-06-01\"\n\n[assets]\ndirectory = \"./public\"\nnot_found_handling = \"404-page\"\n",
    )
    .unwrap();
    std::fs::write(public.join("index.html"), "<h1>brochure</h1>\n").unwrap();
    std::fs::write(public.join("404.html"), "<h1>not here</h1>\n").unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let client = client();
    let home = when_ready(&client, &mut dev, port, "localhost", "/").await;
    assert_eq!(home, (200, "<h1>brochure</h1>\n".to_owned()));
    let (status, _, body) = get(&client, port, "/nowhere", &[]).await;
    assert_eq!((status, body.as_str()), (404, "<h1>not here</h1>\n"));
    assert!(dev.interrupt().success());
}

/// Without `not_found_handling`, a path no asset matches gets an empty 404
/// (the assets-only Worker's) from the assets alone: no isolate is ever
/// made. A project with neither `main` nor `assets` is refused, naming
/// `main`.
#[tokio::test]
async fn an_assets_only_project_answers_404_and_one_without_assets_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let public = dir.path().join("public");
    std::fs::create_dir_all(&public).unwrap();
    let toml = "name = \"plain\"\ncompatibility_date = \"2025-06-01\"\n";
    std::fs::write(
        dir.path().join("wrangler.toml"),
        format!("{toml}\n[assets]\ndirectory = \"./public\"\n"),
    )
    .unwrap();
    std::fs::write(public.join("index.html"), "<h1>plain</h1>\n").unwrap();
    let port = free_port().unwrap();
    let admin = free_port().unwrap().to_string();
    let args = ["--port", &port.to_string(), "--admin-port", &admin];
    let mut dev = Dev::start_in(&args, Some(dir.path()));
    let client = client();
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    for path in ["/nowhere", "/deep/link", "/api/x"] {
        let (status, _, body) = get(&client, port, path, &[]).await;
        assert_eq!((status, body.as_str()), (404, ""), "{path}");
    }
    let metrics = counted(&client, admin.parse().unwrap(), 4.0).await;
    let created = support::metric_sum(&metrics, "isolane_node_isolate_creations_total");
    assert_eq!(created, 0.0, "an isolate was made:\n{metrics}");
    assert!(dev.interrupt().success());

    std::fs::write(dir.path().join("wrangler.toml"), toml).unwrap();
    let mut dev = Dev::start_in(
        &["--port", &free_port().unwrap().to_string()],
        Some(dir.path()),
    );
    let status = dev
        .process
        .wait_exit(std::time::Duration::from_secs(60))
        .expect("isolane dev exits");
    assert!(!status.success());
    assert!(dev.log().contains("no `main`"), "{}", dev.log());
}

/// An asset changed while `isolane dev` runs reaches the Worker's
/// `env.ASSETS` too, not only clients: the assets are part of the
/// revision, so the warm isolate that held the old files is replaced.
#[tokio::test]
async fn a_changed_asset_reaches_the_binding_of_a_running_worker() {
    let dir = tempfile::tempdir().unwrap();
    let public = dir.path().join("public");
    std::fs::create_dir_all(&public).unwrap();
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = \"live\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-06-01\"\n\n[assets]\ndirectory = \"./public\"\nbinding = \"ASSETS\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("worker.js"),
        "export default { fetch(request, env) { return env.ASSETS.fetch('http://live.test/note.txt'); } };\n",
    )
    .unwrap();
    std::fs::write(public.join("note.txt"), "first\n").unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let client = client();
    let bound = when_ready(&client, &mut dev, port, "localhost", "/through-the-binding").await;
    assert_eq!(bound, (200, "first\n".to_owned()));

    std::fs::write(public.join("note.txt"), "second\n").unwrap();
    isolane_testenv::wait_until(
        "the changed asset, directly and through env.ASSETS",
        std::time::Duration::from_secs(30),
        || async {
            let (_, _, direct) = get(&client, port, "/note.txt", &[]).await;
            let (_, _, bound) = get(&client, port, "/through-the-binding", &[]).await;
            (direct == "second\n" && bound == "second\n").then_some(())
        },
    )
    .await;
    assert!(dev.interrupt().success());
}

/// A Vite single-page app (built here by Vite's own CLI) with `_headers`,
/// `_redirects` and a Worker behind it, served by `isolane dev` and by
/// `wrangler dev` (Cloudflare's asset Worker on workerd; wrangler runs on
/// Node.js 22, which `bench/node22.sh` installs from npm) from the same
/// folder: every request gets the same status, body and headers that
/// matter (type, location, cache control) from both, and each server's own
/// ETag gets its 304. The ETag values differ (Isolane's are SHA-256,
/// workerd's shorter), and so do ranges: Isolane answers `Range` with a
/// 206 (as the issue asks), `wrangler dev`'s local asset Worker ignores it
/// and sends the whole file.
#[tokio::test]
async fn a_vite_spa_is_served_as_wrangler_dev_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = vite_spa(dir.path());
    let isolane_port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &isolane_port.to_string()], Some(dir.path()));
    let wrangler_port = free_port().unwrap();
    let _wrangler = wrangler_dev(dir.path(), wrangler_port);
    let client = client();
    when_ready(&client, &mut dev, isolane_port, "localhost", "/").await;
    wrangler_ready(&client, dir.path(), wrangler_port, "/").await;
    let navigate = [("sec-fetch-mode", "navigate")];
    let requests: [(&str, &[(&str, &str)]); 8] = [
        ("/", &[]),
        ("/index.html", &[]),
        (&script, &[]),
        ("/about", &[]),
        ("/about/", &[]),
        ("/old", &[]),
        ("/api/items", &[]),
        ("/client/route", &navigate),
    ];
    for (path, headers) in requests {
        let ours = get(&client, isolane_port, path, headers).await;
        let theirs = get(&client, wrangler_port, path, headers).await;
        assert_eq!(
            comparable(&ours),
            comparable(&theirs),
            "GET {path} {headers:?}"
        );
        for reply in [&ours, &theirs] {
            let etag = header(&reply.1, "etag");
            let asset = reply.0 == 200 && !reply.2.starts_with("worker ");
            assert!(!asset || etag.starts_with('"'), "GET {path}: ETag {etag:?}");
        }
    }
    ranges_differ(&client, isolane_port, wrangler_port, &script).await;
    for port in [isolane_port, wrangler_port] {
        let (_, headers, _) = get(&client, port, &script, &[]).await;
        let etag = header(&headers, "etag").to_owned();
        let (status, _, body) = get(&client, port, &script, &[("if-none-match", &etag)]).await;
        assert_eq!(
            (status, body.as_str()),
            (304, ""),
            "port {port}, ETag {etag}"
        );
    }
    assert!(dev.interrupt().success());
}

/// Builds the app into `dir/public` with Vite and writes the project around
/// it; returns the hashed script's path.
fn vite_spa(dir: &std::path::Path) -> String {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html>\n<html><head><title>spa</title></head>\n<body><div id=\"app\"></div><script type=\"module\" src=\"/src/main.js\"></script></body></html>\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/main.js"),
        "document.getElementById('app').textContent = 'hello from the SPA';\n",
    )
    .unwrap();
    let vite = support::repo().join("compat/node_modules/.bin/vite");
    let built = std::process::Command::new(&vite)
        .args([
            "build",
            "--outDir",
            "public",
            "--emptyOutDir",
            "--logLevel",
            "warn",
        ])
        .current_dir(dir)
        .output()
        .expect("vite runs (compat/node_modules: make deps)");
    assert!(
        built.status.success(),
        "vite build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let public = dir.join("public");
    std::fs::create_dir_all(public.join("about")).unwrap();
    std::fs::write(public.join("about/index.html"), "<h1>about</h1>\n").unwrap();
    std::fs::write(
        public.join("_headers"),
        "/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n",
    )
    .unwrap();
    std::fs::write(public.join("_redirects"), "/old /about 301\n").unwrap();
    std::fs::write(
        dir.join("worker.js"),
        "export default { fetch(request) { return new Response('worker ' + new URL(request.url).pathname); } };\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("wrangler.toml"),
        "name = \"spa\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-06-01\"\n\n[assets]\ndirectory = \"./public\"\nnot_found_handling = \"single-page-application\"\n",
    )
    .unwrap();
    let script = std::fs::read_dir(public.join("assets"))
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .find(|name| name.ends_with(".js"))
        .expect("vite wrote a hashed script");
    format!("/assets/{script}")
}

/// The admin port's `/metrics` once the router has counted `requests`.
async fn counted(client: &HttpClient, admin: u16, requests: f64) -> String {
    let started = std::time::Instant::now();
    loop {
        let (status, _, metrics) = get(client, admin, "/metrics", &[]).await;
        assert_eq!(status, 200);
        if support::metric_sum(&metrics, "isolane_router_requests_total") >= requests {
            return metrics;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "requests not counted:\n{metrics}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}
