//! [`Schedule`]: which request an engine thread starts next, by namespace.
//!
//! The tenant is the Kubernetes namespace, not the Worker: one namespace's
//! Workers share one queue, one slot share and one CPU account per thread,
//! so spreading work over many Workers gains nothing.
//!
//! - **Slots.** A namespace may have at most `worker_slots` requests queued
//!   or in flight on one thread; past it, only its requests are refused
//!   (`Overloaded`), at once. A service call is not one of them: it runs
//!   inside a request already counted (a chain of Workers is one request).
//! - **Guarantee.** The thread's slots (`queue_depth` requests in flight)
//!   are first come, first served, so namespaces whose requests last (a
//!   slow reader holds its request until its body ends) could fill them
//!   all. A namespace with fewer than [`guaranteed`] requests in flight on
//!   the thread starts its next one even then, beyond the slots. Once the
//!   slots are full, a namespace that holds its guarantee or more starts
//!   nothing more until slots free: the hogs are capped at what they hold,
//!   a newcomer always gets its guarantee. Bound: requests started on a
//!   slot are at most `queue_depth`; those started on the guarantee are at
//!   most `guaranteed` per namespace (each saw fewer than that of its
//!   namespace in flight); so a thread has at most `queue_depth +
//!   guaranteed × namespaces` in flight, namespaces being those with a
//!   request in flight on it (each also within its `worker_slots`).
//! - **CPU share.** Requests wait in per-namespace queues and the thread
//!   starts the one of the namespace with the least virtual time: the CPU
//!   its turns used, measured (every turn, also a request's later ones, is
//!   charged). A namespace that comes back from idle starts at the current
//!   virtual time, so it cannot bank credit, and a neighbour that asks
//!   rarely goes before a namespace that floods. A turn cannot be
//!   preempted, so this orders *starts*: a neighbour waits for at most the
//!   turn that is running, plus the turns already under way.
//! - **Penalty for overruns.** A turn that kept running more than
//!   [`OVERRUN`] past its request's CPU or memory limit (a builtin V8 cannot
//!   interrupt) held the thread from everyone. Its namespace's next requests
//!   on this thread wait for [`PENALTY`] times that overrun (at most
//!   [`LONGEST`]); one whose wall limit ends before the wait would is
//!   refused at once as `Quarantined`, with `Retry-After`. The wait is
//!   proportional to the harm proven, is never a strike count, and a
//!   request that stops at its limit promptly (a loop, an allocation, a big
//!   body) costs its namespace nothing but its own failure. Whoever makes a
//!   turn overrun — the Worker's code, or a client whose input the Worker
//!   feeds to such a builtin — delays only that namespace, on that thread,
//!   for a time bounded by what the overrun already cost the thread.
//!
//! Per engine thread, like the isolates; borrowed briefly, never across an
//! await.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

use crate::job::Job;

/// CPU time a stopped turn may keep running past its limit before its
/// namespace is penalized. An interruptible turn stops within microseconds;
/// this leaves room for the garbage collection that termination may run.
pub(crate) const OVERRUN: Duration = Duration::from_millis(100);

/// How many times an overrun its namespace waits afterwards: the thread's
/// other tenants get at least this share of it back (4: a namespace that
/// overruns again and again holds the thread at most a fifth of the time).
pub(crate) const PENALTY: u32 = 4;

/// The longest penalty.
pub(crate) const LONGEST: Duration = Duration::from_secs(60);

/// Namespaces remembered before the idle ones are forgotten (a warm request
/// of a namespace seen lately allocates nothing).
const KEPT_IDLE: usize = 64;

/// Requests a namespace may always have in flight on a thread whose
/// `limit` slots other namespaces hold: a 64th of the limit, at least 4
/// (never more than the limit). The node's admission gives the same
/// guarantee in front of the engine.
pub fn guaranteed(limit: usize) -> usize {
    (limit / 64).max(4).min(limit.max(1))
}

