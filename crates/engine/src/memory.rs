//! [`Memory`]: everything a worker's isolate holds, counted against one
//! number, `limits.memory_mib`.
//!
//! Two parts, one budget:
//! - the JS heap, bounded by V8 itself (`CreateParams::heap_limits`), with a
//!   near-heap-limit callback that, instead of letting V8 abort the process,
//!   grants room to unwind, terminates execution and marks the isolate to be
//!   discarded;
//! - everything off the heap: ArrayBuffer backing stores (typed arrays,
//!   `TextEncoder` output, Blobs, bodies read whole, chunks handed to the
//!   worker by the host), made through this isolate's own
//!   `ArrayBuffer::Allocator` or charged here by the host. An allocation
//!   that would take off-heap bytes plus the last measured heap past the
//!   limit is refused, and the isolate is terminated and discarded just like
//!   at the heap limit.
//!
//! The pool's heap budget, its eviction and the thread's memory gauge use
//! [`Memory::used`] (heap + off-heap), so they count what the limit counts.
//!
//! Threads: V8 frees backing stores from its own background threads (the
//! array-buffer sweeper), so the counters are atomics. `Memory` is shared by
//! `Arc` between the isolate, its allocator (which V8 keeps alive for as long
//! as any backing store made with it) and the host.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;

/// Heap granted past the limit when V8 reaches it, so that the termination
/// can unwind. It must cover the largest single allocation that V8 makes in
/// one step without checking for termination (a fixed array or string of the
/// maximum length is ~1 GiB in this build), or V8 aborts the whole process
/// with "Reached heap limit". The grant is address space V8 may use, not
/// memory it takes: only an allocation that large uses it, once, before the
/// isolate is discarded.
const HEAP_GRACE: usize = 2 << 30;

/// The memory of one isolate.
pub(crate) struct Memory {
    /// `memory_mib` in bytes; lowered once for a spare given to a worker.
    limit: AtomicUsize,
    /// Bytes of live off-heap allocations charged to this isolate.
    external: AtomicUsize,
    /// JS heap in use when it was last measured (`note_heap`).
    heap: AtomicUsize,
    /// A limit was hit since the last `take_hit`.
    hit: AtomicBool,
    /// The engine thread's CPU time (ns) when the limit was first hit, 0 if
    /// not since the last `take_hit_cpu`: how long a builtin ran on past the
    /// limit decides quarantine (`quarantine.rs`).
    hit_cpu_ns: AtomicU64,
    /// Set once the isolate exists (the allocator is made before it).
    handle: OnceLock<v8::IsolateHandle>,
}

/// An off-heap allocation the budget refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverLimit;

// === impl Memory ===

