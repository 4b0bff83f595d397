//! A Worker version's assets with their bytes, as a server answers from
//! them: [`AssetFiles`] is what travels (the files by their `/path`, and
//! the settings), [`Site`] what serves (the decisions' [`Assets`] and each
//! asset's bytes by content hash), and [`answer`] the one way a decision
//! becomes a response, whatever holds the bytes (`isolane dev` reads them
//! from the project's folder, the node keeps them in memory).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::conditional::Body;
use crate::decision::{AssetRequest, Assets, Config, Decision, Served};
use crate::headers::{HeaderRules, HeadersError};
use crate::manifest::{Manifest, ManifestError};
use crate::redirects::{Redirects, RedirectsError};
use crate::settings::{Settings, SettingsError};

/// The `_headers` and `_redirects` files: rules, not assets.
pub const HEADERS_FILE: &str = "/_headers";
pub const REDIRECTS_FILE: &str = "/_redirects";

/// A Worker's assets folder as files and settings, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssetFiles {
    pub settings: Settings,
    /// `/a/b.html` → its bytes (`_headers` and `_redirects` included).
    pub files: Vec<(String, Bytes)>,
    /// Whether a Worker's script stands behind the assets. Without one
    /// (wrangler's `assets` with no `main`) no request reaches a Worker:
    /// the site answers every request itself.
    pub has_worker: bool,
}

impl AssetFiles {
    /// The decisions' settings of these assets for a Worker version of
    /// these compatibility settings ([`Settings::config`]).
    pub fn config(&self, date: Option<&str>, flags: &[String]) -> Result<Config, SettingsError> {
        self.settings.config(self.has_worker, date, flags)
    }

    /// Every file's bytes together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|(_, bytes)| bytes.len() as u64).sum()
    }
}

