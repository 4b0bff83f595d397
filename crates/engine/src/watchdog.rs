//! One watchdog thread per engine thread (not per request): it terminates a
//! JS turn that outruns its request's CPU budget or wall deadline.
//!
//! The engine thread arms the watchdog before entering JavaScript and disarms
//! it after; arming wakes the watchdog only when its planned wake-up is later
//! than the new deadline, so a warm request usually costs two uncontended
//! mutex operations. The watchdog measures the engine thread's real CPU time
//! through that thread's CPU clock, so preemption on a busy machine does not
//! count against the worker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::limits::CpuClock;
use crate::observer::TerminationReason;

mod stop;
pub use stop::Stop;

pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Set with `State::fired`, readable without the lock: long native calls
    /// (`has_fired`) poll it between steps, since V8's termination only
    /// takes effect once control returns to JavaScript; native work off
    /// the V8 API polls it through a `Tripwire`.
    fired: Arc<AtomicBool>,
}

#[derive(Default)]
struct State {
    armed: Option<Armed>,
    fired: Option<TerminationReason>,
    /// When the watchdog thread will next look, if it is sleeping on a timeout.
    planned: Option<Instant>,
    shutdown: bool,
}

struct Armed {
    handle: v8::IsolateHandle,
    cpu_start: Duration,
    cpu_budget: Duration,
    wall_deadline: Instant,
}

impl Armed {
    /// Whether the turn must stop now; else when to look again.
    fn check(&self, clock: CpuClock) -> Result<Instant, TerminationReason> {
        let now = Instant::now();
        if now >= self.wall_deadline {
            return Err(TerminationReason::WallTimeout);
        }
        let used = clock.now().saturating_sub(self.cpu_start);
        if used >= self.cpu_budget {
            return Err(TerminationReason::CpuLimit);
        }
        Ok((now + (self.cpu_budget - used)).min(self.wall_deadline))
    }
}

impl Watchdog {
    /// Starts the watchdog for the calling (engine) thread.
    pub(crate) fn start(index: usize, clock: CpuClock) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            fired: Arc::new(AtomicBool::new(false)),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("isolane-watchdog-{index}"))
            .stack_size(64 * 1024)
            .spawn(move || run(&thread_shared, clock))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Arms for one turn.
    pub(crate) fn arm(
        &self,
        handle: v8::IsolateHandle,
        cpu_start: Duration,
        cpu_budget: Duration,
        wall_deadline: Instant,
    ) {
        let mut state = lock(&self.shared.state);
        let wake_by = (Instant::now() + cpu_budget).min(wall_deadline);
        state.fired = None;
        self.shared.fired.store(false, Ordering::Relaxed);
        state.armed = Some(Armed {
            handle,
            cpu_start,
            cpu_budget,
            wall_deadline,
        });
        if state.planned.is_none_or(|planned| planned > wake_by) {
            self.shared.wake.notify_one();
        }
    }

    /// Whether the watchdog terminated the current turn (native work
    /// checks it through a [`Tripwire`]; this, the tests).
    #[cfg(test)]
    pub(crate) fn has_fired(&self) -> bool {
        self.shared.fired.load(Ordering::Relaxed)
    }

    /// For native work on the engine thread that asks whether to stop
    /// through a [`Tripwire`] (key and prime generation's `Stop`).
    pub(crate) fn tripwire(&self) -> Tripwire {
        Tripwire(self.shared.clone())
    }

    /// Disarms; returns why it terminated the turn, if it did.
    pub(crate) fn disarm(&self) -> Option<TerminationReason> {
        let mut state = lock(&self.shared.state);
        state.armed = None;
        state.fired.take()
    }
}

/// The watchdog as native work on the engine thread sees it: whether it
/// has fired, and a way to fire it. Work that finds by its own clock that
/// the turn's CPU budget is spent before the watchdog has looked (its
/// thread can wake late on a loaded machine) fires it, so the turn ends as
/// `CpuLimit`, as the watchdog would end it, not as the error the stopped
/// work returns. Never panics (AWS-LC asks through C frames).
pub struct Tripwire(Arc<Shared>);

impl Tripwire {
    /// Whether the watchdog terminated the current turn: native work on
    /// the isolate's thread (a long digest) checks it between steps.
    pub fn has_fired(&self) -> bool {
        self.0.fired.load(Ordering::Relaxed)
    }

