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
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use isolane_assets::{AssetFiles, Site};

use crate::wrangler::AssetsConfig;

/// The files of `config.directory` (relative to `project_dir`), by
/// `/path`, `_headers` and `_redirects` included, in front of a Worker's
/// script or not (`has_worker`: the project has a `main`). As wrangler
/// uploads them: every file, dotfiles (`.well-known/`) included, but those
/// that the folder's `.assetsignore` names, and that file itself; and
/// never `isolane dev`'s own state folder (`.isolane/`), should the assets
/// folder be the project's.
pub fn read(
    project_dir: &Path,
    config: &AssetsConfig,
    has_worker: bool,
) -> anyhow::Result<AssetFiles> {
    let dir = project_dir.join(&config.directory);
    let ignore = ignore_rules(&dir)?;
    let mut files = Vec::new();
    for path in all_files(&dir)? {
        let Some(name) = asset_name(&dir, &path) else {
            continue;
        };
        if ignore
            .matched_path_or_any_parents(&name[1..], false)
            .is_ignore()
        {
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
        files.push((name, Bytes::from(bytes)));
    }
    Ok(AssetFiles {
        settings: config.settings.clone(),
        files,
        has_worker,
    })
}

/// The file of an assets folder that lists what is not an asset.
const IGNORE_FILE: &str = ".assetsignore";

/// What is not an asset in `dir`: `.assetsignore` itself, `isolane dev`'s
/// state folder, then the patterns the file gives (gitignore's, which
/// wrangler reads with the `ignore` npm package; here the `ignore` crate's
/// gitignore matcher). The last matching line decides, so the file's `!`
/// lines can take a default back, as wrangler's can.
fn ignore_rules(dir: &Path) -> anyhow::Result<Gitignore> {
    let path = dir.join(IGNORE_FILE);
    let mut builder = GitignoreBuilder::new(dir);
    for default in ["/.assetsignore", "/.isolane/"] {
        builder.add_line(None, default)?;
    }
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            for line in text.lines() {
                builder
                    .add_line(Some(path.clone()), line)
                    .with_context(|| format!("{}", path.display()))?;
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error).context(format!("{}", path.display())),
    }
    Ok(builder.build()?)
}

/// Every file under `dir` (following links, as wrangler's `stat` does), in
/// name order.
fn all_files(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    Ok(crate::bundle::files_where(dir, |_| true)?)
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

#[cfg(test)]
mod tests {
    use super::{IGNORE_FILE, ignore_rules};

    #[test]
    fn assetsignore_takes_gitignore_patterns() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(IGNORE_FILE),
            "# Pages leftovers\n_worker.js\n/_routes.json\n*.map\nprivate/\n!keep.map\n\n",
        )
        .unwrap();
        let ignore = ignore_rules(dir.path()).unwrap();
        let ignored = |path: &str| ignore.matched_path_or_any_parents(path, false).is_ignore();
        for path in [
            ".assetsignore",
            ".isolane/state/d1.sqlite",
            "_worker.js",
            "_worker.js/index.js",
            "deep/_worker.js",
            "_routes.json",
            "assets/index-abc.js.map",
            "private/notes.txt",
            "a/private/b.txt",
        ] {
            assert!(ignored(path), "{path}");
        }
        for path in [
            "deep/_routes.json",
            "assets/index-abc.js",
            "keep.map",
            "private",
            ".well-known/security.txt",
            "deep/.assetsignore",
        ] {
            assert!(!ignored(path), "{path}");
        }
        let empty = tempfile::tempdir().unwrap();
        let none = ignore_rules(empty.path()).unwrap();
        assert!(
            !none
                .matched_path_or_any_parents("index.html", false)
                .is_ignore()
        );
    }
}
