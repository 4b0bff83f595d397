//! A wrangler project's static assets in a cluster (issue 59): a real
//! kube-apiserver, a real OCI registry, and the operator, a runtime node
//! and the router as processes. `isolane deploy --repository` pushes the
//! project's code and its `public/` folder as one artifact (the assets in
//! its second layer) and applies the Worker naming it by digest; the node
//! answers asset requests from that layer before the engine, as
//! `isolane dev` does from the folder:
//! - an asset with its `Content-Type`, strong `ETag` and `_headers`; a 304
//!   for its ETag; a 206 for a range; a `_redirects` rule's 301;
//! - a path no asset answers reaches the Worker, except a navigation
//!   request (`Sec-Fetch-Mode: navigate`, compatibility date 2025-04-01 or
//!   later), which gets the single-page application's `index.html`;
//! - none of them enters the Worker: its own count of the requests it saw
//!   stays at the API calls made, and the node counts each asset answer
//!   (`isolane_node_asset_answers_total`);
//! - the Worker reaches the same assets through `env.ASSETS` (wrangler's
//!   `assets.binding`, carried in the artifact's settings);
//! - an assets-only project (no `main`) deployed beside it answers its page,
//!   and its 404 page for a path no asset matches (from the assets alone:
//!   its artifact says `assets_only`).

use std::path::Path;
use std::time::Duration;

use isolane_e2e::bundles::{self, create_pull_secret, registry_cluster};
use isolane_e2e::cluster::Cluster;
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::workers::{self, wait_ready};
use isolane_testenv::{ControlPlane, Registry, wait_until};

const NAMESPACE: &str = "site";
const HOST: &str = "site.test";
const SETTLE: Duration = Duration::from_secs(90);

const WORKER: &str = "let seen = 0;\n\
export default {\n\
  async fetch(request, env) {\n\
    seen += 1;\n\
    const url = new URL(request.url);\n\
    if (url.pathname === '/api/seen') return new Response(String(seen));\n\
    if (url.pathname === '/api/bound') return env.ASSETS.fetch('http://site.test/assets/app.3f2a.js');\n\
    return new Response('worker ' + url.pathname);\n\
  },\n\
};\n";

/// The project: a Worker, and `public/` with an SPA's files.
fn write_project(dir: &Path) {
    let public = dir.join("public");
    std::fs::create_dir_all(public.join("assets")).expect("mkdir");
    std::fs::write(dir.join("worker.js"), WORKER).expect("write");
    std::fs::write(
        dir.join("wrangler.toml"),
        format!(
            "name = \"site\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-06-01\"\n\
             routes = [{{ pattern = \"{HOST}\", custom_domain = true }}]\n\
             [assets]\ndirectory = \"public\"\nbinding = \"ASSETS\"\nnot_found_handling = \"single-page-application\"\n"
        ),
    )
    .expect("write");
    std::fs::write(public.join("index.html"), "<h1>the app</h1>").expect("write");
    std::fs::write(public.join("assets/app.3f2a.js"), "console.log('app');").expect("write");
    std::fs::write(
        public.join("_headers"),
        "/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n",
    )
    .expect("write");
    std::fs::write(public.join("_redirects"), "/old /index.html 301\n").expect("write");
}

/// An assets-only project (no `main`) on [`BROCHURE_HOST`], with a 404
/// page.
fn write_assets_only_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("public")).expect("mkdir");
    std::fs::write(
        dir.join("wrangler.toml"),
        format!(
            "name = \"brochure\"\ncompatibility_date = \"2025-06-01\"\n\
             routes = [{{ pattern = \"{BROCHURE_HOST}\", custom_domain = true }}]\n\
             [assets]\ndirectory = \"public\"\nnot_found_handling = \"404-page\"\n"
        ),
    )
    .expect("write");
    std::fs::write(dir.join("public/index.html"), "<h1>brochure</h1>").expect("write");
    std::fs::write(dir.join("public/404.html"), "<h1>not here</h1>").expect("write");
}

const BROCHURE_HOST: &str = "brochure.test";

/// `isolane deploy` of the project in `dir`, pushed to
/// `<registry>/site/<repository>`.
fn deploy(cp: &ControlPlane, registry: &Registry, dir: &Path, repository: &str) -> String {
    bundles::deploy(cp, registry, (dir, NAMESPACE), repository)
}

