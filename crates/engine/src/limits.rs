//! Measuring thread CPU time for CPU limits: each turn's CPU time is read
//! from `CLOCK_THREAD_CPUTIME_ID` before and after it and charged to the
//! request; the thread's watchdog (`watchdog.rs`) reads the same clock from
//! outside, through the engine thread's CPU clock id, and terminates a turn
//! that exceeds what is left. Memory limits are `memory.rs`.

use std::time::Duration;

/// The CPU clock of one thread, readable from any thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuClock(libc::clockid_t);

impl CpuClock {
    /// The clock of the calling thread.
    pub(crate) fn current_thread() -> Option<Self> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `pthread_self()` is always a valid thread handle for the
        // caller, and `clock` is a valid out-pointer for the call's duration.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        (rc == 0).then_some(Self(clock))
    }

    /// CPU time consumed so far by the clock's thread.
    pub(crate) fn now(&self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer; an invalid clock id (thread
        // gone) makes the call fail, which we map to zero.
        let rc = unsafe { libc::clock_gettime(self.0, &mut ts) };
        if rc != 0 {
            return Duration::ZERO;
        }
        Duration::new(
            ts.tv_sec.max(0) as u64,
            ts.tv_nsec.clamp(0, 999_999_999) as u32,
        )
    }
}

/// CPU time of the calling thread (cheap enough to read around every turn).
pub(crate) fn thread_cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}
