//! The decision for one request: the Worker, an asset (with its status,
//! headers and bytes), a redirect, or a bare answer. Composes the other
//! modules in Cloudflare's order: `run_worker_first`, then `_redirects`,
//! then `html_handling` and `not_found_handling`, then the conditional
//! answer, then `_headers`.
//!
//! Source: developers.cloudflare.com/workers/static-assets/routing/
//! worker-script/ (assets first, the Worker when none matches),
//! .../redirects/ ("Redirects execute before headers") and
//! .../routing/single-page-application/ "Navigation requests".

use http::header::{HeaderMap, HeaderValue};
use http::{Method, StatusCode, header};

use crate::conditional::{self, Body, CachePolicy};
use crate::headers::HeaderRules;
use crate::manifest::Manifest;
use crate::redirects::Redirects;
use crate::routing::{HtmlHandling, Intent, NotFoundHandling, Resolver, decode_path, encode_path};
use crate::run_worker_first::{First, RunWorkerFirst};

/// A Worker's `assets` settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub html_handling: HtmlHandling,
    pub not_found_handling: NotFoundHandling,
    pub run_worker_first: RunWorkerFirst,
    /// Whether the Worker has a script (`main`); without one no request
    /// reaches a Worker.
    pub has_worker: bool,
    /// The `assets_navigation_prefers_asset_serving` compatibility flag (on
    /// from the compatibility date 2025-04-01): navigation requests get
    /// `not_found_handling` rather than the Worker.
    pub navigation_prefers_assets: bool,
    pub cache: CachePolicy,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            html_handling: HtmlHandling::default(),
            not_found_handling: NotFoundHandling::default(),
            run_worker_first: RunWorkerFirst::default(),
            has_worker: false,
            navigation_prefers_assets: true,
            cache: CachePolicy::default(),
        }
    }
}

/// What of a request the decision reads.
#[derive(Debug, Clone, Copy)]
pub struct AssetRequest<'a> {
    pub method: &'a Method,
    pub host: &'a str,
    /// The path as it arrived, percent-encoded.
    pub path: &'a str,
    /// The query without its `?`, empty when there is none.
    pub query: &'a str,
    pub headers: &'a HeaderMap,
}

/// An asset to send.
#[derive(Debug, Clone)]
pub struct Served {
    /// The manifest path of the asset sent.
    pub path: String,
    /// Its content hash: the key its bytes are read by.
    pub hash: String,
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Body,
}

/// How a request is answered.
#[derive(Debug, Clone)]
pub enum Decision {
    /// The Worker's script handles it.
    RunWorker,
    /// An asset answers.
    Asset(Served),
    /// A redirect, from `_redirects` or to a canonical URL (307).
    Redirect {
        status: StatusCode,
        location: String,
    },
    /// 404 with no body: no asset and no Worker.
    NotFound,
    /// 405: an asset matched a method other than GET or HEAD.
    MethodNotAllowed,
}

/// A Worker version's assets with their configuration.
#[derive(Debug, Clone, Default)]
pub struct Assets {
    pub manifest: Manifest,
    pub redirects: Redirects,
    pub headers: HeaderRules,
    pub config: Config,
}

impl Assets {
    /// The decision for a request arriving for the Worker.
    pub fn route(&self, request: &AssetRequest<'_>) -> Decision {
        let config = &self.config;
        if !config.has_worker {
            return self.fetch(request);
        }
        let not_found = match config.run_worker_first.first(request.path) {
            First::Worker => return Decision::RunWorker,
            First::Assets => return self.fetch(request),
            First::Either if self.keeps_not_found_handling(request) => config.not_found_handling,
            First::Either => NotFoundHandling::None,
        };
        self.answer(request, not_found)
            .unwrap_or(Decision::RunWorker)
    }