/// Whether a request may start now, when nothing of its namespace waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// A slot of the thread is free (and held for it).
    Slot,
    /// Every slot is taken: only a namespace under `guarantee` starts.
    Full { guarantee: usize },
    /// Not now (other requests arrived with it): queued.
    Later,
    /// At once, beyond the slots, unless its namespace is held: a service
    /// call, part of a request that holds its slot already (`host/service.rs`);
    /// waiting for another would let a chain of calls wait on itself.
    Now,
}

/// One namespace on one thread.
#[derive(Default)]
struct Tenant {
    queue: VecDeque<Job>,
    in_flight: usize,
    /// Service calls in flight: each runs inside a request of the thread
    /// already counted in `in_flight`, so it counts against neither the
    /// share nor the guarantee (a chain of Workers is one request).
    nested: usize,
    /// CPU time charged (ns), on the thread's virtual clock.
    vtime: u64,
    /// When it became active (ties go to the earlier).
    since: u64,
    /// Its requests wait until then (an overrun's penalty).
    held_until: Option<Instant>,
    /// The guess at how long its next turn will take: its last turn's CPU
    /// time, or half the guess before, whichever is longer. A namespace
    /// whose long turns follow short ones is still guessed long: after a
    /// turn of 50 ms, for its next seven.
    turn_guess: Duration,
}

impl Tenant {
    fn idle(&self, now: Instant) -> bool {
        self.queue.is_empty()
            && self.in_flight + self.nested == 0
            && self.held_until.is_none_or(|until| until <= now)
    }

    /// `job` starts: counted in flight, or nested for a service call.
    fn started(&mut self, job: &Job) {
        if job.work.is_service_call() {
            self.nested += 1;
        } else {
            self.in_flight += 1;
        }
    }

    /// Its place in the order of starts: least CPU charged first, then the
    /// earlier active.
    fn rank(&self) -> (u64, u64) {
        (self.vtime, self.since)
    }

    /// One of its requests may start now, among namespaces under `guarantee`.
    fn may_start(&self, now: Instant, guarantee: usize) -> bool {
        !self.queue.is_empty()
            && self.in_flight < guarantee
            && self.held_until.is_none_or(|until| until <= now)
    }
}

/// Why a request was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its namespace has all its slots on this thread.
    Full,
    /// Its namespace is penalized for longer than the request may wait.
    Held { remaining: Duration },
}

/// The requests of one thread, by namespace.
#[derive(Default)]
pub(crate) struct Schedule {
    /// By namespace. Fx hashing: three lookups a request, keyed by names
    /// the cluster's administrators chose, not by clients.
    tenants: FxHashMap<Box<str>, Tenant>,
    /// The virtual time of the last request started.
    clock: u64,
    /// Activations so far (for ties).
    seq: u64,
    queued: usize,
}

impl Schedule {
    /// Queues `job` for its namespace, or gives it back with why not. With
    /// [`Start::Slot`] (a slot of the thread is free) and nothing queued, it
    /// is the one [`next`](Self::next) would choose: it is handed back to
    /// start now, in flight, without a trip through the queue. With
    /// [`Start::Full`], it is handed back to start beyond the slots when its
    /// namespace is under its guarantee and has nothing queued.
    pub(crate) fn admit(
        &mut self,
        job: Job,
        share: usize,
        now: Instant,
        start: Start,
    ) -> Result<Option<Job>, (Box<Job>, Refusal)> {
        let (clock, seq) = (self.clock, self.seq);
        let namespace = job.bundle.namespace();
        if !self.tenants.contains_key(namespace) && self.tenants.len() >= KEPT_IDLE {
            // Forget the idle ones (they come back at the clock anyway).
            self.tenants.retain(|_, t| !t.idle(now));
        }
        let tenant = match self.tenants.get_mut(namespace) {
            Some(tenant) => tenant,
            None => self.tenants.entry(Box::from(namespace)).or_default(),
        };
        if tenant.queue.len() + tenant.in_flight >= share.max(1) {
            return Err((Box::new(job), Refusal::Full));
        }
        if let Some(until) = tenant.held_until.filter(|until| *until > now) {
            let remaining = until - now;
            if remaining >= job.bundle.limits.wall() {
                return Err((Box::new(job), Refusal::Held { remaining }));
            }
        }
        if tenant.queue.is_empty() && tenant.in_flight + tenant.nested == 0 {
            // Back from idle: no credit for the time away.
            tenant.vtime = tenant.vtime.max(clock);
            tenant.since = seq;
            self.seq += 1;
        }
        let free = tenant.held_until.is_none_or(|until| until <= now);
        let now_ok = match start {
            Start::Slot => self.queued == 0,
            Start::Full { guarantee } => tenant.queue.is_empty() && tenant.in_flight < guarantee,
            Start::Later => false,
            Start::Now => true,
        };
        if now_ok && free {
            tenant.started(&job);
            self.clock = self.clock.max(tenant.vtime);
            return Ok(Some(job));
        }
        tenant.queue.push_back(job);
        self.queued += 1;
        Ok(None)
    }

