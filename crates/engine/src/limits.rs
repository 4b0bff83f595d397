//! Enforcing memory limits, and measuring thread CPU time for CPU limits.
//!
//! - CPU: each turn's CPU time is read from `CLOCK_THREAD_CPUTIME_ID` before
//!   and after it and charged to the request; the thread's watchdog
//!   (`watchdog.rs`) reads the same clock from outside, through the engine
//!   thread's CPU clock id, and terminates a turn that exceeds what is left.
//! - Memory: every isolate is made with a hard heap limit
//!   (`CreateParams::heap_limits`) and a near-heap-limit callback that, instead
//!   of letting V8 abort the process, raises the limit a little (room to
//!   unwind), terminates execution and marks the isolate to be discarded.

use std::cell::Cell;
use std::ffi::c_void;
use std::time::Duration;

/// Extra heap granted when the limit is reached, so termination can unwind.
const HEAP_GRACE_MIN: usize = 16 << 20;

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

/// State shared with V8's near-heap-limit callback for one isolate.
///
/// Lifetime: boxed and owned by the `WorkerIsolate`, which disposes its V8
/// isolate before dropping this box, so the raw pointer V8 holds stays valid
/// for every call. The callback runs on the isolate's own thread (during a
/// GC), hence `Cell`.
pub(crate) struct HeapGuard {
    hit: Cell<bool>,
    handle: v8::IsolateHandle,
}

impl HeapGuard {
    pub(crate) fn new(handle: v8::IsolateHandle) -> Box<Self> {
        Box::new(Self {
            hit: Cell::new(false),
            handle,
        })
    }

    /// Whether the heap limit was reached since the last call.
    pub(crate) fn take_hit(&self) -> bool {
        self.hit.replace(false)
    }

    /// Registers the callback on `isolate`. Call it on the boxed guard, whose
    /// address is stable.
    pub(crate) fn install(&self, isolate: &mut v8::Isolate) {
        let data = std::ptr::from_ref::<HeapGuard>(self)
            .cast_mut()
            .cast::<c_void>();
        isolate.add_near_heap_limit_callback(near_heap_limit, data);
    }

    /// Sets the isolate's heap limit to `limit` (see
    /// `WorkerIsolate::lower_heap_limit`) and keeps the callback installed.
    pub(crate) fn reinstall(&self, isolate: &mut v8::Isolate, limit: usize) {
        isolate.remove_near_heap_limit_callback(near_heap_limit, limit);
        self.install(isolate);
    }
}

/// Never aborts: grants a little more heap, terminates, flags the isolate.
unsafe extern "C" fn near_heap_limit(data: *mut c_void, current: usize, _initial: usize) -> usize {
    // SAFETY: `data` is the `HeapGuard` registered in `install`, alive for as
    // long as the isolate (see `HeapGuard`'s lifetime note); it is only used on
    // the isolate's thread.
    let guard = unsafe { &*data.cast::<HeapGuard>() };
    guard.hit.set(true);
    guard.handle.terminate_execution();
    current + (current / 4).max(HEAP_GRACE_MIN)
}
