//! `html_handling` and `not_found_handling`, held to the tables of
//! developers.cloudflare.com/workers/static-assets/routing/advanced/html-handling/
//! (the directory `file.html`, `folder/index.html`).

#![allow(clippy::unwrap_used)] // test helpers panic on purpose

use isolane_assets::Manifest;
use isolane_assets::routing::{
    HtmlHandling, Intent, NotFoundHandling, Resolver, decode_path, encode_path,
};

fn site() -> Manifest {
    let mut m = Manifest::new();
    m.insert_bytes("/file.html", b"file").unwrap();
    m.insert_bytes("/folder/index.html", b"folder").unwrap();
    m
}

/// What a path gets: `200 /asset`, `404 /asset`, `307 /dest` or `none`.
fn answer(m: &Manifest, html: HtmlHandling, nf: NotFoundHandling, path: &str) -> String {
    let resolver = Resolver {
        manifest: m,
        html,
        not_found: nf,
    };
    match resolver.resolve(path) {
        Some(Intent::Serve { path, status, .. }) => format!("{} {path}", status.as_u16()),
        Some(Intent::Redirect(to)) => format!("307 {to}"),
        None => "none".to_owned(),
    }
}

fn check(html: HtmlHandling, table: &[(&str, &str)]) {
    let m = site();
    for (request, expected) in table {
        assert_eq!(
            answer(&m, html, NotFoundHandling::None, request),
            *expected,
            "{html:?} {request}"
        );
    }
}

#[test]
fn auto_trailing_slash_is_the_default() {
    assert_eq!(HtmlHandling::default(), HtmlHandling::AutoTrailingSlash);
    assert_eq!(NotFoundHandling::default(), NotFoundHandling::None);
}

#[test]
fn auto_trailing_slash_follows_the_table() {
    // The page's "Automatic trailing slashes (default)" table. Three rows
    // differ: the page gives `/folder.html`, `/folder/index` and
    // `/folder/index.html` a 307 to `/folder`, which its own `/folder` row
    // then sends on to `/folder/`; this goes to `/folder/` in one step, as
    // workers-sdk's asset-worker (the code behind the page) does.
    check(
        HtmlHandling::AutoTrailingSlash,
        &[
            ("/file", "200 /file.html"),
            ("/file.html", "307 /file"),
            ("/file/", "307 /file"),
            ("/file/index", "307 /file"),
            ("/file/index.html", "307 /file"),
            ("/folder", "307 /folder/"),
            ("/folder.html", "307 /folder/"),
            ("/folder/", "200 /folder/index.html"),
            ("/folder/index", "307 /folder/"),
            ("/folder/index.html", "307 /folder/"),
        ],
    );
}

#[test]
fn force_trailing_slash_follows_the_table() {
    // The page's "Force trailing slashes" table, row for row.
    check(
        HtmlHandling::ForceTrailingSlash,
        &[
            ("/file", "307 /file/"),
            ("/file.html", "307 /file/"),
            ("/file/", "200 /file.html"),
            ("/file/index", "307 /file/"),
            ("/file/index.html", "307 /file/"),
            ("/folder", "307 /folder/"),
            ("/folder.html", "307 /folder/"),
            ("/folder/", "200 /folder/index.html"),
            ("/folder/index", "307 /folder/"),
            ("/folder/index.html", "307 /folder/"),
        ],
    );
}

#[test]
fn drop_trailing_slash_follows_the_table() {
    // The page's "Drop trailing slashes" table, row for row.
    check(
        HtmlHandling::DropTrailingSlash,
        &[
            ("/file", "200 /file.html"),
            ("/file.html", "307 /file"),
            ("/file/", "307 /file"),
            ("/file/index", "307 /file"),
            ("/file/index.html", "307 /file"),
            ("/folder", "200 /folder/index.html"),
            ("/folder.html", "307 /folder"),
            ("/folder/", "307 /folder"),
            ("/folder/index", "307 /folder"),
            ("/folder/index.html", "307 /folder"),
        ],
    );
}

#[test]
fn none_serves_exact_paths_only() {
    // The page's "Disable HTML handling" table: everything but the two
    // exact file paths "depends on not_found_handling".
    check(
        HtmlHandling::None,
        &[
            ("/file", "none"),
            ("/file.html", "200 /file.html"),
            ("/file/", "none"),
            ("/folder", "none"),
            ("/folder/", "none"),
            ("/folder/index.html", "200 /folder/index.html"),
        ],
    );
}

#[test]
fn the_root_index_is_served_at_slash_in_every_mode() {
    let mut m = Manifest::new();
    m.insert_bytes("/index.html", b"home").unwrap();
    let none = NotFoundHandling::None;
    for html in [
        HtmlHandling::AutoTrailingSlash,
        HtmlHandling::ForceTrailingSlash,
        HtmlHandling::DropTrailingSlash,
    ] {
        assert_eq!(answer(&m, html, none, "/"), "200 /index.html", "{html:?}");
        assert_eq!(answer(&m, html, none, "/index.html"), "307 /", "{html:?}");
        assert_eq!(answer(&m, html, none, "/index"), "307 /", "{html:?}");
    }
}