    /// Whether any request waits (held or not).
    pub(crate) fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// The request to start now: the oldest of the namespace with the least
    /// virtual time among those not held. It counts as in flight until
    /// [`finished`](Self::finished).
    pub(crate) fn next(&mut self, now: Instant) -> Option<Job> {
        self.next_under(now, usize::MAX)
    }

    /// Like [`next`](Self::next), among the namespaces with fewer than
    /// `guarantee` requests in flight: the start beyond the thread's slots
    /// that the guarantee allows (see the module's doc).
    pub(crate) fn next_under(&mut self, now: Instant, guarantee: usize) -> Option<Job> {
        if self.queued == 0 {
            return None;
        }
        let tenant = self
            .tenants
            .values_mut()
            .filter(|t| t.may_start(now, guarantee))
            .min_by_key(|t| t.rank())?;
        let job = tenant.queue.pop_front()?;
        tenant.started(&job);
        self.clock = self.clock.max(tenant.vtime);
        self.queued -= 1;
        Some(job)
    }

    /// The guess at how long the first turn of the request
    /// [`next_under`](Self::next_under) would start will hold the thread,
    /// from its namespace's last turns (zero when none would start).
    pub(crate) fn next_turn_guess(&self, now: Instant, guarantee: usize) -> Duration {
        self.tenants
            .values()
            .filter(|t| t.may_start(now, guarantee))
            .min_by_key(|t| t.rank())
            .map_or(Duration::ZERO, |t| t.turn_guess)
    }

    /// When the earliest penalty of a namespace with requests waiting ends.
    pub(crate) fn next_release(&self) -> Option<Instant> {
        if self.queued == 0 {
            return None;
        }
        self.tenants
            .values()
            .filter(|t| !t.queue.is_empty())
            .filter_map(|t| t.held_until)
            .min()
    }

    /// `namespace`'s turn used `cpu`.
    pub(crate) fn charge(&mut self, namespace: &str, cpu: Duration) {
        if let Some(tenant) = self.tenants.get_mut(namespace) {
            let ns = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
            tenant.vtime = tenant.vtime.saturating_add(ns);
            tenant.turn_guess = cpu.max(tenant.turn_guess / 2);
        }
    }

    /// One of `namespace`'s requests (`nested`: a service call) ended.
    /// Returns whether the namespace has requests waiting and is now under
    /// `guarantee` (one of them may start even while the thread's slots are
    /// full).
    pub(crate) fn finished(&mut self, namespace: &str, guarantee: usize, nested: bool) -> bool {
        let Some(tenant) = self.tenants.get_mut(namespace) else {
            return false;
        };
        let count = if nested {
            &mut tenant.nested
        } else {
            &mut tenant.in_flight
        };
        *count = count.saturating_sub(1);
        !tenant.queue.is_empty() && tenant.in_flight < guarantee
    }

