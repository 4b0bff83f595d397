//! `node compat/bundle.mjs`: the compat apps built by their frameworks'
//! CLIs and bundled as wrangler bundles them (shared by compat.rs and
//! dev_frameworks.rs; the build itself is `isolane_testenv::frameworks`').

use std::path::Path;

/// Bundles the `apps` of `compat` (every app if none is named) into `out`:
/// `<out>/<app>.js`, and a React Router app's build in `<out>/<app>-build`.
pub fn bundle(compat: &Path, out: &Path, apps: &[&str]) {
    isolane_testenv::frameworks::bundle(compat, out, apps)
        .unwrap_or_else(|error| panic!("{error}: run hack/install-deps.sh"));
}
