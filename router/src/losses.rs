//! [`NodeLosses`]: a Worker whose requests are lost with more than one node
//! is quarantined at the router, so a request that kills the node running
//! it cannot take the fleet down one node at a time; the nodes' crash
//! records then tell the Worker that was running when they died from the
//! bystanders that were merely in flight, and lift the bystanders'
//! quarantine.
//!
//! A node that refuses the connection never had the request (it has
//! exited, as a replaced node pod has), so that is no loss; only a call that
//! breaks after connecting is ([`crate::Error::lost_with_node`]).
//!
//! When a node's connection breaks under a request, the router cannot tell
//! a node that died (SIGKILL, OOM-kill, a crash) from a node that the
//! request itself killed, nor which of the Workers in flight there did it.
//! So:
//! - the first loss of a Worker's request within [`WINDOW`] is replayed once
//!   on the next node when the request is replayable: genuine node deaths
//!   cost no request (every Worker in flight on the dead node loses
//!   requests on that one node only);
//! - a loss on a *second, different* node within [`WINDOW`] makes the Worker
//!   a suspect: that request is not replayed, and the Worker is quarantined
//!   for [`FIRST`], doubling with each repeat up to [`LONGEST`]; its requests
//!   are answered `503`, `x-isolane-reason: quarantined`, `Retry-After`,
//!   without touching a node. A poison request thus costs at most two
//!   nodes, once per quarantine period.
//!
//! **Crash records.** Each node records, per engine thread, which Worker is
//! in a JavaScript turn (`isolane_engine::TurnMap`); a restarted node reads
//! what its previous process left and publishes it on its Lease
//! ([`CrashRecord`]), which reaches [`NodeLosses::crash`] through the
//! membership watch. Each loss of a Worker on that node before the record
//! was found is judged: *cleared* when the Worker was not in a turn there,
//! *in a turn* otherwise. A cleared loss no longer counts: a Worker left
//! with losses on fewer than two nodes is not quarantined (a quarantine in
//! force is lifted at once, and not counted for the doubling), and a
//! Worker whose earlier loss was cleared is replayed as after a first loss.
//! A Worker shown in a turn on both nodes stays quarantined, its period
//! counted again from the second record. A record with unreadable slots
//! clears nobody; a node that never comes back sends none, and the
//! quarantine simply runs out. A loss reported after its node's record
//! arrived is judged by that record at once. Each lift is counted in
//! `isolane_router_quarantines_lifted_total`.
//!
//! Left open: the record names every Worker in a turn on *any* thread when
//! the process died, so a Worker that happened to be running on another
//! thread at both deaths (a very busy one, while a poison on a neighbouring
//! thread kills the node twice) stays a suspect with the poison.
//!
//! **Meanwhile.** The record arrives only once the dead node has restarted
//! (seconds for a container restart). Until then the suspects are treated
//! alike: a suspect's request *waits* for the records, within its deadline
//! and the router's node wait (10 s by default), the way a request waits
//! for a node to join; if a record clears the Worker it goes on (a request
//! that was lost is replayed then), otherwise it is answered `503
//! quarantined` when the wait ends. So a bystander that an anonymous client
//! had in flight on two nodes that a poison Worker (or bad luck) killed is
//! delayed by the nodes' restart, and refused only when they do not come
//! back within that wait; it is never quarantined once they are back, and
//! its losses never lengthen a later quarantine. Only the Worker the
//! records show running on both dead nodes stays quarantined.
//!
//! (The engine itself no longer lets a Worker's allocations abort its
//! node; this is the backstop for whatever still does.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use isolane_membership::CrashRecord;

/// How long a Worker's node loss is remembered.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The first quarantine.
pub const FIRST: Duration = Duration::from_secs(10);

/// The longest quarantine.
pub const LONGEST: Duration = Duration::from_secs(600);

/// How far the router's and the node's clocks may differ when a loss is
/// matched to a crash record.
pub const CLOCK_SKEW_MS: u64 = 1_000;

/// What the nodes' crash records say about one loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    /// No record yet.
    Pending,
    /// The Worker was not in a turn when the node died.
    Cleared,
    /// It was.
    InTurn,
}

/// A Worker's latest loss on one node.
#[derive(Debug)]
struct Loss {
    node: String,
    at: Instant,
    /// The router's wall clock then, Unix milliseconds.
    wall_ms: u64,
    judged: Judged,
}

impl Loss {
    /// Judges this loss by `crash`, `worker`'s, if it covers it; whether it
    /// did.
    fn judge(&mut self, worker: &str, crash: &CrashRecord) -> bool {
        let covered = self.judged == Judged::Pending
            && self.wall_ms <= crash.found_ms.saturating_add(CLOCK_SKEW_MS)
            && self.wall_ms.saturating_add(CLOCK_SKEW_MS) >= crash.started_ms;
        if covered {
            self.judged = if crash.clears(worker) {
                Judged::Cleared
            } else {
                Judged::InTurn
            };
        }
        covered
    }
}

