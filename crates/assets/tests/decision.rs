//! The whole decision for a request, in Cloudflare's order:
//! `run_worker_first`, `_redirects`, `html_handling`/`not_found_handling`,
//! the conditional answer, `_headers`. Each test names the page of
//! developers.cloudflare.com/workers/static-assets/ its expectation is from.

#![allow(clippy::unwrap_used)] // test helpers panic on purpose

use http::header::{HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use isolane_assets::{
    AssetRequest, Assets, Body, Config, Decision, HeaderRules, Manifest, NotFoundHandling,
    Redirects, RunWorkerFirst,
};

fn assets(config: Config) -> Assets {
    let mut manifest = Manifest::new();
    for path in [
        "/index.html",
        "/about.html",
        "/docs/index.html",
        "/app.js",
        "/café.txt",
    ] {
        manifest.insert_bytes(path, path.as_bytes()).unwrap();
    }
    Assets {
        manifest,
        redirects: Redirects::parse(
            "/old /about 301\n/page/ /page2/#fragment 301\n/blog/* /news/:splat 302\n/team /about 200\n/gone /nowhere 200\n",
        )
        .unwrap(),
        headers: HeaderRules::parse("/*\n  X-Frame-Options: DENY\n/app.js\n  ! Cache-Control\n")
            .unwrap(),
        config,
    }
}

fn with_worker() -> Config {
    Config {
        has_worker: true,
        ..Config::default()
    }
}

/// A request's decision, as `kind status detail`.
fn decide(
    assets: &Assets,
    method: Method,
    target: &str,
    headers: &[(&'static str, &str)],
    binding: bool,
) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    let request = AssetRequest {
        method: &method,
        host: "example.com",
        path,
        query,
        headers: &map,
    };
    let decision = if binding {
        assets.fetch(&request)
    } else {
        assets.route(&request)
    };
    match decision {
        Decision::RunWorker => "worker".to_owned(),
        Decision::Asset(s) => format!("asset {} {}", s.status.as_u16(), s.path),
        Decision::Redirect { status, location } => {
            format!("redirect {} {location}", status.as_u16())
        }
        Decision::NotFound => "404".to_owned(),
        Decision::MethodNotAllowed => "405".to_owned(),
    }
}

fn get(assets: &Assets, target: &str) -> String {
    decide(assets, Method::GET, target, &[], false)
}

fn navigate(assets: &Assets, target: &str) -> String {
    decide(
        assets,
        Method::GET,
        target,
        &[("sec-fetch-mode", "navigate")],
        false,
    )
}

#[test]
fn assets_first_then_the_worker() {
    // routing/worker-script/: "Cloudflare will first attempt to serve static
    // assets if one matches ... If an appropriate static asset if not found,
    // Cloudflare will invoke your Worker script."
    let a = assets(with_worker());
    assert_eq!(get(&a, "/about"), "asset 200 /about.html");
    assert_eq!(get(&a, "/api/x"), "worker");
    // Without a Worker script, nothing matched is a 404.
    assert_eq!(get(&assets(Config::default()), "/api/x"), "404");
}

#[test]
fn html_handling_redirects_keep_the_query() {
    // routing/advanced/html-handling/: `/file.html` → 307 to `/file`.
    let a = assets(Config::default());
    assert_eq!(get(&a, "/about.html?x=1"), "redirect 307 /about?x=1");
    assert_eq!(get(&a, "/docs"), "redirect 307 /docs/");
    assert_eq!(get(&a, "/docs/"), "asset 200 /docs/index.html");
}

#[test]
fn paths_are_served_at_their_encoded_form() {
    let a = assets(Config::default());
    assert_eq!(get(&a, "/caf%C3%A9.txt"), "asset 200 /café.txt");
    assert_eq!(get(&a, "/café.txt"), "redirect 307 /caf%C3%A9.txt");
    assert_eq!(get(&a, "//about"), "redirect 307 /about");
}

#[test]
fn redirects_come_first() {
    // redirects/: "Redirects are always followed, regardless of whether or
    // not an asset matches"; "Redirects execute before headers".
    let a = assets(with_worker());
    assert_eq!(get(&a, "/old?q=2"), "redirect 301 /about?q=2");
    assert_eq!(get(&a, "/blog/a/b"), "redirect 302 /news/a/b");
    // The request's query goes before the destination's fragment.
    assert_eq!(get(&a, "/page/?q=1"), "redirect 301 /page2/?q=1#fragment");
    // "Proxying": a 200 serves the destination at the source's URL.
    assert_eq!(get(&a, "/team"), "asset 200 /about.html");
    // A proxied path with no asset is a 404, not the Worker.
    assert_eq!(get(&a, "/gone"), "404");
}

#[test]
fn spa_fallback_is_for_navigation_requests_when_there_is_a_worker() {
    // routing/single-page-application/ "Navigation requests": with a Worker
    // script, only `Sec-Fetch-Mode: navigate` requests get /index.html;
    // other unmatched requests (a client-side `fetch`) reach the Worker.
    let spa = Config {
        not_found_handling: NotFoundHandling::SinglePageApplication,
        ..with_worker()
    };
    let a = assets(spa.clone());
    assert_eq!(navigate(&a, "/users/42"), "asset 200 /index.html");
    assert_eq!(get(&a, "/api/date"), "worker");
    // Before the compatibility flag, navigation requests reached the Worker too.
    let old = assets(Config {
        navigation_prefers_assets: false,
        ..spa.clone()
    });
    assert_eq!(navigate(&old, "/users/42"), "worker");
    // Without a Worker script every unmatched request gets the fallback.
    let alone = assets(Config {
        has_worker: false,
        ..spa
    });
    assert_eq!(get(&alone, "/users/42"), "asset 200 /index.html");
}

#[test]
fn run_worker_first_true_sends_everything_to_the_worker() {
    // binding/ `run_worker_first = true`.
    let a = assets(Config {
        run_worker_first: RunWorkerFirst::from_bool(true),
        ..with_worker()
    });
    assert_eq!(get(&a, "/about"), "worker");
    assert_eq!(get(&a, "/old"), "worker");
}

#[test]
fn run_worker_first_routes() {
    // routing/single-page-application/ "Advanced routing control":
    // `["/api/*", "!/api/docs/*"]` sends `/api/*` to the Worker, `!` routes to
    // the assets (with `not_found_handling`), and the rest to the assets
    // with `not_found_handling` too, navigation or not (workers-sdk's
    // asset-worker keeps it for every request under static routing): the
    // SPA page, never the Worker.
    let a = assets(Config {
        not_found_handling: NotFoundHandling::SinglePageApplication,
        run_worker_first: RunWorkerFirst::from_routes(&["/api/*", "!/api/docs/*"]).unwrap(),
        ..with_worker()
    });
    assert_eq!(navigate(&a, "/api/date"), "worker");
    assert_eq!(get(&a, "/api/docs/x"), "asset 200 /index.html");
    assert_eq!(get(&a, "/about"), "asset 200 /about.html");
    assert_eq!(get(&a, "/users/42"), "asset 200 /index.html");
    assert_eq!(navigate(&a, "/users/42"), "asset 200 /index.html");
    // With `not_found_handling = "none"`, what no asset answers is the
    // Worker's.
    let none = assets(Config {
        run_worker_first: RunWorkerFirst::from_routes(&["/api/*"]).unwrap(),
        ..with_worker()
    });
    assert_eq!(get(&none, "/users/42"), "worker");
    assert_eq!(navigate(&none, "/users/42"), "worker");
}

#[test]
fn the_binding_applies_not_found_handling() {
    // binding/ `fetch()`: "Requests made through this method have
    // html_handling and not_found_handling configuration applied to them."
    let a = assets(Config {
        not_found_handling: NotFoundHandling::SinglePageApplication,
        run_worker_first: RunWorkerFirst::from_bool(true),
        ..with_worker()
    });
    assert_eq!(
        decide(&a, Method::GET, "/users/1", &[], true),
        "asset 200 /index.html"
    );
    assert_eq!(
        decide(&a, Method::GET, "/about.html", &[], true),
        "redirect 307 /about"
    );
    let none = assets(with_worker());
    assert_eq!(decide(&none, Method::GET, "/users/1", &[], true), "404");
}

#[test]
fn other_methods_on_an_asset_are_405() {
    let a = assets(with_worker());
    assert_eq!(decide(&a, Method::POST, "/about", &[], false), "405");
    assert_eq!(decide(&a, Method::POST, "/api", &[], false), "worker");
    assert_eq!(
        decide(&a, Method::HEAD, "/about", &[], false),
        "asset 200 /about.html"
    );
}

#[test]
fn served_assets_carry_their_headers() {
    let a = assets(Config::default());
    let mut request = HeaderMap::new();
    request.insert("range", HeaderValue::from_static("bytes=0-2"));
    let ask = |path| {
        let r = AssetRequest {
            method: &Method::GET,
            host: "example.com",
            path,
            query: "",
            headers: &request,
        };
        match a.route(&r) {
            Decision::Asset(served) => served,
            other => panic!("{other:?}"),
        }
    };
    let served = ask("/about");
    assert_eq!(served.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(served.body, Body::Range(0..=2));
    assert_eq!(served.hash, a.manifest.get("/about.html").unwrap().hash);
    // headers/ "Custom headers": the file's headers are added.
    assert_eq!(served.headers["x-frame-options"], "DENY");
    assert_eq!(served.headers["content-length"], "3");
    let js = ask("/app.js");
    assert!(js.headers.get("cache-control").is_none());
}

#[test]
fn custom_headers_can_detach_defaults() {
    // headers/ "Detach a header".
    let a = assets(Config::default());
    let map = HeaderMap::new();
    let r = AssetRequest {
        method: &Method::GET,
        host: "example.com",
        path: "/app.js",
        query: "",
        headers: &map,
    };
    let Decision::Asset(served) = a.route(&r) else {
        panic!("not an asset")
    };
    assert!(served.headers.get("cache-control").is_none());
    assert!(served.headers.get("etag").is_some());
    let r = AssetRequest {
        path: "/about",
        ..r
    };
    let Decision::Asset(served) = a.route(&r) else {
        panic!("not an asset")
    };
    assert_eq!(
        served.headers["cache-control"],
        "public, max-age=0, must-revalidate"
    );
}

#[test]
fn headers_cannot_change_the_length_sent() {
    let mut a = assets(Config::default());
    a.headers = HeaderRules::parse("/*\n  Content-Length: 1\n").unwrap();
    let map = HeaderMap::new();
    for method in [Method::GET, Method::HEAD] {
        let r = AssetRequest {
            method: &method,
            host: "example.com",
            path: "/about",
            query: "",
            headers: &map,
        };
        let Decision::Asset(served) = a.route(&r) else {
            panic!("not an asset")
        };
        let size = "/about.html".len().to_string();
        assert_eq!(served.headers["content-length"], size.as_str(), "{method}");
    }
}
