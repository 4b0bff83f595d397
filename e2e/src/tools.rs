//! The command-line tools the tests run as users do (`helm`, `kubectl`):
//! finding them, running them with an optional stdin and reading what they
//! printed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `name` from `PATH`, else from the Isolane cache's `bin/`
/// (`hack/install-deps.sh` puts Helm there).
///
/// # Panics
/// When it is in neither.
pub fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cache = std::env::var_os("ISOLANE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/isolane")))
        .map(|dir| dir.join("bin"));
    std::env::split_paths(&path)
        .chain(cache)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed: run hack/install-deps.sh"))
}

/// Its stdout, then its stderr.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command` with `stdin`, whatever its exit code.
///
/// # Panics
/// When it cannot start.
pub fn run(command: &mut Command, stdin: Option<&str>) -> Output {
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{command:?} does not start: {error}"));
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("the command finishes")
}

/// Runs `command` and returns its stdout.
///
/// # Panics
/// When it fails: the message holds what it printed.
pub fn run_ok(command: &mut Command, stdin: Option<&str>) -> String {
    let output = run(command, stdin);
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