    /// Terminates the armed turn for `reason`, if one is armed and not yet
    /// terminated; after `disarm`, does nothing.
    pub(crate) fn fire(&self, reason: TerminationReason) {
        let mut state = lock(&self.0.state);
        fire(&self.0, &mut state, reason);
    }
}

/// Under the state's lock: once `disarm` returns, no termination for that
/// turn can still arrive.
fn fire(shared: &Shared, state: &mut State, reason: TerminationReason) {
    if let Some(armed) = state.armed.take() {
        armed.handle.terminate_execution();
        state.fired = Some(reason);
        shared.fired.store(true, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        lock(&self.shared.state).shutdown = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Poisoning cannot leave `State` inconsistent (every update is one
/// assignment), so a poisoned lock is simply taken over.
fn lock(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn run(shared: &Shared, clock: CpuClock) {
    let mut state = lock(&shared.state);
    loop {
        if state.shutdown {
            return;
        }
        let next = match state.armed.as_ref().map(|armed| armed.check(clock)) {
            None => None,
            Some(Ok(next)) => Some(next),
            Some(Err(reason)) => {
                fire(shared, &mut state, reason);
                None
            }
        };
        state.planned = next;
        state = match next {
            None => shared.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some(at) => {
                let timeout = at
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_micros(100));
                shared
                    .wake
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed(watchdog: &Watchdog, isolate: &v8::OwnedIsolate, budget: Duration) {
        let clock = CpuClock::current_thread().expect("the thread's CPU clock");
        let far = Instant::now() + Duration::from_secs(3600);
        watchdog.arm(isolate.thread_safe_handle(), clock.now(), budget, far);
    }

    fn setup() -> (Watchdog, v8::OwnedIsolate) {
        crate::platform::init();
        let isolate = v8::Isolate::new(v8::CreateParams::default());
        let clock = CpuClock::current_thread().expect("the thread's CPU clock");
        (Watchdog::start(0, clock).expect("watchdog thread"), isolate)
    }

    /// Native work that finds the budget spent before the watchdog has
    /// looked fires it: the turn is reported as the CPU limit.
    #[test]
    fn a_tripwire_fired_by_native_work_ends_the_turn_as_the_cpu_limit() {
        let (watchdog, isolate) = setup();
        armed(&watchdog, &isolate, Duration::from_secs(3600));
        let tripwire = watchdog.tripwire();
        assert!(!tripwire.has_fired());
        tripwire.fire(TerminationReason::CpuLimit);
        assert!(tripwire.has_fired() && watchdog.has_fired());
        assert_eq!(watchdog.disarm(), Some(TerminationReason::CpuLimit));
        // A second fire within the same turn changes nothing.
        tripwire.fire(TerminationReason::WallTimeout);
        assert_eq!(watchdog.disarm(), None);
    }

    /// After `disarm`, a late fire reaches no turn: the next turn starts clean.
    #[test]
    fn a_tripwire_fired_after_disarm_reaches_no_turn() {
        let (watchdog, isolate) = setup();
        armed(&watchdog, &isolate, Duration::from_secs(3600));
        assert_eq!(watchdog.disarm(), None);
        watchdog.tripwire().fire(TerminationReason::CpuLimit);
        assert!(!watchdog.has_fired());
        assert_eq!(watchdog.disarm(), None);
    }

    /// The `Stop` of synchronous key generation: past its budget it says
    /// stop and fires the watchdog, before the watchdog's own thread looks.
    #[test]
    fn an_on_thread_stop_past_its_budget_fires_the_watchdog() {
        use crate::watchdog::Stop;
        let (watchdog, isolate) = setup();
        armed(&watchdog, &isolate, Duration::from_secs(3600));
        let within = Stop::on_thread(watchdog.tripwire(), Duration::from_secs(3600));
        assert!(!within.now());
        assert!(!watchdog.has_fired());
        let spent = Stop::on_thread(watchdog.tripwire(), Duration::ZERO);
        let clock = CpuClock::current_thread().expect("the thread's CPU clock");
        let start = clock.now();
        while clock.now() == start {
            std::hint::spin_loop();
        }
        assert!(spent.now());
        assert!(
            within.now(),
            "a fired watchdog stops every stop of the turn"
        );
        assert_eq!(watchdog.disarm(), Some(TerminationReason::CpuLimit));
    }
}
