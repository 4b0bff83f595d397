//! A wrangler project's static assets (`assets.directory`): the folder read
//! as files with its settings. `isolane dev` serves them as a
//! [`Site`] (the files read into memory at start and on reload, each
//! request decided by `isolane-assets` before it reaches the engine);
//! `isolane deploy` and `isolane push` put the same files in the bundle
//! artifact's assets layer, which the node serves the same way. The
//! `binding` is part of the settings: the Worker's `env.<binding>.fetch`
//! answers from the same site (`isolane-bindings`' assets unit).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use bytes::Bytes;
use isolane_assets::{AssetFiles, Site};

use crate::wrangler::AssetsConfig;

/// The files of `config.directory` (relative to `project_dir`), by
/// `/path`, `_headers` and `_redirects` included, in front of a Worker's
/// script or not (`has_worker`: the project has a `main`).
pub fn read(
    project_dir: &Path,
    config: &AssetsConfig,
    has_worker: bool,
) -> anyhow::Result<AssetFiles> {
    let dir = project_dir.join(&config.directory);
    let mut files = Vec::new();
    for path in crate::bundle::files(&dir)? {
        let Some(name) = asset_name(&dir, &path) else {
            continue;
        };
        let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
        files.push((name, Bytes::from(bytes)));
    }
    Ok(AssetFiles {
        settings: config.settings.clone(),
        files,
        has_worker,
    })
}

/// The project's assets as `isolane dev` serves them. `date` and `flags`
/// are the Worker's compatibility settings.
pub fn site(
    project_dir: &Path,
    config: &AssetsConfig,
    has_worker: bool,
    (date, flags): (Option<&str>, &[String]),
) -> anyhow::Result<Arc<Site>> {
    let files = read(project_dir, config, has_worker)?;
    let settings = files.config(date, flags).context("assets")?;
    Site::new(&files, settings).context("assets")
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
