//! The compat suite's framework apps (`compat/apps/*`) built here by their
//! own CLIs from npm, as a user builds them: `node compat/bundle.mjs` (the
//! apps bundled as wrangler bundles them, React Router's and Next.js's
//! builds included), `astro build`, `vite build`. Shared by the `isolane
//! dev` tests that compare them with `wrangler dev` (cli/tests) and the e2e
//! test that deploys them onto a cluster (e2e/tests/frameworks.rs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::Error;

/// Bundling must end within this: the folder apps' builds included (the
/// Next.js app's takes about 50 s on two cores when its source changed).
pub const BUILD_DEADLINE: Duration = Duration::from_secs(300);

/// Bundles the `apps` of `compat` (every app if none is named) into `out`:
/// `<out>/<app>.js`, and a React Router app's build in `<out>/<app>-build`.
pub fn bundle(compat: &Path, out: &Path, apps: &[&str]) -> Result<(), Error> {
    if !compat.join("node_modules/esbuild").is_dir() {
        return Err(Error::NodeToolNotFound {
            program: "compat/node_modules (esbuild)",
        });
    }
    let mut command = Command::new("node");
    command.arg(compat.join("bundle.mjs")).arg(out).args(apps);
    run(command, &format!("node compat/bundle.mjs {apps:?}"))
}

/// `astro build` of the app folder `app` (Astro with `@astrojs/cloudflare`,
/// on Node.js 22): the Worker in `dist/server`, the assets in
/// `dist/client`, the config it generated for them
/// (`dist/server/wrangler.json`) and the redirect to it that wrangler
/// follows (`.wrangler/deploy/config.json`).
pub fn astro_build(repo: &Path, app: &Path) -> Result<(), Error> {
    let mut command = Command::new(crate::wrangler::node22(repo)?);
    command
        .arg(repo.join("compat/node_modules/astro/bin/astro.mjs"))
        .arg("build")
        .current_dir(app)
        .env("ASTRO_TELEMETRY_DISABLED", "1")
        .envs(crate::wrangler::OFFLINE_ENV);
    run(command, &format!("astro build in {}", app.display()))
}

/// `vite build` of the app folder `app` (its `vite.config.js`), into its
/// `dist/`.
pub fn vite_build(repo: &Path, app: &Path) -> Result<(), Error> {
    let mut command = Command::new("node");
    command
        .arg(repo.join("compat/node_modules/vite/bin/vite.js"))
        .arg("build")
        .current_dir(app)
        .env("NODE_ENV", "production");
    run(command, &format!("vite build in {}", app.display()))
}

/// The first file of `dir` (as `/name`) whose name starts with `prefix`
/// and ends with `suffix`: a build's hashed chunk.
pub fn asset(dir: &Path, prefix: &str, suffix: &str) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(prefix) && name.ends_with(suffix))
        .collect();
    names.sort();
    names.into_iter().next().map(|name| format!("/{name}"))
}

/// The app folder `compat/apps/<name>` of the repository at `repo`.
pub fn app(repo: &Path, name: &str) -> PathBuf {
    repo.join("compat/apps").join(name)
}

/// Runs `command` to success within [`BUILD_DEADLINE`]; its output is the
/// error's detail when it fails.
fn run(mut command: Command, what: &str) -> Result<(), Error> {
    let started = Instant::now();
    let output = command.output().map_err(|source| Error::Spawn {
        name: what.to_owned(),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::HostCommand {
            command: what.to_owned(),
            detail: format!(
                "{}\n{}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    let took = started.elapsed();
    if took > BUILD_DEADLINE {
        return Err(Error::HostCommand {
            command: what.to_owned(),
            detail: format!("took {took:?}, over the {BUILD_DEADLINE:?} a build may take"),
        });
    }
    Ok(())
}
