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
/// script or not (`has_worker`: the project has a `main`). As wrangler
/// uploads them: every file, dotfiles (`.well-known/`) included, but those
/// that the folder's `.assetsignore` names, and that file itself.
pub fn read(
    project_dir: &Path,
    config: &AssetsConfig,
    has_worker: bool,
) -> anyhow::Result<AssetFiles> {
    let dir = project_dir.join(&config.directory);
    let ignore = match std::fs::read_to_string(dir.join(IGNORE_FILE)) {
        Ok(text) => {
            Ignore::parse(&text).with_context(|| format!("{}", dir.join(IGNORE_FILE).display()))?
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ignore::default(),
        Err(error) => return Err(error).context(format!("{}", dir.join(IGNORE_FILE).display())),
    };
    let mut files = Vec::new();
    for path in all_files(&dir)? {
        let Some(name) = asset_name(&dir, &path) else {
            continue;
        };
        if name == format!("/{IGNORE_FILE}") || ignore.ignores(&name[1..]) {
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

/// Every file under `dir` (following links, as wrangler's `stat` does), in
/// name order.
fn all_files(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries =
            std::fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// `.assetsignore`: gitignore's patterns (wrangler reads the file with the
/// `ignore` package). A pattern with no `/` but at its end matches a name
/// at any depth, one with a `/` is relative to the folder; a pattern that
/// matches a folder matches what is in it; a trailing `/` matches folders
/// only; `!` takes a path back; the last pattern that matches decides.
#[derive(Debug, Default)]
struct Ignore {
    rules: Vec<(globset::GlobMatcher, bool)>,
}

impl Ignore {
    fn parse(text: &str) -> Result<Self, globset::Error> {
        let mut rules = Vec::new();
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let (folder_only, pattern) = match pattern.strip_suffix('/') {
                Some(rest) => (true, rest),
                None => (false, pattern),
            };
            let anchored = pattern.contains('/');
            let pattern = pattern.trim_start_matches('/');
            let glob = if anchored {
                pattern.to_owned()
            } else {
                format!("**/{pattern}")
            };
            let mut globs = vec![format!("{glob}/**")];
            if !folder_only {
                globs.push(glob);
            }
            for glob in globs {
                let matcher = globset::GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .build()?
                    .compile_matcher();
                rules.push((matcher, negated));
            }
        }
        Ok(Self { rules })
    }

    /// Whether the file at `path` (relative to the folder) is left out.
    fn ignores(&self, path: &str) -> bool {
        self.rules
            .iter()
            .rev()
            .find(|(matcher, _)| matcher.is_match(path))
            .is_some_and(|(_, negated)| !negated)
    }
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
    use super::Ignore;

    #[test]
    fn assetsignore_takes_gitignore_patterns() {
        let ignore = Ignore::parse(
            "# Pages leftovers\n_worker.js\n/_routes.json\n*.map\nprivate/\n!keep.map\n\n",
        )
        .unwrap();
        for path in [
            "_worker.js",
            "_worker.js/index.js",
            "deep/_worker.js",
            "_routes.json",
            "assets/index-abc.js.map",
            "private/notes.txt",
            "a/private/b.txt",
        ] {
            assert!(ignore.ignores(path), "{path}");
        }
        for path in [
            "deep/_routes.json",
            "assets/index-abc.js",
            "keep.map",
            "private",
            ".well-known/security.txt",
        ] {
            assert!(!ignore.ignores(path), "{path}");
        }
        assert!(!Ignore::default().ignores("index.html"));
    }
}
