//! `node compat/bundle.mjs`: the compat apps built by their frameworks'
//! CLIs and bundled as wrangler bundles them (shared by compat.rs and
//! dev_frameworks.rs).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Bundling must end within this: the folder apps' builds included (the
/// Next.js app's takes about 50 s on two cores when its source changed).
const BUILD_DEADLINE: Duration = Duration::from_secs(300);

/// Bundles the `apps` of `compat` (every app if none is named) into `out`:
/// `<out>/<app>.js`, and a React Router app's build in `<out>/<app>-build`.
pub fn bundle(compat: &Path, out: &Path, apps: &[&str]) {
    assert!(
        compat.join("node_modules/esbuild").is_dir(),
        "{}/node_modules is missing: run hack/install-deps.sh",
        compat.display()
    );
    let started = Instant::now();
    let output = Command::new("node")
        .arg(compat.join("bundle.mjs"))
        .arg(out)
        .args(apps)
        .output()
        .unwrap_or_else(|e| panic!("running node ({e}): run hack/install-deps.sh"));
    assert!(
        output.status.success(),
        "bundling {apps:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(started.elapsed() < BUILD_DEADLINE);
}
