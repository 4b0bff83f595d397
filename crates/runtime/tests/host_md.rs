//! The units of every family against HOST.md's table of host functions
//! (their JavaScript files are held to `js/` in the engine's `snapshot.rs`).

use std::collections::BTreeSet;

/// HOST.md, the contract between the runtime's JavaScript and the engine.
const HOST_MD: &str = include_str!("../../engine/js/HOST.md");

/// The functions HOST.md's `host` table lists: each row of the section
/// `` ## `host` `` whose first cell is `` `name(…)` ``.
fn documented() -> Vec<String> {
    let section = HOST_MD
        .split("\n## ")
        .find(|s| s.starts_with("`host`"))
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|cell| cell.split_once('(').map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn host_md_lists_exactly_the_registered_host_functions() {
    let documented = documented();
    let registered: Vec<String> = isolane_engine::host_function_names(&isolane_runtime::families())
        .into_iter()
        .map(str::to_owned)
        .collect();
    let documented_set: BTreeSet<&String> = documented.iter().collect();
    let registered_set: BTreeSet<&String> = registered.iter().collect();
    assert_eq!(
        documented.len(),
        documented_set.len(),
        "HOST.md lists a function twice"
    );
    assert_eq!(
        registered.len(),
        registered_set.len(),
        "a host function is registered twice"
    );
    let undocumented: Vec<_> = registered_set.difference(&documented_set).collect();
    let unregistered: Vec<_> = documented_set.difference(&registered_set).collect();
    assert!(
        undocumented.is_empty() && unregistered.is_empty(),
        "HOST.md and the units disagree: registered but not in HOST.md {undocumented:?}; \
         in HOST.md but registered by no unit {unregistered:?}"
    );
}
