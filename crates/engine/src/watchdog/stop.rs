//! [`Stop`]: when blocking work done for a request (a key generation, on
//! the isolate's thread or offloaded) must stop — its request or turn is
//! over, or its CPU budget is spent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Tripwire;
use crate::limits::thread_cpu_now;
use crate::observer::TerminationReason;

/// When an offloaded job must stop: its request is gone, or the job has
/// used the CPU time its request had left when it started. Asked from the
/// job's own thread; cheap (an atomic load and a thread CPU clock read) and
/// never panics (AWS-LC calls it through C frames).
pub struct Stop {
    gone: Gone,
    start: Duration,
    budget: Duration,
}

/// What tells a job its turn or request is over, besides its budget.
enum Gone {
    /// An offloaded job's request ended.
    Request(Arc<AtomicBool>),
    /// The isolate's thread's watchdog: fired, or fired by the job itself
    /// when its budget runs out first, so the turn ends as `CpuLimit`.
    Turn(Tripwire),
}

impl Stop {
    /// Starts counting now, on the job's thread.
    fn new(gone: Gone, budget: Duration) -> Self {
        Self {
            gone,
            start: thread_cpu_now(),
            budget,
        }
    }

    /// The CPU time this thread has spent since the stop was made.
    pub fn spent(&self) -> Duration {
        thread_cpu_now().saturating_sub(self.start)
    }

    /// Whether the job should stop now.
    pub fn now(&self) -> bool {
        let gone = match &self.gone {
            Gone::Request(gone) => gone.load(Ordering::Relaxed),
            Gone::Turn(tripwire) => tripwire.has_fired(),
        };
        if gone {
            return true;
        }
        let spent = thread_cpu_now().saturating_sub(self.start) > self.budget;
        if spent && let Gone::Turn(tripwire) = &self.gone {
            tripwire.fire(TerminationReason::CpuLimit);
        }
        spent
    }

    /// A stop for work on the isolate's own thread (a synchronous call):
    /// when the watchdog has terminated the turn or `budget` of this
    /// thread's CPU time has gone (then it terminates the turn itself, for
    /// the CPU limit, through `tripwire`).
    pub fn on_thread(tripwire: Tripwire, budget: Duration) -> Self {
        Self::new(Gone::Turn(tripwire), budget)
    }

    /// A stop for an offloaded job: when `gone` is set (its request
    /// ended) or after `budget` of the job's thread's CPU time.
    pub fn for_request(gone: Arc<AtomicBool>, budget: Duration) -> Self {
        Self::new(Gone::Request(gone), budget)
    }
}