async fn get(ingress: &Ingress, path: &str, headers: &[(&str, &str)]) -> Reply {
    ingress
        .get_with(HOST, path, headers)
        .await
        .unwrap_or_else(|error| panic!("GET {path}: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployed_assets_are_answered_by_the_node_without_the_worker() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let registry = Registry::start("isolane", "pull-me").expect("registry starts");
    let client = cp.client();
    create_pull_secret(&client, NAMESPACE, &registry).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    write_project(&project);
    let pushed = deploy(&cp, &registry, &project, "app");
    assert!(pushed.contains("4 asset files"), "{pushed}");
    let options = registry_cluster(&registry, Vec::new());
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let ingress = Ingress::new(cluster.ingress());
    wait_ready(&client, NAMESPACE, "site", SETTLE).await;
    // Each reply from the Worker is one request it saw.
    let hello_calls = std::sync::atomic::AtomicU32::new(0);
    wait_until("the Worker answers", SETTLE, || async {
        let reply = ingress.get(HOST, "/api/hello").await.ok()?;
        let from_worker = reply.body == "worker /api/hello";
        if from_worker {
            hello_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        from_worker.then_some(())
    })
    .await;

    let index = get(&ingress, "/", &[]).await;
    assert_eq!(
        (index.status, index.body.as_str()),
        (200, "<h1>the app</h1>")
    );
    assert_eq!(
        index.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    let script = get(&ingress, "/assets/app.3f2a.js", &[]).await;
    assert_eq!(
        (script.status, script.body.as_str()),
        (200, "console.log('app');")
    );
    assert_eq!(
        script.header("cache-control"),
        "public, max-age=31536000, immutable",
        "_headers"
    );
    let etag = script.header("etag").to_owned();
    assert!(
        etag.starts_with('"') && etag.len() == 66,
        "a strong SHA-256 ETag: {etag}"
    );
    let again = get(&ingress, "/assets/app.3f2a.js", &[("if-none-match", &etag)]).await;
    assert_eq!((again.status, again.body.as_str()), (304, ""));
    let range = get(&ingress, "/assets/app.3f2a.js", &[("range", "bytes=0-6")]).await;
    assert_eq!((range.status, range.body.as_str()), (206, "console"));
    assert_eq!(range.header("content-range"), "bytes 0-6/19");
    let moved = get(&ingress, "/old", &[]).await;
    assert_eq!(
        (moved.status, moved.header("location")),
        (301, "/index.html")
    );
    let navigate = [("sec-fetch-mode", "navigate")];
    let page = get(&ingress, "/settings/profile", &navigate).await;
    assert_eq!(
        (page.status, page.body.as_str()),
        (200, "<h1>the app</h1>"),
        "SPA"
    );
    let fetched = get(&ingress, "/settings/profile", &[]).await;
    assert_eq!(fetched.body, "worker /settings/profile", "not a navigation");

    let bound = get(&ingress, "/api/bound", &[]).await;
    assert_eq!(
        (bound.status, bound.body.as_str()),
        (200, "console.log('app');"),
        "env.ASSETS"
    );
    assert_eq!(
        bound.header("cache-control"),
        "public, max-age=31536000, immutable"
    );

    // The Worker saw the /api/hello calls that it answered, the fetch of
    // /settings/profile, /api/bound and this request: never an asset's.
    let seen = get(&ingress, "/api/seen", &[]).await;
    let hello_calls = hello_calls.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        seen.body,
        (hello_calls + 3).to_string(),
        "requests the Worker saw"
    );
    let answers = cluster.nodes[0]
        .metric_sum("isolane_node_asset_answers_total", "")
        .await
        .unwrap_or(0.0);
    assert_eq!(
        answers, 6.0,
        "/, the script, 304, 206, 301 and the SPA page"
    );

    assets_only_project_is_served(&cp, &registry, dir.path(), &ingress).await;
}

/// An assets-only project deployed beside: its page, and its 404 page for a
/// path no asset matches.
async fn assets_only_project_is_served(
    cp: &ControlPlane,
    registry: &Registry,
    dir: &Path,
    ingress: &Ingress,
) {
    let project = dir.join("brochure");
    write_assets_only_project(&project);
    deploy(cp, registry, &project, "brochure");
    wait_ready(&cp.client(), NAMESPACE, "brochure", SETTLE).await;
    let page = wait_until("the assets-only Worker answers", SETTLE, || async {
        let reply = ingress.get(BROCHURE_HOST, "/").await.ok()?;
        (reply.status == 200).then_some(reply)
    })
    .await;
    assert_eq!(page.body, "<h1>brochure</h1>");
    let missing = ingress
        .get(BROCHURE_HOST, "/nowhere")
        .await
        .expect("GET /nowhere");
    assert_eq!(
        (missing.status, missing.body.as_str()),
        (404, "<h1>not here</h1>"),
        "the 404 page, from the assets alone"
    );
}