impl Memory {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: AtomicUsize::new(limit),
            external: AtomicUsize::new(0),
            heap: AtomicUsize::new(0),
            hit: AtomicBool::new(false),
            hit_cpu_ns: AtomicU64::new(0),
            handle: OnceLock::new(),
        })
    }

    /// An `ArrayBuffer::Allocator` that charges this budget; for
    /// `CreateParams::array_buffer_allocator`.
    pub(crate) fn allocator(self: &Arc<Self>) -> v8::UniqueRef<v8::Allocator> {
        let handle = Arc::into_raw(self.clone());
        // SAFETY: `handle` is a strong reference that the vtable's `drop`
        // gives back (V8 calls it once, when the last user of the allocator,
        // isolate or backing store, is gone); every other entry only borrows
        // it. `Memory` is `Send + Sync`, as V8 may call from any thread.
        unsafe { v8::new_rust_allocator(handle, &ALLOCATOR) }
    }

    /// Called once the isolate exists: lets a refusal stop its JavaScript.
    pub(crate) fn attach(&self, handle: v8::IsolateHandle) {
        let _ = self.handle.set(handle);
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Off-heap bytes live now.
    pub(crate) fn external(&self) -> usize {
        self.external.load(Ordering::Relaxed)
    }

    /// Records the JS heap in use, as just measured.
    pub(crate) fn note_heap(&self, used: usize) {
        self.heap.store(used, Ordering::Relaxed);
    }

    /// Heap (as last measured) plus off-heap bytes.
    pub(crate) fn used(&self) -> usize {
        self.heap
            .load(Ordering::Relaxed)
            .saturating_add(self.external())
    }

    /// Whether a limit was hit since the last call.
    pub(crate) fn take_hit(&self) -> bool {
        self.hit.swap(false, Ordering::Relaxed)
    }

    /// The thread CPU time at which a limit was first hit since the last
    /// call, if one was.
    pub(crate) fn take_hit_cpu(&self) -> Option<Duration> {
        let ns = self.hit_cpu_ns.swap(0, Ordering::Relaxed);
        (ns != 0).then(|| Duration::from_nanos(ns))
    }

    /// Charges `len` off-heap bytes, or refuses them (and stops the isolate's
    /// JavaScript) when they would take it past its limit.
    pub(crate) fn charge(&self, len: usize) -> Result<(), OverLimit> {
        let limit = self.limit();
        let heap = self.heap.load(Ordering::Relaxed);
        let mut current = self.external.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(len);
            if next.saturating_add(heap) > limit {
                self.limit_hit();
                return Err(OverLimit);
            }
            match self.external.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives back `len` bytes charged earlier.
    pub(crate) fn release(&self, len: usize) {
        let _ = self
            .external
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(len))
            });
    }

    /// Marks the limit hit and terminates the isolate's JavaScript. Safe from
    /// inside V8 (allocator, GC callbacks): `terminate_execution` only sets
    /// an interrupt flag that V8 checks at its next safe point.
    fn limit_hit(&self) {
        self.hit.store(true, Ordering::Relaxed);
        // Runs on the engine thread (V8 allocates and collects garbage for
        // JavaScript there), so this is that thread's clock.
        let now = u64::try_from(crate::limits::thread_cpu_now().as_nanos()).unwrap_or(u64::MAX);
        let _ =
            self.hit_cpu_ns
                .compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed);
        if let Some(handle) = self.handle.get() {
            handle.terminate_execution();
        }
    }

    /// Registers the near-heap-limit callback on `isolate`, with `self` as
    /// its data. The caller keeps an `Arc` of `self` alive until the isolate
    /// is disposed.
    pub(crate) fn install_heap_callback(&self, isolate: &mut v8::Isolate) {
        let data = std::ptr::from_ref::<Memory>(self)
            .cast_mut()
            .cast::<c_void>();
        isolate.add_near_heap_limit_callback(near_heap_limit, data);
    }

    /// Sets the isolate's heap limit to `limit` and keeps the callback
    /// installed (see `WorkerIsolate::lower_heap_limit`).
    pub(crate) fn reinstall_heap_callback(&self, isolate: &mut v8::Isolate, limit: usize) {
        isolate.remove_near_heap_limit_callback(near_heap_limit, limit);
        self.install_heap_callback(isolate);
    }

    /// A backing store that owns `bytes` (no copy), charged to this budget
    /// until V8 frees it. Refused (and the isolate stopped) over the limit.
    pub(crate) fn backing_store(
        self: &Arc<Self>,
        bytes: Vec<u8>,
    ) -> Result<v8::UniqueRef<v8::BackingStore>, OverLimit> {
        let len = bytes.len();
        self.charge(len)?;
        let owned = Box::new(OwnedBytes {
            bytes,
            memory: self.clone(),
        });
        let data = owned.bytes.as_ptr().cast_mut().cast::<c_void>();
        let owner = Box::into_raw(owned).cast::<c_void>();
        // SAFETY: `data` points at `len` bytes owned by the boxed
        // `OwnedBytes`, which nothing else touches until V8 calls
        // `free_owned` (exactly once) with `owner`, which re-boxes and drops
        // it; the Vec's buffer does not move while the Box lives.
        Ok(unsafe { v8::ArrayBuffer::new_backing_store_from_ptr(data, len, free_owned, owner) })
    }
}