#[derive(Debug, Default)]
struct Record {
    /// At most one per node, the latest.
    losses: Vec<Loss>,
    /// The current (or last) quarantine: its length and end.
    quarantine: Option<(Duration, Instant)>,
}

impl Record {
    /// Nodes lost under the Worker that no record clears.
    fn suspect_nodes(&self) -> usize {
        self.losses
            .iter()
            .filter(|l| l.judged != Judged::Cleared)
            .count()
    }

    fn last_loss(&self) -> Option<Instant> {
        self.losses.iter().map(|l| l.at).max()
    }
}

/// What to do with a request lost with its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Replay it on the next node, if it can be replayed.
    Replay,
    /// The Worker is now quarantined for this long: answer so (or wait for
    /// the crash records, [`NodeLosses::awaiting_records`]).
    Quarantined(Duration),
}

/// The node losses of every Worker, per router process.
#[derive(Debug)]
pub struct NodeLosses {
    records: Mutex<HashMap<String, Record>>,
    /// The crash record last applied per node, for losses reported after
    /// it arrived.
    applied: Mutex<HashMap<String, CrashRecord>>,
    /// Whether any record exists: the request path skips the lock otherwise.
    any: AtomicBool,
    /// Bumped after each crash record applied, for suspects' requests waiting.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for NodeLosses {
    fn default() -> Self {
        Self {
            records: Mutex::default(),
            applied: Mutex::default(),
            any: AtomicBool::new(false),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }
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

    /// Whether a crash record may still lift `worker`'s quarantine: some
    /// loss of it is not judged yet.
    pub fn awaiting_records(&self, worker: &str) -> bool {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records
            .get(worker)
            .is_some_and(|r| r.losses.iter().any(|l| l.judged == Judged::Pending))
    }

    /// Changes after each crash record applied (subscribe before checking).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A request of `worker` was lost with `node` at `now` (`wall_ms` on
    /// the router's wall clock).
    pub fn lost(&self, worker: &str, node: &str, now: Instant, wall_ms: u64) -> Verdict {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        // Forget what is old, so the map stays as small as the trouble.
        records.retain(|_, r| {
            r.last_loss()
                .is_some_and(|at| now.duration_since(at) < WINDOW)
                || r.quarantine.is_some_and(|(_, until)| now < until + LONGEST)
        });
        self.any.store(true, Ordering::Relaxed);
        let record = records.entry(worker.to_owned()).or_default();
        // More requests lost in the same death add nothing.
        let known = record
            .losses
            .iter()
            .any(|l| l.node == node && l.judged == Judged::Pending);
        record
            .losses
            .retain(|l| l.node != node && now.duration_since(l.at) < WINDOW);
        // A new loss on a node is a new death (or the same one, not judged
        // yet): the record of an earlier process does not judge it.
        let mut loss = Loss {
            node: node.to_owned(),
            at: now,
            wall_ms,
            judged: Judged::Pending,
        };
        // Reported after the node's record came (the error surfaced late).
        if let Some(crash) = self
            .applied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
        {
            loss.judge(worker, crash);
        }
        record.losses.push(loss);
        if record.suspect_nodes() < 2 {
            return Verdict::Replay;
        }
        if let Some((_, until)) = record.quarantine.filter(|(_, until)| known && *until > now) {
            return Verdict::Quarantined(until - now);
        }
        let length = match record.quarantine {
            Some((last, until)) if now < until + LONGEST => (last * 2).min(LONGEST),
            _ => FIRST,
        };
        record.quarantine = Some((length, now + length));
        Verdict::Quarantined(length)
    }

    /// `node`'s restarted process published `crash` (seen at `now`): judge
    /// the losses on it that the record covers. Returns the Workers whose
    /// quarantine it lifted. A record already applied changes nothing.
    pub fn crash(&self, node: &str, crash: &CrashRecord, now: Instant) -> Vec<String> {
        {
            let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
            if applied.get(node) == Some(crash) {
                return Vec::new();
            }
            applied.insert(node.to_owned(), crash.clone());
        }
        let mut lifted = Vec::new();
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        for (worker, record) in records.iter_mut() {
            let mut judged_any = false;
            for loss in record.losses.iter_mut().filter(|l| l.node == node) {
                judged_any |= loss.judge(worker, crash);
            }
            let Some((length, until)) = record.quarantine.filter(|_| judged_any) else {
                continue;
            };
            if record.suspect_nodes() < 2 {
                // Not its doing: as if it had never been quarantined.
                record.quarantine = None;
                if until > now {
                    lifted.push(worker.clone());
                }
            } else if record.losses.iter().all(|l| l.judged == Judged::InTurn) {
                // Shown running on every node lost under it: the period
                // counts from the proof.
                record.quarantine = Some((length, until.max(now + length)));
            }
        }
        drop(records);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        lifted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(in_turn: &[&str], found_ms: u64) -> CrashRecord {
        CrashRecord {
            started_ms: 0,
            found_ms,
            in_turn: in_turn.iter().map(|w| (*w).to_owned()).collect(),
            unreadable: 0,
        }
    }

    #[test]
    fn one_node_lost_replays_and_a_second_quarantines() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        assert_eq!(losses.quarantined("w", now), None);
        assert_eq!(losses.lost("w", "a", now, 0), Verdict::Replay);
        // More requests lost with the same node (it died with them in flight).
        assert_eq!(losses.lost("w", "a", now, 0), Verdict::Replay);
        // Another Worker is unaffected by this one's record.
        assert_eq!(losses.lost("other", "b", now, 0), Verdict::Replay);
        assert_eq!(losses.lost("w", "b", now, 0), Verdict::Quarantined(FIRST));
        // Its other requests lost in the same death do not lengthen it.
        let soon = now + Duration::from_secs(1);
        assert_eq!(
            losses.lost("w", "b", soon, 0),
            Verdict::Quarantined(FIRST - Duration::from_secs(1))
        );
        assert_eq!(losses.quarantined("w", now), Some(FIRST));
        assert_eq!(losses.quarantined("other", now), None);
        assert_eq!(losses.quarantined("w", now + FIRST), None);
        // Again soon after: twice as long.
        let later = now + FIRST;
        assert_eq!(
            losses.lost("w", "c", later, 0),
            Verdict::Quarantined(FIRST * 2)
        );
    }

    #[test]
    fn losses_far_apart_do_not_add_up() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        assert_eq!(losses.lost("w", "a", now, 0), Verdict::Replay);
        assert_eq!(losses.lost("w", "b", now + WINDOW, 0), Verdict::Replay);
    }

