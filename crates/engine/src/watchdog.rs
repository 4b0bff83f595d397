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

pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Set with `State::fired`, readable without the lock: long native calls
    /// (`has_fired`) poll it between steps, since V8's termination only
    /// takes effect once control returns to JavaScript; shared with native
    /// work that polls it off the V8 API (`fired_flag`).
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

    /// Whether the watchdog terminated the current turn: a host function
    /// doing long native work checks this between steps and stops.
    pub(crate) fn has_fired(&self) -> bool {
        self.shared.fired.load(Ordering::Relaxed)
    }

    /// The flag `has_fired` reads, for native work on the engine thread that
    /// asks it through a plain flag (RSA key generation's `Stop`).
    pub(crate) fn fired_flag(&self) -> Arc<AtomicBool> {
        self.shared.fired.clone()
    }

    /// Disarms; returns why it terminated the turn, if it did.
    pub(crate) fn disarm(&self) -> Option<TerminationReason> {
        let mut state = lock(&self.shared.state);
        state.armed = None;
        state.fired.take()
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
        let next = match &state.armed {
            None => None,
            Some(armed) => match armed.check(clock) {
                Ok(next) => Some(next),
                Err(reason) => {
                    // Under the lock: once `disarm` returns, no termination
                    // for that turn can still arrive.
                    armed.handle.terminate_execution();
                    state.fired = Some(reason);
                    shared.fired.store(true, Ordering::Relaxed);
                    state.armed = None;
                    None
                }
            },
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
