//! The node's turn map (`isolane_engine::TurnMap`, one slot per engine
//! thread saying which Worker is in a JavaScript turn), opened before the
//! engine starts: what the previous process on the same state directory
//! left is read first, and when that process crashed (did not stop in
//! order) it becomes the [`CrashRecord`] the node publishes on its Lease,
//! for the router to tell the Worker that was running from the bystanders
//! (`router/src/losses.rs`). `main.rs` marks the map clean after the engine
//! stops.

use std::sync::Arc;

use isolane_engine::{Previous, TurnMap};
use isolane_membership::CrashRecord;

use crate::Config;

/// Opens the turn map in `config.state_dir` for the node's threads, puts it
/// in the engine's configuration and the previous process's crash record
/// (if it crashed) in `config.previous_crash`. A map that cannot be opened
/// is logged and left out: the node runs, its crashes unattributed.
pub fn open_turn_map(config: &mut Config) -> Option<Arc<TurnMap>> {
    let path = isolane_turnmap::path_in(&config.state_dir, &config.node_name);
    let now_ms = isolane_membership::crash::unix_ms();
    let node = &config.node_name;
    let (map, previous) = match TurnMap::open(&path, config.threads(), now_ms) {
        Ok(opened) => opened,
        Err(error) => {
            tracing::warn!(%node, %error, "no turn map: a crash of this process will not say which worker was running");
            return None;
        }
    };
    match previous {
        Previous::None => {}
        Previous::Unreadable(error) => {
            tracing::warn!(%node, path = %path.display(), reason = error.kind(), %error, "the previous turn map is unreadable; ignored");
        }
        Previous::Run(run) if run.crashed() => {
            tracing::warn!(
                %node, previous_pid = run.pid, in_turn = ?run.in_turn, unreadable = run.unreadable,
                "the previous process crashed; publishing which workers were in a turn"
            );
            config.previous_crash = Some(CrashRecord {
                started_ms: run.started_ms,
                found_ms: now_ms.max(run.started_ms),
                in_turn: run.in_turn,
                unreadable: run.unreadable,
            });
        }
        Previous::Run(_) => {}
    }
    config.engine.turn_map = Some(map.clone());
    Some(map)
}
