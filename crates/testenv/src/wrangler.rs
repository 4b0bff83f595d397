//! `wrangler dev`, the development server of Cloudflare's CLI (the npm
//! package `wrangler` under `compat/`), as the peer a wrangler project is
//! compared with: how it is started with nothing that leaves the machine
//! (no metrics, no `Request.cf` download), on Node.js 22 from npm
//! (`bench/node22.sh`), which wrangler needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The environment that keeps `wrangler dev` on the machine.
pub const OFFLINE_ENV: [(&str, &str); 3] = [
    ("WRANGLER_SEND_METRICS", "false"),
    ("CLOUDFLARE_CF_FETCH_ENABLED", "false"),
    ("CI", "1"),
];

/// wrangler's `bin/wrangler.js` in the repository at `repo`.
pub fn wrangler_js(repo: &Path) -> PathBuf {
    repo.join("compat/node_modules/wrangler/bin/wrangler.js")
}

/// The Node.js 22 that `bench/node22.sh` of the repository at `repo`
/// installs (from npm) and names.
pub fn node22(repo: &Path) -> Result<PathBuf, Error> {
    let script = repo.join("bench/node22.sh");
    let output = Command::new(&script)
        .output()
        .map_err(|source| Error::Spawn {
            name: "bench/node22.sh".to_owned(),
            source,
        })?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || path.is_empty() {
        return Err(Error::BinaryNotFound {
            name: "Node.js 22 (bench/node22.sh)",
            path: script,
        });
    }
    Ok(PathBuf::from(path))
}

/// The arguments after `node` of `wrangler dev` serving the project in the
/// working folder on `127.0.0.1:port`, its inspector on `inspector`.
pub fn dev_args(wrangler_js: &Path, port: u16, inspector: u16) -> Vec<String> {
    let args = [
        "dev",
        "--ip",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--inspector-port",
        &inspector.to_string(),
        "--log-level",
        "warn",
        "--show-interactive-dev-session=false",
    ]
    .map(str::to_owned);
    std::iter::once(wrangler_js.display().to_string())
        .chain(args)
        .collect()
}