fn digest(files: &AssetFiles, manifest: &Manifest, rules: [&str; 2]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(format!("{:?} {}", files.settings, files.has_worker).as_bytes());
    rules.iter().for_each(|rule| field(rule.as_bytes()));
    for (path, asset) in manifest.iter() {
        field(path.as_bytes());
        field(asset.hash.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// Why a folder's files make no site.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("asset {path}: {source}")]
    Manifest { path: String, source: ManifestError },
    #[error("_headers: {0}")]
    Headers(#[from] HeadersError),
    #[error("_redirects: {0}")]
    Redirects(#[from] RedirectsError),
    #[error("_headers and _redirects are text: {0} is not UTF-8")]
    NotText(&'static str),
}

/// The decisions and the bytes of a Worker version's assets.
#[derive(Clone)]
pub struct Site {
    assets: Assets,
    bytes: HashMap<String, Bytes>,
    /// `env.<binding>`, when the settings name one.
    binding: Option<String>,
    /// [`Site::digest`].
    digest: String,
}

impl std::fmt::Debug for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Site")
            .field("assets", &self.assets.manifest.len())
            .finish_non_exhaustive()
    }
}

/// An answer made from the assets, without the Worker.
#[derive(Debug)]
pub struct Answered {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Site {
    /// The site of `files` under `config` (the settings made with the
    /// Worker's compatibility settings, [`Settings::config`]).
    pub fn new(files: &AssetFiles, config: Config) -> Result<Arc<Self>, SiteError> {
        let mut manifest = Manifest::default();
        let mut bytes = HashMap::with_capacity(files.files.len());
        let (mut headers, mut redirects) = (String::new(), String::new());
        for (path, content) in &files.files {
            match path.as_str() {
                HEADERS_FILE => headers = text(content, "_headers")?,
                REDIRECTS_FILE => redirects = text(content, "_redirects")?,
                _ => {
                    manifest
                        .insert_bytes(path, content)
                        .map_err(|source| SiteError::Manifest {
                            path: path.clone(),
                            source,
                        })?;
                    if let Some(asset) = manifest.get(path) {
                        bytes.insert(asset.hash.clone(), content.clone());
                    }
                }
            }
        }
        let assets = Assets {
            manifest,
            redirects: Redirects::parse(&redirects)?,
            headers: HeaderRules::parse(&headers)?,
            config,
        };
        let binding = files.settings.binding.clone();
        let digest = digest(files, &assets.manifest, [&headers, &redirects]);
        Ok(Arc::new(Self {
            assets,
            bytes,
            binding,
            digest,
        }))
    }

    /// A SHA-256 (hex) of the settings, the rule files and every asset's
    /// path and content hash (the manifest's, so no byte is hashed twice):
    /// a folder's identity where no artifact digest names it (`isolane dev`
    /// folds it into the revision, so that changed assets make a new one).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// How many assets there are.
    pub fn len(&self) -> usize {
        self.assets.manifest.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What answers `request` arriving for the Worker: `None` for the
    /// Worker itself.
    pub fn answer(&self, request: &http::Request<()>) -> Option<Answered> {
        answer(&self.assets, request, |hash| self.bytes.get(hash).cloned())
    }

    /// The name the Worker's `env` gives the assets (`assets.binding`).
    pub fn binding(&self) -> Option<&str> {
        self.binding.as_deref()
    }

    /// What the assets alone answer to `request`, as the Worker's
    /// `env.<binding>.fetch(request)` gets it: no `run_worker_first`, the
    /// configured `not_found_handling`, a 404 when nothing matches.
    pub fn fetch(&self, request: &http::Request<()>) -> Answered {
        let decision = self.assets.fetch(&asset_request(request));
        answered(decision, |hash| self.bytes.get(hash).cloned())
            .unwrap_or_else(|| bare(StatusCode::NOT_FOUND, HeaderMap::new()))
    }
}

fn text(content: &Bytes, file: &'static str) -> Result<String, SiteError> {
    String::from_utf8(content.to_vec()).map_err(|_| SiteError::NotText(file))
}

/// The answer to `request` arriving for the Worker, from `assets`, the
/// bytes of an asset read by its content hash with `bytes_of` (an asset
/// whose bytes are gone is a 404): `None` when the Worker answers.
pub fn answer(
    assets: &Assets,
    request: &http::Request<()>,
    bytes_of: impl FnOnce(&str) -> Option<Bytes>,
) -> Option<Answered> {
    answered(assets.route(&asset_request(request)), bytes_of)
}

/// What of `request` the decisions read.
fn asset_request(request: &http::Request<()>) -> AssetRequest<'_> {
    let uri = request.uri();
    let host = uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| request.headers().get(header::HOST)?.to_str().ok())
        .unwrap_or_default();
    AssetRequest {
        method: request.method(),
        host,
        path: uri.path(),
        query: uri.query().unwrap_or_default(),
        headers: request.headers(),
    }
}

/// The answer a `decision` makes: `None` for the Worker.
fn answered(decision: Decision, bytes_of: impl FnOnce(&str) -> Option<Bytes>) -> Option<Answered> {
    match decision {
        Decision::RunWorker => None,
        Decision::Asset(served) => Some(served_answer(served, bytes_of)),
        Decision::Redirect { status, location } => {
            let mut headers = HeaderMap::new();
            if let Ok(location) = HeaderValue::from_str(&location) {
                headers.insert(header::LOCATION, location);
            }
            Some(bare(status, headers))
        }
        Decision::NotFound => Some(bare(StatusCode::NOT_FOUND, HeaderMap::new())),
        Decision::MethodNotAllowed => {
            let mut headers = HeaderMap::new();
            headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            Some(bare(StatusCode::METHOD_NOT_ALLOWED, headers))
        }
    }
}

/// An asset's answer with its bytes: all, a range, or none.
fn served_answer(served: Served, bytes_of: impl FnOnce(&str) -> Option<Bytes>) -> Answered {
    let bytes = match &served.body {
        Body::Empty => Some(Bytes::new()),
        Body::Full | Body::Range(_) => bytes_of(&served.hash),
    };
    let Some(bytes) = bytes else {
        return bare(StatusCode::NOT_FOUND, HeaderMap::new());
    };
    let body = match served.body {
        Body::Range(range) => {
            let start = usize::try_from(*range.start()).unwrap_or(usize::MAX);
            let end = usize::try_from(range.end().saturating_add(1)).unwrap_or(usize::MAX);
            let end = end.min(bytes.len());
            bytes.slice(start.min(end)..end)
        }
        _ => bytes,
    };
    Answered {
        status: served.status,
        headers: served.headers,
        body,
    }
}

fn bare(status: StatusCode, headers: HeaderMap) -> Answered {
    Answered {
        status,
        headers,
        body: Bytes::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::NotFoundHandling;

    fn files() -> AssetFiles {
        AssetFiles {
            settings: Settings::default(),
            files: vec![
                ("/index.html".into(), Bytes::from_static(b"<h1>home</h1>")),
                ("/app.js".into(), Bytes::from_static(b"console.log(1)")),
                (
                    "/_headers".into(),
                    Bytes::from_static(b"/app.js\n  X-Served: assets\n"),
                ),
                (
                    "/_redirects".into(),
                    Bytes::from_static(b"/old /app.js 301\n"),
                ),
            ],
            has_worker: true,
        }
    }

    fn get(path: &str, headers: &[(&str, &str)]) -> http::Request<()> {
        let mut request = http::Request::get(format!("http://site.test{path}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap()
    }

    fn site(has_worker: bool) -> Arc<Site> {
        let config = Config {
            has_worker,
            not_found_handling: NotFoundHandling::SinglePageApplication,
            ..Config::default()
        };
        Site::new(&files(), config).unwrap()
    }

    #[test]
    fn an_asset_a_range_a_304_a_redirect_and_the_worker() {
        let site = site(true);
        assert_eq!(site.len(), 2, "_headers and _redirects are no assets");
        let full = site.answer(&get("/app.js", &[])).unwrap();
        assert_eq!(full.status, StatusCode::OK);
        assert_eq!(&full.body[..], b"console.log(1)");
        assert_eq!(full.headers["x-served"], "assets");
        let etag = full.headers[header::ETAG].to_str().unwrap().to_owned();
        let again = site
            .answer(&get("/app.js", &[("if-none-match", &etag)]))
            .unwrap();
        assert_eq!(
            (again.status, again.body.len()),
            (StatusCode::NOT_MODIFIED, 0)
        );
        let range = site
            .answer(&get("/app.js", &[("range", "bytes=0-6")]))
            .unwrap();
        assert_eq!(
            (range.status, &range.body[..]),
            (StatusCode::PARTIAL_CONTENT, &b"console"[..])
        );
        let moved = site.answer(&get("/old", &[])).unwrap();
        assert_eq!(moved.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(moved.headers[header::LOCATION], "/app.js");
        assert!(site.answer(&get("/api/users", &[])).is_none(), "the Worker");
    }

    #[test]
    fn without_a_worker_an_unmatched_path_gets_the_spa_page() {
        let page = site(false).answer(&get("/some/route", &[])).unwrap();
        assert_eq!(
            (page.status, &page.body[..]),
            (StatusCode::OK, &b"<h1>home</h1>"[..])
        );
    }

    #[test]
    fn bytes_gone_are_a_404_and_bad_rules_are_refused() {
        let assets = Assets {
            manifest: {
                let mut manifest = Manifest::default();
                manifest.insert_bytes("/a.txt", b"a").unwrap();
                manifest
            },
            ..Assets::default()
        };
        let gone = answer(&assets, &get("/a.txt", &[]), |_| None).unwrap();
        assert_eq!(gone.status, StatusCode::NOT_FOUND);
        let mut broken = files();
        broken
            .files
            .push(("/_headers".into(), Bytes::from_static(&[0xff, 0xfe])));
        let error = Site::new(&broken, Config::default()).unwrap_err();
        assert!(error.to_string().contains("_headers"), "{error}");
    }

    #[test]
    fn a_folder_of_more_than_max_assets_files_is_refused_naming_the_first_over() {
        use crate::manifest::MAX_ASSETS;
        let mut folder = files();
        let empty = Bytes::new();
        // With index.html and app.js, MAX_ASSETS files; _headers and
        // _redirects are rules, not assets.
        folder
            .files
            .extend((2..MAX_ASSETS).map(|i| (format!("/f/{i}.txt"), empty.clone())));
        let site = Site::new(&folder, Config::default()).unwrap();
        assert_eq!(site.len(), MAX_ASSETS);
        folder.files.push(("/f/over.txt".into(), empty));
        let error = Site::new(&folder, Config::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "asset /f/over.txt: more than 100000 assets"
        );
    }

    #[test]
    fn the_binding_answers_from_the_assets_alone_whatever_runs_first() {
        let mut files = files();
        files.settings.binding = Some("ASSETS".into());
        let config = Config {
            has_worker: true,
            run_worker_first: crate::RunWorkerFirst::Always,
            ..Config::default()
        };
        let site = Site::new(&files, config).unwrap();
        assert_eq!(site.binding(), Some("ASSETS"));
        // Requests arriving for the Worker all go to it...
        assert!(site.answer(&get("/app.js", &[])).is_none());
        // ...and the Worker's own fetch through the binding gets the asset,
        let app = site.fetch(&get("/app.js", &[]));
        assert_eq!(app.status, StatusCode::OK);
        assert_eq!(&app.body[..], b"console.log(1)");
        assert_eq!(app.headers["x-served"], "assets");
        // the redirect, and a 404 (not the Worker) for what no asset matches.
        assert_eq!(
            site.fetch(&get("/old", &[])).status,
            StatusCode::MOVED_PERMANENTLY
        );
        let missing = site.fetch(&get("/missing", &[]));
        assert_eq!(
            (missing.status, missing.body.len()),
            (StatusCode::NOT_FOUND, 0)
        );
    }

    #[test]
    fn the_digest_changes_with_any_asset_rule_or_setting_and_only_then() {
        let digest = |files: &AssetFiles| {
            let config = files.config(None, &[]).unwrap();
            Site::new(files, config).unwrap().digest().to_owned()
        };
        let base = digest(&files());
        assert_eq!(base, digest(&files()), "the same folder, the same digest");
        assert_eq!(base.len(), 64);
        let changed = |index: usize, bytes: &'static [u8]| {
            let mut files = files();
            files.files[index].1 = Bytes::from_static(bytes);
            digest(&files)
        };
        assert_ne!(base, changed(1, b"console.log(2)"), "an asset's bytes");
        assert_ne!(
            base,
            changed(2, b"/app.js\n  X-Served: other\n"),
            "_headers"
        );
        assert_ne!(base, changed(3, b"/old /index.html 302\n"), "_redirects");
        let mut renamed = files();
        renamed.files[1].0 = "/main.js".into();
        assert_ne!(base, digest(&renamed), "an asset's path");
        let mut settings = files();
        settings.settings.binding = Some("ASSETS".into());
        assert_ne!(base, digest(&settings), "the settings");
        let mut alone = files();
        alone.has_worker = false;
        assert_ne!(base, digest(&alone), "whether a Worker is behind them");
    }
}