/// Bytes the worker handed to the host (a response body or chunk), charged
/// to this budget until the last reference to them is dropped, wherever that
/// is: in a channel, in hyper's or tonic's buffers, waiting for a slow
/// reader. Refused (and the isolate stopped) over the limit.
impl Memory {
    pub(crate) fn charged_bytes(self: &Arc<Self>, bytes: Vec<u8>) -> Result<Bytes, OverLimit> {
        self.charge(bytes.len())?;
        Ok(Bytes::from_owner(OwnedBytes {
            bytes,
            memory: self.clone(),
        }))
    }
}

impl AsRef<[u8]> for OwnedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for OwnedBytes {
    fn drop(&mut self) {
        self.memory.release(self.bytes.len());
    }
}

/// Host-made bytes and the budget they are charged to (released on drop).
struct OwnedBytes {
    bytes: Vec<u8>,
    memory: Arc<Memory>,
}

unsafe extern "C" fn free_owned(_data: *mut c_void, _len: usize, owner: *mut c_void) {
    // SAFETY: `owner` is the `Box<OwnedBytes>` leaked in `backing_store`,
    // freed here once.
    drop(unsafe { Box::from_raw(owner.cast::<OwnedBytes>()) });
}

// === the near-heap-limit callback ===

/// Never aborts: grants room to unwind, terminates, flags the isolate.
unsafe extern "C" fn near_heap_limit(data: *mut c_void, current: usize, _initial: usize) -> usize {
    // SAFETY: `data` is the `Memory` registered in `install_heap_callback`,
    // kept alive by the isolate's owner until the isolate is disposed.
    let memory = unsafe { &*data.cast::<Memory>() };
    memory.limit_hit();
    current.saturating_add(HEAP_GRACE)
}

// === the ArrayBuffer allocator ===

static ALLOCATOR: v8::RustAllocatorVtable<Memory> = v8::RustAllocatorVtable {
    allocate,
    allocate_uninitialized,
    free,
    drop: drop_allocator,
};

unsafe extern "C" fn allocate(memory: &Memory, len: usize) -> *mut c_void {
    if memory.charge(len).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: plain C allocation; at least one byte so that a zero-length
    // buffer still gets a unique, freeable pointer.
    let ptr = unsafe { libc::calloc(len.max(1), 1) };
    if ptr.is_null() {
        memory.release(len);
    }
    ptr
}

unsafe extern "C" fn allocate_uninitialized(memory: &Memory, len: usize) -> *mut c_void {
    if memory.charge(len).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: as in `allocate`; V8 initialises the bytes itself.
    let ptr = unsafe { libc::malloc(len.max(1)) };
    if ptr.is_null() {
        memory.release(len);
    }
    ptr
}

unsafe extern "C" fn free(memory: &Memory, data: *mut c_void, len: usize) {
    // SAFETY: `data` came from `allocate`/`allocate_uninitialized` (V8 frees
    // only what this allocator gave it), with the same `len`.
    unsafe { libc::free(data) };
    memory.release(len);
}

unsafe extern "C" fn drop_allocator(memory: *const Memory) {
    // SAFETY: the strong reference leaked in `Memory::allocator`, given back
    // once by V8 when the allocator is destroyed.
    drop(unsafe { Arc::from_raw(memory) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_count_heap_and_refuse_past_the_limit() {
        let memory = Memory::new(100);
        memory.note_heap(40);
        assert_eq!(memory.charge(50), Ok(()));
        assert_eq!(memory.used(), 90);
        assert_eq!(memory.charge(11), Err(OverLimit));
        assert!(memory.take_hit());
        assert!(!memory.take_hit());
        memory.release(50);
        assert_eq!(memory.external(), 0);
        assert_eq!(memory.charge(60), Ok(()));
    }

    #[test]
    fn a_lower_limit_applies_to_the_next_charge() {
        let memory = Memory::new(100);
        assert_eq!(memory.charge(30), Ok(()));
        memory.set_limit(40);
        assert_eq!(memory.charge(11), Err(OverLimit));
        assert_eq!(memory.charge(10), Ok(()));
    }
}