    /// A turn of `namespace` ran `overrun` past its limit. Returns the
    /// penalty this starts, if the overrun was long enough for one.
    pub(crate) fn overran(
        &mut self,
        namespace: &str,
        overrun: Duration,
        now: Instant,
    ) -> Option<Duration> {
        if overrun <= OVERRUN {
            return None;
        }
        let length = overrun.saturating_mul(PENALTY).min(LONGEST);
        let tenant = self.tenants.entry(Box::from(namespace)).or_default();
        let until = now + length;
        tenant.held_until = Some(tenant.held_until.map_or(until, |held| held.max(until)));
        Some(length)
    }

    /// How long `namespace` is held now, if it is.
    #[cfg(test)]
    fn held(&self, namespace: &str, now: Instant) -> Option<Duration> {
        let until = self.tenants.get(namespace)?.held_until?;
        (until > now).then(|| until - now)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::body::Body;
    use crate::bundle::WorkerBundle;

    fn job(id: &str) -> Job {
        let (reply, _) = tokio::sync::oneshot::channel();
        Job {
            bundle: Arc::new(WorkerBundle::new(id, "r1", "")),
            work: crate::work::Work::Fetch(http::Request::new(Body::empty())),
            reply,
            forwarded: false,
        }
    }

    fn admit(s: &mut Schedule, id: &str, share: usize) -> Result<(), Refusal> {
        s.admit(job(id), share, Instant::now(), Start::Later)
            .map(|_| ())
            .map_err(|(_, r)| r)
    }

    fn next_under(s: &mut Schedule, guarantee: usize) -> Option<String> {
        s.next_under(Instant::now(), guarantee)
            .map(|j| j.bundle.id.clone())
    }

    fn next_id(s: &mut Schedule) -> Option<String> {
        s.next(Instant::now()).map(|j| j.bundle.id.clone())
    }

    #[test]
    fn slots_are_shared_by_namespace_not_by_worker() {
        let mut s = Schedule::default();
        for i in 0..4 {
            assert_eq!(admit(&mut s, &format!("hog/w{i}"), 4), Ok(()));
        }
        assert_eq!(admit(&mut s, "hog/w9", 4), Err(Refusal::Full));
        assert_eq!(admit(&mut s, "other/w", 4), Ok(()));
        // In flight counts too, until finished.
        assert!(next_id(&mut s).is_some());
        assert_eq!(admit(&mut s, "hog/w5", 4), Err(Refusal::Full));
    }

    #[test]
    fn a_service_call_starts_at_once_while_others_queue() {
        let mut s = Schedule::default();
        assert_eq!(admit(&mut s, "shop/a", 8), Ok(()));
        // Queued work waits; a service call, part of a request in flight,
        // starts beyond it (with `Start::Later` it would queue behind).
        let started = s.admit(job("shop/b"), usize::MAX, Instant::now(), Start::Now);
        assert!(matches!(started, Ok(Some(_))));
        let later = s.admit(job("shop/c"), usize::MAX, Instant::now(), Start::Later);
        assert!(matches!(later, Ok(None)));
        assert_eq!(next_id(&mut s).as_deref(), Some("shop/a"));
    }

    #[test]
    fn the_namespace_that_used_less_cpu_starts_first() {
        let mut s = Schedule::default();
        for _ in 0..3 {
            admit(&mut s, "hog/a", 16).unwrap();
        }
        assert_eq!(next_id(&mut s).as_deref(), Some("hog/a"));
        s.charge("hog", Duration::from_millis(4));
        // A neighbour arriving behind the hog's queue goes first.
        admit(&mut s, "web/n", 16).unwrap();
        assert_eq!(next_id(&mut s).as_deref(), Some("web/n"));
        s.charge("web", Duration::from_micros(100));
        s.finished("web", 4, false);
        assert_eq!(next_id(&mut s).as_deref(), Some("hog/a"));
        s.charge("hog", Duration::from_millis(4));
        // Back from idle: at the clock, still ahead of the hog.
        admit(&mut s, "web/n", 16).unwrap();
        assert_eq!(next_id(&mut s).as_deref(), Some("web/n"));
        assert_eq!(next_id(&mut s).as_deref(), Some("hog/a"));
        assert!(s.is_empty());
    }

    #[test]
    fn the_guess_at_the_next_turn_is_from_the_last_turns_of_the_namespace_chosen() {
        let mut s = Schedule::default();
        let now = Instant::now();
        assert_eq!(s.next_turn_guess(now, usize::MAX), Duration::ZERO);
        admit(&mut s, "hog/a", 16).unwrap();
        admit(&mut s, "hog/a", 16).unwrap();
        assert_eq!(next_id(&mut s).as_deref(), Some("hog/a"));
        s.charge("hog", Duration::from_millis(40));
        assert_eq!(
            s.next_turn_guess(now, usize::MAX),
            Duration::from_millis(40)
        );
        // A neighbour that used less goes first: the guess is its turn's.
        admit(&mut s, "web/n", 16).unwrap();
        assert_eq!(s.next_turn_guess(now, usize::MAX), Duration::ZERO);
        assert_eq!(next_id(&mut s).as_deref(), Some("web/n"));
        s.charge("web", Duration::from_micros(30));
        assert_eq!(
            s.next_turn_guess(now, usize::MAX),
            Duration::from_millis(40)
        );
        // Beyond the slots only namespaces under the guarantee may start.
        assert_eq!(s.next_turn_guess(now, 1), Duration::ZERO);
        // A short turn after a long one halves the guess, no more.
        s.charge("hog", Duration::from_micros(10));
        assert_eq!(
            s.next_turn_guess(now, usize::MAX),
            Duration::from_millis(20)
        );
    }

    #[test]
    fn only_an_overrun_holds_and_only_its_namespace() {
        let mut s = Schedule::default();
        let now = Instant::now();
        assert_eq!(s.overran("hog", OVERRUN, now), None);
        let overrun = Duration::from_secs(2);
        assert_eq!(s.overran("hog", overrun, now), Some(overrun * PENALTY));
        assert_eq!(s.held("hog", now), Some(overrun * PENALTY));
        assert_eq!(s.held("web", now), None);
        admit(&mut s, "hog/a", 16).unwrap();
        admit(&mut s, "web/n", 16).unwrap();
        assert_eq!(next_id(&mut s).as_deref(), Some("web/n"));
        assert_eq!(next_id(&mut s), None, "the hog waits");
        assert_eq!(s.next_release(), Some(now + overrun * PENALTY));
        assert!(s.next(now + overrun * PENALTY).is_some());
        // A request that could not wait that long is refused.
        s.overran("hog", Duration::from_secs(30), now);
        let held = s
            .admit(job("hog/a"), 16, now, Start::Slot)
            .map(|_| ())
            .map_err(|(_, r)| r);
        assert_eq!(held, Err(Refusal::Held { remaining: LONGEST }));
    }

    fn started(s: &mut Schedule, id: &str, start: Start) -> bool {
        matches!(s.admit(job(id), 64, Instant::now(), start), Ok(Some(_)))
    }

    #[test]
    fn a_service_call_does_not_use_its_namespace_share() {
        let mut s = Schedule::default();
        let now = Instant::now();
        let front = |s: &mut Schedule| s.admit(job("ns/gateway"), 2, now, Start::Now);
        assert!(matches!(front(&mut s), Ok(Some(_))));
        // The gateway's request calls two Workers of its namespace through
        // service bindings: they start at once, beside it.
        for callee in ["ns/auth", "ns/data"] {
            let mut call = job(callee);
            call.work = crate::work::Work::ServiceCall {
                call: crate::service_call::ServiceCall::default(),
                request: http::Request::new(Body::empty()),
            };
            assert!(matches!(
                s.admit(call, usize::MAX, now, Start::Now),
                Ok(Some(_))
            ));
        }
        // A second request of the namespace still has the share's second
        // slot: the calls run inside the first.
        assert!(matches!(front(&mut s), Ok(Some(_))));
        assert!(matches!(front(&mut s), Err((_, Refusal::Full))));
        // The calls end, then a request: one slot frees, not three.
        s.finished("ns", 4, true);
        s.finished("ns", 4, true);
        s.finished("ns", 4, false);
        assert!(matches!(front(&mut s), Ok(Some(_))));
        assert!(matches!(front(&mut s), Err((_, Refusal::Full))));
    }

    #[test]
    fn a_full_thread_still_starts_a_newcomer_under_its_guarantee() {
        let mut s = Schedule::default();
        // Two hogs hold all 8 slots of the thread.
        for i in 0..8 {
            assert!(started(&mut s, &format!("hog{}/w", i % 2), Start::Slot));
        }
        let full = Start::Full { guarantee: 2 };
        // The hogs hold more than the guarantee: capped, they only queue.
        assert!(!started(&mut s, "hog0/w", full));
        assert_eq!(next_under(&mut s, 2), None);
        // A newcomer starts its guarantee at once, then queues.
        assert!(started(&mut s, "web/a", full));
        assert!(started(&mut s, "web/b", full));
        assert!(!started(&mut s, "web/c", full));
        assert_eq!(next_under(&mut s, 2), None);
        // One of its requests ends: its queued one may start, beyond the
        // slots still, and the hogs' may not.
        assert!(s.finished("web", 2, false));
        assert_eq!(next_under(&mut s, 2).as_deref(), Some("web/c"));
        assert!(!s.finished("hog1", 2, false), "the hog has nothing queued");
        assert_eq!(next_under(&mut s, 2), None);
    }

    #[test]
    fn in_flight_stays_within_the_slots_plus_the_guarantee_per_namespace() {
        let (slots, guarantee, namespaces) = (8, 2, 6);
        let mut s = Schedule::default();
        let mut in_flight = 0;
        for i in 0..slots {
            in_flight += usize::from(started(&mut s, &format!("ns{}/w", i % 2), Start::Slot));
        }
        assert_eq!(in_flight, slots);
        // Every namespace asks again and again while the thread is full.
        for round in 0..10 {
            for n in 0..namespaces {
                let full = Start::Full { guarantee };
                in_flight += usize::from(started(&mut s, &format!("ns{n}/r{round}"), full));
            }
            while next_under(&mut s, guarantee).is_some() {
                in_flight += 1;
            }
        }
        // ns0 and ns1 held 4 each: nothing more; the 4 others 2 each.
        assert_eq!(in_flight, slots + guarantee * (namespaces - 2));
        assert!(in_flight <= slots + guarantee * namespaces);
    }

    #[test]
    fn the_guarantee_is_a_64th_of_the_limit_at_least_4() {
        assert_eq!(guaranteed(256), 4);
        assert_eq!(guaranteed(1024), 16);
        assert_eq!(guaranteed(2), 2);
        assert_eq!(guaranteed(0), 1);
    }

    #[test]
    fn with_nothing_queued_a_request_starts_at_once_unless_held() {
        let mut s = Schedule::default();
        let now = Instant::now();
        let started = s
            .admit(job("web/a"), 4, now, Start::Slot)
            .map_err(|(_, r)| r);
        assert!(matches!(started, Ok(Some(_))));
        assert!(s.is_empty());
        // In flight: it holds a slot until finished.
        for _ in 0..3 {
            assert!(matches!(
                s.admit(job("web/a"), 4, now, Start::Later),
                Ok(None)
            ));
        }
        assert!(s.admit(job("web/a"), 4, now, Start::Slot).is_err());
        s.finished("web", 4, false);
        // Something is queued: a newcomer waits its turn.
        assert!(matches!(
            s.admit(job("other/b"), 4, now, Start::Slot),
            Ok(None)
        ));
        // A held namespace never skips its wait.
        let mut s = Schedule::default();
        s.overran("hog", Duration::from_secs(1), now);
        assert!(matches!(
            s.admit(job("hog/a"), 4, now, Start::Slot),
            Ok(None)
        ));
        assert!(s.next(now).is_none());
    }
}