    /// Whether `not_found_handling` applies to an unmatched request although
    /// there is a Worker: always with `run_worker_first` routes (Cloudflare's
    /// "static routing": what no route sends to the Worker is the assets',
    /// the SPA page or 404 page included, as workers-sdk's asset-worker
    /// keeps `not_found_handling` when `has_static_routing`); else for a
    /// navigation request, under the `assets_navigation_prefers_asset_serving`
    /// flag.
    fn keeps_not_found_handling(&self, request: &AssetRequest<'_>) -> bool {
        if self.config.run_worker_first.is_routes() {
            return true;
        }
        let navigate = request
            .headers
            .get("sec-fetch-mode")
            .is_some_and(|mode| mode == "navigate");
        navigate && self.config.navigation_prefers_assets
    }

    /// The decision for a request the Worker sends to its assets binding
    /// (`env.ASSETS.fetch`): no `run_worker_first`, the configured
    /// `not_found_handling` always.
    pub fn fetch(&self, request: &AssetRequest<'_>) -> Decision {
        self.answer(request, self.config.not_found_handling)
            .unwrap_or(Decision::NotFound)
    }

    /// `None` when no asset answers.
    fn answer(&self, request: &AssetRequest<'_>, not_found: NotFoundHandling) -> Option<Decision> {
        let mut path = request.path.to_owned();
        let mut proxied = false;
        if let Some(rule) = self.redirects.find(request.host, request.path) {
            if rule.status != StatusCode::OK {
                return Some(Decision::Redirect {
                    status: rule.status,
                    location: location(&rule.to, request.query),
                });
            }
            path = path_of(&rule.to).to_owned();
            proxied = true;
        }
        let decoded = decode_path(&path);
        let resolver = Resolver {
            manifest: &self.manifest,
            html: self.config.html_handling,
            not_found,
        };
        let Some(intent) = resolver.resolve(&decoded) else {
            return proxied.then_some(Decision::NotFound);
        };
        if request.method != Method::GET && request.method != Method::HEAD {
            return Some(Decision::MethodNotAllowed);
        }
        Some(self.intent_decision(request, &path, &decoded, intent))
    }

    fn intent_decision(
        &self,
        request: &AssetRequest<'_>,
        path: &str,
        decoded: &str,
        intent: Intent<'_>,
    ) -> Decision {
        let (destination, served) = match intent {
            Intent::Redirect(to) => (to, None),
            Intent::Serve {
                path: file,
                asset,
                status,
            } => (decoded.to_owned(), Some((file, asset, status))),
        };
        let canonical = encode_path(&destination);
        let Some((file, asset, status)) = served.filter(|_| canonical == path) else {
            let query = if request.query.is_empty() { "" } else { "?" };
            return Decision::Redirect {
                status: StatusCode::TEMPORARY_REDIRECT,
                location: format!("{canonical}{query}{}", request.query),
            };
        };
        let mut answer = conditional::answer(
            asset,
            &file,
            status,
            request.method,
            request.headers,
            self.config.cache,
        );
        // Matched, as `_redirects` is, on the path as it arrived (here the
        // canonical encoded form: any other form was redirected above).
        self.headers
            .apply(request.host, request.path, &mut answer.headers);
        // `_headers` may not change how many bytes are sent.
        if let Some(length) = answer.length {
            answer
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        Decision::Asset(Served {
            path: file,
            hash: asset.hash.clone(),
            status: answer.status,
            headers: answer.headers,
            body: answer.body,
        })
    }
}

/// The path of a rewrite's destination, without its query or fragment.
fn path_of(to: &str) -> &str {
    let end = to.find(['?', '#']).unwrap_or(to.len());
    &to[..end]
}

/// A redirect's `Location`: its destination, with the request's query
/// when the destination has none of its own (the fragment kept last).
fn location(to: &str, query: &str) -> String {
    let (before, fragment) = match to.find('#') {
        Some(at) => to.split_at(at),
        None => (to, ""),
    };
    if before.contains('?') || query.is_empty() {
        return to.to_owned();
    }
    format!("{before}?{query}{fragment}")
}