    /// A poison Worker kills two nodes; a bystander was in flight on both.
    /// The records lift the bystander's quarantine; the poison's stays.
    #[test]
    fn crash_records_lift_a_bystanders_quarantine_only() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        for worker in ["p", "by"] {
            assert_eq!(losses.lost(worker, "a", now, 100), Verdict::Replay);
            assert_eq!(
                losses.lost(worker, "b", now, 200),
                Verdict::Quarantined(FIRST)
            );
            assert!(losses.awaiting_records(worker));
        }
        let changes = losses.subscribe();
        let later = now + Duration::from_secs(3);
        assert_eq!(losses.crash("a", &record(&["p"], 3_000), later), ["by"]);
        assert!(changes.has_changed().unwrap());
        assert_eq!(losses.quarantined("by", later), None);
        assert!(losses.quarantined("p", later).is_some());
        // Applied once only.
        assert!(losses.crash("a", &record(&["p"], 3_000), later).is_empty());
        // The second record proves the poison: its period restarts.
        let proof = now + Duration::from_secs(8);
        assert!(losses.crash("b", &record(&["p"], 8_000), proof).is_empty());
        assert_eq!(losses.quarantined("p", proof), Some(FIRST));
        assert!(!losses.awaiting_records("p"));
        // The bystander's losses never lengthen a later quarantine: a new
        // pair of losses starts at FIRST again.
        let again = proof + Duration::from_secs(1);
        assert_eq!(losses.lost("by", "c", again, 9_000), Verdict::Replay);
        assert_eq!(
            losses.lost("by", "d", again, 9_000),
            Verdict::Quarantined(FIRST)
        );
    }

    /// A record that arrives before the second loss keeps a Worker it
    /// clears from being quarantined at all.
    #[test]
    fn a_cleared_loss_does_not_count() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        assert_eq!(losses.lost("w", "a", now, 100), Verdict::Replay);
        assert!(losses.crash("a", &record(&[], 2_000), now).is_empty());
        assert_eq!(losses.lost("w", "b", now, 3_000), Verdict::Replay);
        // A loss reported after the record came is judged by it too.
        assert_eq!(losses.lost("late", "a", now, 1_500), Verdict::Replay);
        assert_eq!(losses.lost("late", "b", now, 3_000), Verdict::Replay);
        // A Worker shown in a turn still counts.
        assert_eq!(losses.lost("x", "c", now, 100), Verdict::Replay);
        losses.crash("c", &record(&["x"], 2_000), now);
        assert_eq!(
            losses.lost("x", "d", now, 3_000),
            Verdict::Quarantined(FIRST)
        );
    }

    /// A record judges only the losses of the process it describes, and a
    /// record with torn slots clears nobody.
    #[test]
    fn records_judge_only_their_own_process() {
        let losses = NodeLosses::default();
        let now = Instant::now();
        losses.lost("w", "a", now, 100);
        losses.lost("w", "b", now, 50_000);
        // Node b's record is of a process that ended before this loss.
        let old = CrashRecord {
            started_ms: 0,
            found_ms: 10_000,
            in_turn: Vec::new(),
            unreadable: 0,
        };
        assert!(losses.crash("b", &old, now).is_empty());
        assert!(losses.quarantined("w", now).is_some());
        let torn = CrashRecord {
            started_ms: 0,
            found_ms: 60_000,
            in_turn: Vec::new(),
            unreadable: 1,
        };
        assert!(losses.crash("b", &torn, now).is_empty());
        assert!(losses.quarantined("w", now).is_some());
        assert!(
            losses.awaiting_records("w"),
            "node a's record may still come"
        );
    }
}
