//! A project's build, as wrangler makes it: when the project has wrangler
//! installed (`node_modules/wrangler`, in its folder or a parent's, as
//! Node finds a package), `isolane dev` and `isolane deploy` run that
//! wrangler's `deploy --dry-run --outdir` (esbuild, TypeScript and JSX,
//! npm packages, its `alias`, `define`, custom `build.command` and its
//! Node.js polyfills for the compatibility settings) and take its output
//! folder as the Worker's code, as `isolane dev dist/` takes it. Nothing
//! leaves the machine: a dry run uploads nothing, and wrangler is told not
//! to send metrics. `no_bundle = true` skips it (the code is read as it is).
//!
//! The output goes to `.isolane/build/<environment>/<process id>` in the
//! project's folder, made anew each time (a hidden folder: `isolane dev`'s
//! reload does not watch it). One folder per process, so two `isolane dev`
//! (or a `dev` and a `deploy`) in one project never empty each other's
//! build while it is read; a folder left by a process that ended is removed
//! by a later build once a day old ([`STALE`]). Node.js is `ISOLANE_NODE` if
//! set, else `node` on the `PATH`; wrangler says which version it needs
//! when it is too old.

use std::path::{Path, PathBuf};
use std::process::Command;

/// wrangler's script in its package.
const WRANGLER_JS: &str = "node_modules/wrangler/bin/wrangler.js";

/// The environment variable naming the Node.js that runs wrangler.
pub const NODE_ENV: &str = "ISOLANE_NODE";

/// How old another process's build folder must be before a build removes
/// it: a build is read within seconds of being made, so only folders of
/// processes that ended (killed, or crashed) get this old.
const STALE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// The most of wrangler's output a failed build's error repeats.
const OUTPUT_KEPT: usize = 4000;

/// Why a project could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{out}: {source}")]
    Output {
        out: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "running {node} (Node.js, for wrangler at {wrangler}; set {NODE_ENV} to another): {source}"
    )]
    Spawn {
        node: String,
        wrangler: String,
        #[source]
        source: std::io::Error,
    },
    #[error("wrangler's build failed ({status}): {output}")]
    Failed { status: String, output: String },
}

/// The project's own wrangler and the Node.js that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builder {
    node: PathBuf,
    wrangler: PathBuf,
}

/// A build of one project's environment: where it runs and what it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    builder: Builder,
    /// The config file, absolute.
    config: PathBuf,
    /// The project's folder, absolute: wrangler runs in it.
    dir: PathBuf,
    env: Option<String>,
    /// The output folder.
    out: PathBuf,
    /// The main module's name in it: `main`'s stem, `.js` (wrangler's).
    main: String,
}

/// The wrangler installed for the project in `dir`, if any.
pub fn find(dir: &Path) -> Option<Builder> {
    let dir = std::path::absolute(dir).ok()?;
    let wrangler = dir
        .ancestors()
        .map(|folder| folder.join(WRANGLER_JS))
        .find(|path| path.is_file())?;
    let node = std::env::var_os(NODE_ENV).map_or_else(|| PathBuf::from("node"), PathBuf::from);
    Some(Builder { node, wrangler })
}

impl Builder {
    /// The build of the project whose config is `config` (in folder
    /// `dir`), environment `env`, main module `main`.
    pub fn plan(&self, config: &Path, env: Option<&str>, main: &Path) -> Option<Build> {
        let config = std::path::absolute(config).ok()?;
        let dir = config.parent()?.to_path_buf();
        let out = dir
            .join(".isolane/build")
            .join(env.map_or_else(|| "top".to_owned(), |env| format!("env-{env}")))
            .join(std::process::id().to_string());
        let stem = main.file_stem()?.to_string_lossy();
        Some(Build {
            builder: self.clone(),
            config,
            dir,
            env: env.map(str::to_owned),
            out,
            main: format!("{stem}.js"),
        })
    }
}

impl Build {
    /// The main module's path in the output.
    pub fn main(&self) -> PathBuf {
        self.out.join(&self.main)
    }

    /// Runs wrangler's build into a fresh output folder: the folder, or
    /// why there is none (wrangler's own words).
    pub fn run(&self) -> Result<&Path, BuildError> {
        let out_error = |source| BuildError::Output {
            out: self.out.display().to_string(),
            source,
        };
        match std::fs::remove_dir_all(&self.out) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(out_error(error));
            }
            _ => {}
        }
        std::fs::create_dir_all(&self.out).map_err(out_error)?;
        if let Some(builds) = self.out.parent() {
            remove_stale(builds, &self.out);
        }
        let started = std::time::Instant::now();
        let output = self
            .command()
            .output()
            .map_err(|source| BuildError::Spawn {
                node: self.builder.node.display().to_string(),
                wrangler: self.builder.wrangler.display().to_string(),
                source,
            })?;
        if !output.status.success() {
            return Err(BuildError::Failed {
                status: output.status.to_string(),
                output: tail(&output.stdout, &output.stderr),
            });
        }
        tracing::info!(
            out = %self.out.display(),
            ms = started.elapsed().as_millis() as u64,
            "built with the project's wrangler"
        );
        Ok(&self.out)
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.builder.node);
        command
            .arg(&self.builder.wrangler)
            .args(["deploy", "--dry-run", "--outdir"])
            .arg(&self.out)
            .arg("--config")
            .arg(&self.config)
            .current_dir(&self.dir)
            .env("WRANGLER_SEND_METRICS", "false")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        if let Some(env) = &self.env {
            command.args(["--env", env]);
        }
        command
    }
}

/// Removes the build folders in `builds` other than `own` that were last
/// changed more than [`STALE`] ago (best effort: a folder that cannot be
/// read or removed is left).
fn remove_stale(builds: &Path, own: &Path) {
    let Ok(entries) = std::fs::read_dir(builds) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE);
        if path != own && old && std::fs::remove_dir_all(&path).is_ok() {
            tracing::debug!(folder = %path.display(), "an old build folder removed");
        }
    }
}

/// The end of what wrangler printed (its error is last), trimmed.
fn tail(stdout: &[u8], stderr: &[u8]) -> String {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(stdout).trim(),
        String::from_utf8_lossy(stderr).trim()
    );
    let text = text.trim();
    let start = text.len().saturating_sub(OUTPUT_KEPT);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_processes_build_folders_a_day_old_are_removed() {
        let builds = tempfile::tempdir().unwrap();
        let [own, fresh, old, own_old] = ["1", "2", "3", "4"].map(|n| builds.path().join(n));
        for folder in [&own, &fresh, &old, &own_old] {
            std::fs::create_dir(folder).unwrap();
        }
        let two_days = std::time::SystemTime::now() - 2 * STALE;
        for folder in [&old, &own_old] {
            std::fs::File::open(folder)
                .unwrap()
                .set_modified(two_days)
                .unwrap();
        }
        remove_stale(builds.path(), &own_old);
        assert!(own.is_dir() && fresh.is_dir() && own_old.is_dir());
        assert!(
            !old.exists(),
            "a day-old folder of another process is removed"
        );
    }
}
