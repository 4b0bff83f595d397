//! A wrangler project's static assets (`assets.directory`) as `isolane dev`
//! serves them: the folder read into a manifest at start and on reload,
//! `_redirects` and `_headers` parsed, and each request for the Worker
//! decided by `isolane-assets` before it reaches the engine. An asset, a
//! redirect or a bare 404/405 is answered here, from the file, without
//! entering V8; only `RunWorker` goes on to the Worker (`node.rs`).
//!
//! Not yet: `env.ASSETS` (the `binding`), and assets in a cluster (they are
//! not in the bundle artifact): `isolane deploy` refuses the key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context as _;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use isolane_assets::{
    AssetRequest, Assets, Body, Config, Decision, HeaderRules, HtmlHandling, Manifest,
    NotFoundHandling, Redirects, RunWorkerFirst,
};

use crate::wrangler::{AssetsConfig, RunWorkerFirstConfig};

/// The compatibility flag (on from 2025-04-01) under which a navigation
/// request that no asset matches gets `not_found_handling`, not the Worker.
const NAVIGATION_FLAG: &str = "assets_navigation_prefers_asset_serving";
const NAVIGATION_OFF_FLAG: &str = "assets_navigation_has_no_effect";
const NAVIGATION_DATE: &str = "2025-04-01";

/// A Worker's assets: the decisions and where each asset's bytes are.
#[derive(Debug)]
pub struct DevAssets {
    assets: Assets,
    /// Content hash → a file holding those bytes.
    files: HashMap<String, PathBuf>,
}

/// An answer made without the Worker.
#[derive(Debug)]
pub struct Answered {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl DevAssets {
    /// Reads `config.directory` (relative to `project_dir`).
    /// `date` and `flags` are the Worker's compatibility settings.
    pub fn load(
        project_dir: &Path,
        config: &AssetsConfig,
        has_worker: bool,
        (date, flags): (Option<&str>, &[String]),
    ) -> anyhow::Result<Self> {
        if let Some(binding) = &config.binding {
            tracing::warn!(
                binding = %binding,
                "assets.binding: env.{binding} is not bound yet; the assets answer before the Worker"
            );
        }
        let dir = project_dir.join(&config.directory);
        let mut manifest = Manifest::default();
        let mut files = HashMap::new();
        for path in crate::bundle::files(&dir)? {
            let Some(name) = asset_name(&dir, &path) else {
                continue;
            };
            if name == "/_headers" || name == "/_redirects" {
                continue;
            }
            let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
            manifest
                .insert_bytes(&name, &bytes)
                .with_context(|| format!("assets: {name}"))?;
            if let Some(asset) = manifest.get(&name) {
                files.insert(asset.hash.clone(), path);
            }
        }
        let assets = Assets {
            manifest,
            redirects: Redirects::parse(&read_optional(&dir.join("_redirects"))?)
                .context("assets: _redirects")?,
            headers: HeaderRules::parse(&read_optional(&dir.join("_headers"))?)
                .context("assets: _headers")?,
            config: settings(config, has_worker, date, flags)?,
        };
        Ok(Self { assets, files })
    }

    /// How many assets there are.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// What answers `request`: `None` for the Worker.
    pub fn answer(&self, request: &http::Request<()>) -> Option<Answered> {
        let uri = request.uri();
        let host = uri
            .authority()
            .map(|a| a.as_str())
            .or_else(|| request.headers().get(http::header::HOST)?.to_str().ok())
            .unwrap_or_default();
        let decision = self.assets.route(&AssetRequest {
            method: request.method(),
            host,
            path: uri.path(),
            query: uri.query().unwrap_or_default(),
            headers: request.headers(),
        });
        match decision {
            Decision::RunWorker => None,
            Decision::Asset(served) => Some(self.served(served)),
            Decision::Redirect { status, location } => {
                let mut headers = HeaderMap::new();
                if let Ok(location) = location.parse() {
                    headers.insert(http::header::LOCATION, location);
                }
                Some(bare(status, headers))
            }
            Decision::NotFound => Some(bare(StatusCode::NOT_FOUND, HeaderMap::new())),
            Decision::MethodNotAllowed => {
                let mut headers = HeaderMap::new();
                headers.insert(
                    http::header::ALLOW,
                    http::HeaderValue::from_static("GET, HEAD"),
                );
                Some(bare(StatusCode::METHOD_NOT_ALLOWED, headers))
            }
        }
    }

    /// An asset's answer with its bytes (all, a range, or none), read from
    /// its file now; a file gone since the folder was read is a 404.
    fn served(&self, served: isolane_assets::Served) -> Answered {
        let bytes = match &served.body {
            Body::Empty => Ok(Vec::new()),
            Body::Full | Body::Range(_) => self
                .files
                .get(&served.hash)
                .map_or_else(|| Err(std::io::ErrorKind::NotFound.into()), std::fs::read),
        };
        let Ok(bytes) = bytes else {
            return bare(StatusCode::NOT_FOUND, HeaderMap::new());
        };
        let body = match served.body {
            Body::Range(range) => {
                let (start, end) = (*range.start(), range.end().saturating_add(1));
                let slice = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(start, end)| bytes.get(start..end.min(bytes.len())));
                Bytes::copy_from_slice(slice.unwrap_or_default())
            }
            _ => Bytes::from(bytes),
        };
        Answered {
            status: served.status,
            headers: served.headers,
            body,
        }
    }
}

fn bare(status: StatusCode, headers: HeaderMap) -> Answered {
    Answered {
        status,
        headers,
        body: Bytes::new(),
    }
}

/// `/a/b.html` for `dir/a/b.html`.
fn asset_name(dir: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(dir).ok()?;
    let parts: Vec<&str> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    Some(format!("/{}", parts.join("/")))
}

fn read_optional(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(error).with_context(|| format!("{}", path.display())),
    }
}

/// The crate's settings from wrangler's strings and the Worker's
/// compatibility settings.
fn settings(
    config: &AssetsConfig,
    has_worker: bool,
    date: Option<&str>,
    flags: &[String],
) -> anyhow::Result<Config> {
    let html_handling = match &config.html_handling {
        Some(text) => HtmlHandling::from_str(text).context("assets.html_handling")?,
        None => HtmlHandling::default(),
    };
    let not_found_handling = match &config.not_found_handling {
        Some(text) => NotFoundHandling::from_str(text).context("assets.not_found_handling")?,
        None => NotFoundHandling::default(),
    };
    let run_worker_first = match &config.run_worker_first {
        None => RunWorkerFirst::default(),
        Some(RunWorkerFirstConfig::All(all)) => RunWorkerFirst::from_bool(*all),
        Some(RunWorkerFirstConfig::Routes(routes)) => {
            RunWorkerFirst::from_routes(routes).context("assets.run_worker_first")?
        }
    };
    let by_date = date.is_some_and(|date| date >= NAVIGATION_DATE);
    Ok(Config {
        html_handling,
        not_found_handling,
        run_worker_first,
        has_worker,
        navigation_prefers_assets: (by_date || flags.iter().any(|f| f == NAVIGATION_FLAG))
            && !flags.iter().any(|f| f == NAVIGATION_OFF_FLAG),
        ..Config::default()
    })
}
