//! [`CrashRecord`]: what a node's restarted process publishes on its Lease
//! about the process before it, read from the node's turn map
//! (`isolane-turnmap`): it ended without stopping in order, and these
//! Workers were in a JavaScript turn when it did. The router reads it to
//! lift the quarantine of Workers that were only in flight on a node that
//! died (`router/src/losses.rs`).

use k8s_openapi::api::coordination::v1::Lease;
use serde::{Deserialize, Serialize};

/// The crash record of the node's previous process, as JSON (see
/// [`CrashRecord`]). Absent when the previous process stopped in order, or
/// when there was none.
pub const CRASH_ANNOTATION: &str = "isolane.dev/crash";

/// The most Worker ids a record carries (far above any node's threads);
/// a record listing more is not read.
pub const MAX_IN_TURN: usize = 4096;

/// A node process that ended without stopping in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrashRecord {
    /// When the crashed process started, Unix milliseconds.
    pub started_ms: u64,
    /// When the next process found the record (the crash was before),
    /// Unix milliseconds.
    pub found_ms: u64,
    /// The Workers in a turn when it ended; empty when none was.
    pub in_turn: Vec<String>,
    /// Slots that could not be read (torn): when non-zero, a Worker not
    /// listed may have been in a turn too, so the record clears nobody.
    #[serde(default)]
    pub unreadable: usize,
}

impl CrashRecord {
    /// The annotation's value.
    pub fn encode(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads an annotation's value; `None` when it is not a record.
    pub fn decode(text: &str) -> Option<Self> {
        serde_json::from_str::<Self>(text)
            .ok()
            .filter(|r| r.in_turn.len() <= MAX_IN_TURN && r.started_ms <= r.found_ms)
    }

    /// Whether the record shows `worker` was *not* in a turn when the
    /// process ended (so the crash was not its doing, as far as the node
    /// can tell).
    pub fn clears(&self, worker: &str) -> bool {
        self.unreadable == 0 && !self.in_turn.iter().any(|w| w == worker)
    }
}

/// The wall clock in Unix milliseconds, as records and the losses they
/// judge are stamped.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `lease` with `record` in its annotations.
pub fn with_crash(mut lease: Lease, record: &CrashRecord) -> Lease {
    lease
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(CRASH_ANNOTATION.to_owned(), record.encode());
    lease
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeMember, node_lease};
    use k8s_openapi::jiff::Timestamp;
    use std::time::Duration;

    fn record() -> CrashRecord {
        CrashRecord {
            started_ms: 1,
            found_ms: 2,
            in_turn: vec!["a/poison".to_owned(), "b/busy".to_owned()],
            unreadable: 0,
        }
    }

    #[test]
    fn a_record_on_a_lease_reads_back() {
        let lease = node_lease(
            "n",
            "ns",
            &["e".to_owned()],
            1,
            false,
            Duration::from_secs(10),
            Timestamp::from_second(1_800_000_000).unwrap(),
        );
        assert_eq!(NodeMember::from_lease(&lease).unwrap().crash, None);
        let member = NodeMember::from_lease(&with_crash(lease, &record())).unwrap();
        let crash = member.crash.unwrap();
        assert_eq!(crash, record());
        assert!(!crash.clears("a/poison"));
        assert!(crash.clears("a/bystander"));
    }

    #[test]
    fn torn_records_clear_nobody_and_bad_ones_are_ignored() {
        let torn = CrashRecord {
            unreadable: 1,
            ..record()
        };
        assert!(!torn.clears("a/bystander"));
        assert_eq!(CrashRecord::decode("{"), None);
        assert_eq!(
            CrashRecord::decode(r#"{"startedMs":5,"foundMs":1,"inTurn":[]}"#),
            None
        );
        assert_eq!(
            CrashRecord::decode(r#"{"startedMs":1,"foundMs":5,"inTurn":["x/y"]}"#)
                .map(|r| r.in_turn),
            Some(vec!["x/y".to_owned()])
        );
    }
}
