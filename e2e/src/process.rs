//! The project's binaries under test, and where the workspace is.
//!
//! [`binary`] is the path the Makefile names in an `ISOLANE_*_BIN` variable
//! (`make test-only` builds every binary once with `cargo build --workspace
//! --bins` and sets them); tests never run cargo themselves. Running a binary,
//! waiting on a condition and free ports are the tests' shared support in
//! `isolane-testenv` ([`isolane_testenv::Process`],
//! [`isolane_testenv::wait_until`], [`isolane_testenv::free_port`]).

use std::path::PathBuf;

pub use isolane_testenv::workspace_root;

/// Where cargo puts build products: `$CARGO_TARGET_DIR`, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The path of the binary `bin` that `$<env>` names.
///
/// # Panics
/// When `$<env>` is unset or names no file: the test cannot run without the
/// binary, and building it here (`cargo build -p`, with another feature set than
/// the workspace build's) would rebuild half the workspace under the test.
pub fn binary(bin: &str, env: &str) -> PathBuf {
    let built = target_dir().join("debug").join(bin);
    let Some(path) = std::env::var_os(env).map(PathBuf::from) else {
        panic!(
            "{env} is not set: run the e2e tests through `make test-only`, or build the \
             binaries (`hack/cargo.sh build --workspace --bins`) and set {env}={}",
            built.display()
        );
    };
    assert!(
        path.is_file(),
        "{env}={} is not a file: build it with `hack/cargo.sh build --workspace --bins`",
        path.display()
    );
    path
}

/// `(name, value)` pairs as [`isolane_testenv::Process::spawn`] takes them (the options'
/// `extra_env` of the operator, the nodes and the router).
pub fn extra_env(env: &[(String, String)]) -> impl Iterator<Item = (&str, &std::ffi::OsStr)> {
    env.iter()
        .map(|(k, v)| (k.as_str(), std::ffi::OsStr::new(v)))
}
