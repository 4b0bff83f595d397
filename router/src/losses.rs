//! [`NodeLosses`]: a Worker whose requests are lost with more than one node
//! is quarantined at the router, so a request that kills the node running
//! it cannot take the fleet down one node at a time.
//!
//! A node that refuses the connection never had the request (it has
//! exited, as a replaced node pod has), so that is no loss; only a call that
//! breaks after connecting is ([`crate::Error::lost_with_node`]).
//!
//! When a node's connection breaks under a request, the router cannot tell
//! a node that died (SIGKILL, OOM-kill, a crash) from a node that the
//! request itself killed. So:
//! - the first loss of a Worker's request within [`WINDOW`] is replayed once
//!   on the next node when the request is replayable, as before: genuine
//!   node deaths cost no request (every Worker in flight on the dead node
//!   loses requests on that one node only);
//! - a loss on a *second, different* node within [`WINDOW`] quarantines the
//!   Worker: that request is not replayed, and the Worker's requests are
//!   answered at once with `503`, `x-isolane-reason: quarantined` and
//!   `Retry-After`, without touching a node, for [`FIRST`], doubling with
//!   each repeat up to [`LONGEST`].
//!
//! A poison request thus costs at most two nodes, once per quarantine
//! period. (The engine itself no longer lets a Worker's allocations abort
//! its node; this is the backstop for whatever still does.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a Worker's node loss is remembered.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The first quarantine.
pub const FIRST: Duration = Duration::from_secs(10);

/// The longest quarantine.
pub const LONGEST: Duration = Duration::from_secs(600);

#[derive(Debug)]
struct Record {
    /// The node of the last loss, and when.
    node: String,
    at: Instant,
    /// The current (or last) quarantine: its length and end.
    quarantine: Option<(Duration, Instant)>,
}

/// What to do with a request lost with its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Replay it on the next node, if it can be replayed.
    Replay,
    /// The Worker is now quarantined for this long: answer so.
    Quarantined(Duration),
}

/// The node losses of every Worker, per router process.
#[derive(Debug, Default)]
pub struct NodeLosses {
    records: Mutex<HashMap<String, Record>>,
    /// Whether any record exists: the request path skips the lock otherwise.
    any: AtomicBool,
}

impl NodeLosses {
    /// [`quarantined`](Self::quarantined) at the current time, reading the
    /// clock only when some request was ever lost (the request path's call).
    pub fn quarantined_now(&self, worker: &str) -> Option<Duration> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        self.quarantined(worker, Instant::now())
    }

    /// How long `worker` stays quarantined at `now`, if it is.
    pub fn quarantined(&self, worker: &str, now: Instant) -> Option<Duration> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let (_, until) = records.get(worker)?.quarantine?;
        (until > now).then(|| until - now)
    }

    /// A request of `worker` was lost with `node`.
    pub fn lost(&self, worker: &str, node: &str, now: Instant) -> Verdict {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        // Forget what is old, so the map stays as small as the trouble.
        records.retain(|_, r| {
            now.duration_since(r.at) < WINDOW
                || r.quarantine.is_some_and(|(_, until)| now < until + LONGEST)
        });
        self.any.store(true, Ordering::Relaxed);
        let Some(record) = records.get_mut(worker) else {
            records.insert(
                worker.to_owned(),
                Record {
                    node: node.to_owned(),
                    at: now,
                    quarantine: None,
                },
            );
            return Verdict::Replay;
        };
        let recent = now.duration_since(record.at) < WINDOW;
        let other_node = record.node != node;
        record.node = node.to_owned();
        record.at = now;
        if !(recent && other_node) {
            return Verdict::Replay;
        }
        let length = match record.quarantine {
            Some((last, until)) if now < until + LONGEST => (last * 2).min(LONGEST),
            _ => FIRST,
        };
        record.quarantine = Some((length, now + length));
        Verdict::Quarantined(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node_lost_replays_and_a_second_quarantines() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        assert_eq!(losses.quarantined("w", now), None);
        assert_eq!(losses.lost("w", "a", now), Verdict::Replay);
        // More requests lost with the same node (it died with them in flight).
        assert_eq!(losses.lost("w", "a", now), Verdict::Replay);
        // Another Worker is unaffected by this one's record.
        assert_eq!(losses.lost("other", "b", now), Verdict::Replay);
        assert_eq!(losses.lost("w", "b", now), Verdict::Quarantined(FIRST));
        assert_eq!(losses.quarantined("w", now), Some(FIRST));
        assert_eq!(losses.quarantined("other", now), None);
        assert_eq!(losses.quarantined("w", now + FIRST), None);
        // Again soon after: twice as long.
        let later = now + FIRST;
        assert_eq!(
            losses.lost("w", "c", later),
            Verdict::Quarantined(FIRST * 2)
        );
    }

    #[test]
    fn losses_far_apart_do_not_add_up() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        assert_eq!(losses.lost("w", "a", now), Verdict::Replay);
        assert_eq!(losses.lost("w", "b", now + WINDOW), Verdict::Replay);
    }
}