#[test]
fn a_file_without_extension_is_served_as_it_is() {
    let mut m = Manifest::new();
    m.insert_bytes("/bin", b"x").unwrap();
    m.insert_bytes("/a/index", b"y").unwrap();
    let (auto, none) = (HtmlHandling::AutoTrailingSlash, NotFoundHandling::None);
    assert_eq!(answer(&m, auto, none, "/bin"), "200 /bin");
    assert_eq!(answer(&m, auto, none, "/a/index"), "200 /a/index");
    assert_eq!(answer(&m, auto, none, "/bin/"), "none");
}

#[test]
fn single_page_application_serves_the_root_index_with_200() {
    // developers.cloudflare.com/workers/static-assets/routing/single-page-application/:
    // "Workers will serve the contents of the /index.html file with a 200 OK status."
    let mut m = site();
    m.insert_bytes("/index.html", b"app").unwrap();
    let spa = NotFoundHandling::SinglePageApplication;
    let auto = HtmlHandling::AutoTrailingSlash;
    assert_eq!(answer(&m, auto, spa, "/users/42"), "200 /index.html");
    assert_eq!(answer(&m, auto, spa, "/file"), "200 /file.html");
    assert_eq!(answer(&site(), auto, spa, "/users/42"), "none");
}

#[test]
fn page_404_serves_the_nearest_404_html_with_404() {
    // developers.cloudflare.com/workers/static-assets/routing/static-site-generation/:
    // the nearest 404.html up the requested path, with a 404 status.
    let mut m = site();
    m.insert_bytes("/404.html", b"root 404").unwrap();
    m.insert_bytes("/blog/404.html", b"blog 404").unwrap();
    let page = NotFoundHandling::Page404;
    let auto = HtmlHandling::AutoTrailingSlash;
    assert_eq!(answer(&m, auto, page, "/blog/a/b"), "404 /blog/404.html");
    assert_eq!(
        answer(&m, auto, page, "/blog/missing"),
        "404 /blog/404.html"
    );
    assert_eq!(answer(&m, auto, page, "/shop/missing"), "404 /404.html");
    assert_eq!(answer(&m, auto, page, "/missing"), "404 /404.html");
}

#[test]
fn paths_are_decoded_and_re_encoded() {
    assert_eq!(decode_path("/caf%C3%A9/a%20b.html"), "/café/a b.html");
    assert_eq!(decode_path("//a///b"), "/a/b");
    assert_eq!(decode_path("/bad%FF"), "/bad%FF");
    assert_eq!(encode_path("/café/a b.html"), "/caf%C3%A9/a%20b.html");
    assert_eq!(encode_path("/[boop]"), "/%5Bboop%5D");
    assert_eq!(encode_path("/a-b_c.d!~*'()"), "/a-b_c.d!~*'()");
}

#[test]
fn every_redirect_lands_on_the_same_content_in_one_step() {
    // No mode may chain or loop: a 307's destination serves, itself, the
    // bytes the redirected path named.
    let mut m = Manifest::new();
    for (path, body) in [
        ("/index.html", "home"),
        ("/a.html", "a"),
        ("/b/index.html", "b"),
        ("/c.html", "c file"),
        ("/c/index.html", "c folder"),
        ("/d/index", "binary d"),
        ("/e", "binary e"),
        ("/f/g.html", "g"),
        ("/f/index.html", "f"),
    ] {
        m.insert_bytes(path, body.as_bytes()).unwrap();
    }
    let stems = ["", "/a", "/b", "/c", "/d", "/e", "/f", "/f/g", "/x"];
    let suffixes = ["", "/", ".html", "/index", "/index.html"];
    let modes = [
        HtmlHandling::AutoTrailingSlash,
        HtmlHandling::ForceTrailingSlash,
        HtmlHandling::DropTrailingSlash,
        HtmlHandling::None,
    ];
    let nfs = [
        NotFoundHandling::None,
        NotFoundHandling::SinglePageApplication,
        NotFoundHandling::Page404,
    ];
    for html in modes {
        for not_found in nfs {
            let r = Resolver {
                manifest: &m,
                html,
                not_found,
            };
            for stem in stems {
                for suffix in suffixes {
                    let path = format!("{stem}{suffix}");
                    if path.is_empty() {
                        continue;
                    }
                    let Some(Intent::Redirect(to)) = r.resolve(&path) else {
                        continue;
                    };
                    assert_ne!(to, path, "{html:?} {path} redirects to itself");
                    match r.resolve(&to) {
                        Some(Intent::Serve { .. }) => {}
                        other => panic!("{html:?} {path} → {to} → {other:?}"),
                    }
                }
            }
        }
    }
}

#[test]
fn settings_read_as_wrangler_writes_them() {
    // developers.cloudflare.com/workers/wrangler/configuration/ `assets`.
    assert_eq!(
        "drop-trailing-slash".parse::<HtmlHandling>(),
        Ok(HtmlHandling::DropTrailingSlash)
    );
    assert_eq!(
        "404-page".parse::<NotFoundHandling>(),
        Ok(NotFoundHandling::Page404)
    );
    assert_eq!(
        "single-page-application".parse::<NotFoundHandling>(),
        Ok(NotFoundHandling::SinglePageApplication)
    );
    let err = "spa".parse::<NotFoundHandling>().unwrap_err();
    assert!(err.to_string().contains("not_found_handling"), "{err}");
    assert!("auto".parse::<HtmlHandling>().is_err());
}
