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
//!   at the heap limit; one V8 asked its allocator for is refused without
//!   stopping anything until V8 has collected garbage three times since
//!   (it asks again after each), so the dead buffers in the way are freed
//!   first ([`COLLECTIONS_BEFORE_FINAL`]).
//!
//! - memory V8 takes without asking the allocator (a resizable
//!   ArrayBuffer commits pages from its own reservation as it grows, and
//!   V8 makes such buffers for the `ArrayBuffer` constructor however a
//!   worker reaches it, for `structuredClone` and for `transfer`): V8
//!   counts it in its own external-memory figure, so whatever that figure
//!   holds beyond what the allocator and the host charged is counted too
//!   ([`Memory::measure_external`]): after every turn, after every garbage
//!   collection (growing such a buffer makes V8 collect) and on every
//!   allocator call. Over the limit the turn is terminated like at the heap
//!   limit.
//!
//! Reservations (address space, not memory) are bounded apart
//! ([`Memory::reserve`]): each resizable buffer's `maxByteLength`, rounded
//! up to pages and at least [`MIN_RESERVATION`], for the life of the
//! isolate, at most the limit in all.
//!
//! The pool's heap budget, its eviction and the thread's memory gauge use
//! [`Memory::used`] (heap + off-heap), so they count what the limit counts.
//!
//! Threads: V8 may free backing stores from its own background threads, so
//! the counters are atomics. The array-buffer sweeper runs on the engine
//! thread (`platform::FLAGS`): V8 takes the buffers it frees off its
//! external-memory figure as it frees them, so `measure_external` never
//! sees them freed here and still counted there. `Memory` is shared by
//! `Arc` between the isolate, its allocator (which V8 keeps alive for as long
//! as any backing store made with it) and the host.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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

/// The least a resizable ArrayBuffer's reservation is charged: each is a
/// mapping of its own, and a process has a bounded number of them
/// (`vm.max_map_count`, 65530 by default), so a worker making empty ones by
/// the thousand must reach its limit long before the process runs out.
pub(crate) const MIN_RESERVATION: usize = 64 << 10;

/// Collections V8 makes between refusing an allocation of its allocator and
/// giving up on it: when the allocator refuses a backing store, V8 collects
/// garbage and asks again, twice, then collects all it can and asks a last
/// time (`Heap::AllocateExternalBackingStore`). A refusal after this many
/// collections is final and stops the isolate; earlier ones let V8 free the
/// dead buffers that are in the way (a Worker that makes and drops 1 MiB
/// chunks holds little, but each is charged until collected).
const COLLECTIONS_BEFORE_FINAL: u32 = 3;

/// `Memory::refused`'s value when no allocation is waiting on a collection.
const NOT_REFUSED: u32 = u32::MAX;

/// The memory of one isolate.
pub struct Memory {
    /// `memory_mib` in bytes; lowered once for a spare given to a worker.
    limit: AtomicUsize,
    /// Bytes of live off-heap allocations charged to this isolate.
    external: AtomicUsize,
    /// The part of `external` that V8 also counts in its external memory
    /// (allocator allocations and host-made backing stores).
    in_v8: AtomicUsize,
    /// What V8's external memory held beyond `in_v8` when last measured:
    /// memory V8 took without the allocator (resizable buffers' pages).
    untracked: AtomicUsize,
    /// Address space reserved for resizable buffers (`reserve`).
    reserved: AtomicUsize,
    /// JS heap in use when it was last measured (`note_heap`).
    heap: AtomicUsize,
    /// A limit was hit since the last `take_hit`.
    hit: AtomicBool,
    /// The engine thread's CPU time (ns) when the limit was first hit, 0 if
    /// not since the last `take_hit_cpu`: how long a builtin ran on past the
    /// limit decides its penalty (`schedule.rs`).
    hit_cpu_ns: AtomicU64,
    /// Collections since the allocator refused V8 an allocation that V8
    /// may ask for again ([`COLLECTIONS_BEFORE_FINAL`]), or [`NOT_REFUSED`].
    refused: AtomicU32,
    /// Set once the isolate exists (the allocator is made before it).
    handle: OnceLock<v8::IsolateHandle>,
    /// The isolate itself, for reading V8's external memory from the
    /// allocator (`measure_external`); null until `attach`, and again once
    /// the isolate is being disposed (`detach`).
    isolate: AtomicPtr<c_void>,
}

/// An off-heap allocation the budget refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit;

// === impl Memory ===

impl Memory {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: AtomicUsize::new(limit),
            external: AtomicUsize::new(0),
            in_v8: AtomicUsize::new(0),
            untracked: AtomicUsize::new(0),
            reserved: AtomicUsize::new(0),
            heap: AtomicUsize::new(0),
            hit: AtomicBool::new(false),
            hit_cpu_ns: AtomicU64::new(0),
            refused: AtomicU32::new(NOT_REFUSED),
            handle: OnceLock::new(),
            isolate: AtomicPtr::new(std::ptr::null_mut()),
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

    /// Called once the isolate exists: lets a refusal stop its JavaScript
    /// and the allocator read V8's external memory.
    pub(crate) fn attach(&self, isolate: &mut v8::Isolate) {
        let _ = self.handle.set(isolate.thread_safe_handle());
        // SAFETY: only the address is kept; it is dereferenced (in
        // `measure_external`) while the isolate lives, until `detach`.
        // `UnsafeRawIsolatePtr` is a `repr(transparent)` raw pointer.
        let raw = unsafe {
            std::mem::transmute::<v8::UnsafeRawIsolatePtr, *mut c_void>(
                isolate.as_raw_isolate_ptr(),
            )
        };
        self.isolate.store(raw, Ordering::Release);
    }

    /// Called before the isolate is disposed: the allocator (which V8 keeps
    /// for as long as a backing store lives) stops reading from it.
    pub(crate) fn detach(&self) {
        self.isolate.store(std::ptr::null_mut(), Ordering::Release);
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

    /// Heap (as last measured) plus off-heap bytes, V8's own included.
    pub(crate) fn used(&self) -> usize {
        self.heap
            .load(Ordering::Relaxed)
            .saturating_add(self.external())
            .saturating_add(self.untracked.load(Ordering::Relaxed))
    }

    /// Reads V8's external memory now (through the attached isolate, on the
    /// thread that runs it), keeps what it holds beyond the charged bytes,
    /// and stops the isolate's JavaScript when that takes it past its limit.
    /// Whether it is within the limit.
    pub(crate) fn measure_external(&self) -> bool {
        let isolate = self.isolate.load(Ordering::Acquire);
        if isolate.is_null() {
            return true;
        }
        // SAFETY: `isolate` was stored by `attach` from a live isolate and is
        // cleared by `detach` before that isolate is disposed; V8 calls the
        // allocator and GC callbacks on the thread that runs the isolate,
        // where nothing else uses it at the same moment. Adjusting by 0 only
        // reads V8's counter (`Heap::UpdateExternalMemory` returns at once).
        let total = unsafe {
            let mut raw = std::mem::transmute::<*mut c_void, v8::UnsafeRawIsolatePtr>(isolate);
            v8::Isolate::ref_from_raw_isolate_ptr_mut_unchecked(&mut raw)
                .adjust_amount_of_external_allocated_memory(0)
        };
        self.note_external(usize::try_from(total).unwrap_or(0))
    }

    /// Records V8's external memory figure `total`: see `measure_external`.
    fn note_external(&self, total: usize) -> bool {
        let untracked = total.saturating_sub(self.in_v8.load(Ordering::Relaxed));
        self.untracked.store(untracked, Ordering::Relaxed);
        if self.used() > self.limit() {
            self.limit_hit();
            return false;
        }
        true
    }

    /// Charges a resizable buffer's reservation of `len` bytes (rounded up
    /// to pages, at least [`MIN_RESERVATION`]) for the life of the isolate,
    /// or refuses it (and stops the isolate's JavaScript) when the isolate's
    /// reservations would pass its limit.
    pub(crate) fn reserve(&self, len: usize) -> Result<(), OverLimit> {
        let len = len
            .checked_next_multiple_of(4096)
            .unwrap_or(usize::MAX)
            .max(MIN_RESERVATION);
        let limit = self.limit();
        let granted = self
            .reserved
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                v.checked_add(len).filter(|&next| next <= limit)
            });
        granted.map(|_| ()).map_err(|_| {
            self.limit_hit();
            OverLimit
        })
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
        self.try_charge(len).inspect_err(|_| self.limit_hit())
    }

    /// Charges `len` off-heap bytes if they fit; stops nothing.
    fn try_charge(&self, len: usize) -> Result<(), OverLimit> {
        let limit = self.limit();
        let heap = self
            .heap
            .load(Ordering::Relaxed)
            .saturating_add(self.untracked.load(Ordering::Relaxed));
        let mut current = self.external.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(len);
            if next.saturating_add(heap) > limit {
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

    /// Whether `len` more bytes would fit now, as `charge` counts; charges
    /// nothing and stops nothing.
    pub fn would_fit(&self, len: usize) -> bool {
        let used = self.used().saturating_add(len);
        used <= self.limit()
    }

    /// A C++ allocation of `len` bytes that V8 makes while this isolate's
    /// JavaScript runs (`native_alloc.rs`): past what is left of the limit,
    /// the turn is stopped there. Nothing is charged: V8 frees it itself,
    /// and refusing it would abort the process.
    pub(crate) fn native_over(&self, len: usize) {
        if !self.would_fit(len) {
            self.limit_hit();
        }
    }

    /// Charges `len` bytes that V8 will count in its external memory too.
    fn charge_in_v8(&self, len: usize) -> Result<(), OverLimit> {
        self.charge(len)?;
        self.in_v8.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    /// Charges an allocation V8 asked its allocator for. Past the limit it
    /// is refused; the isolate is stopped only once V8 has collected
    /// [`COLLECTIONS_BEFORE_FINAL`] times since the first refusal (V8 asks
    /// again after collecting), so dead buffers are freed before a live
    /// Worker is stopped for them.
    fn charge_allocation(&self, len: usize) -> Result<(), OverLimit> {
        if self.try_charge(len).is_ok() {
            self.refused.store(NOT_REFUSED, Ordering::Relaxed);
            self.in_v8.fetch_add(len, Ordering::Relaxed);
            return Ok(());
        }
        match self.refused.load(Ordering::Relaxed) {
            NOT_REFUSED => self.refused.store(0, Ordering::Relaxed),
            collections if collections >= COLLECTIONS_BEFORE_FINAL => {
                self.refused.store(NOT_REFUSED, Ordering::Relaxed);
                self.limit_hit();
            }
            _ => {}
        }
        Err(OverLimit)
    }

    /// A collection ended: counted for an allocation waiting on one.
    fn collected(&self) {
        let _ = self
            .refused
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n != NOT_REFUSED).then(|| n.saturating_add(1).min(NOT_REFUSED - 1))
            });
    }

    /// Gives back `len` bytes charged by `charge_in_v8` or `charge_allocation`.
    fn release_in_v8(&self, len: usize) {
        let _ = self
            .in_v8
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(len))
            });
        self.release(len);
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

    /// Registers the GC epilogue callback that measures V8's external memory
    /// after every collection (`measure_external`), with `self` as its data,
    /// kept alive like for `install_heap_callback`.
    pub(crate) fn install_gc_callback(&self, isolate: &mut v8::Isolate) {
        let data = std::ptr::from_ref::<Memory>(self)
            .cast_mut()
            .cast::<c_void>();
        isolate.add_gc_epilogue_callback(after_gc, data, v8::GCType::kGCTypeAll);
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
        self.charge_in_v8(len)?;
        let owned = Box::new(OwnedBytes {
            bytes,
            memory: self.clone(),
            in_v8: true,
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
    pub fn charged_bytes(self: &Arc<Self>, bytes: Vec<u8>) -> Result<Bytes, OverLimit> {
        self.charge(bytes.len())?;
        Ok(Bytes::from_owner(OwnedBytes {
            bytes,
            memory: self.clone(),
            in_v8: false,
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
        if self.in_v8 {
            self.memory.release_in_v8(self.bytes.len());
        } else {
            self.memory.release(self.bytes.len());
        }
    }
}

/// Host-made bytes and the budget they are charged to (released on drop).
struct OwnedBytes {
    bytes: Vec<u8>,
    memory: Arc<Memory>,
    /// Made into a backing store: V8 counts it in its external memory.
    in_v8: bool,
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

/// After a collection: memory V8 took without the allocator is counted.
unsafe extern "C" fn after_gc(
    _isolate: v8::UnsafeRawIsolatePtr,
    _type: v8::GCType,
    _flags: v8::GCCallbackFlags,
    data: *mut c_void,
) {
    // SAFETY: `data` is the `Memory` registered in `install_gc_callback`,
    // kept alive by the isolate's owner until the isolate is disposed.
    let memory = unsafe { &*data.cast::<Memory>() };
    memory.collected();
    memory.measure_external();
}

// === the ArrayBuffer allocator ===

static ALLOCATOR: v8::RustAllocatorVtable<Memory> = v8::RustAllocatorVtable {
    allocate,
    allocate_uninitialized,
    free,
    drop: drop_allocator,
};

unsafe extern "C" fn allocate(memory: &Memory, len: usize) -> *mut c_void {
    if !memory.measure_external() || memory.charge_allocation(len).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: plain C allocation; at least one byte so that a zero-length
    // buffer still gets a unique, freeable pointer.
    let ptr = unsafe { libc::calloc(len.max(1), 1) };
    if ptr.is_null() {
        memory.release_in_v8(len);
    }
    ptr
}

unsafe extern "C" fn allocate_uninitialized(memory: &Memory, len: usize) -> *mut c_void {
    if !memory.measure_external() || memory.charge_allocation(len).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: as in `allocate`; V8 initialises the bytes itself.
    let ptr = unsafe { libc::malloc(len.max(1)) };
    if ptr.is_null() {
        memory.release_in_v8(len);
    }
    ptr
}

unsafe extern "C" fn free(memory: &Memory, data: *mut c_void, len: usize) {
    // SAFETY: `data` came from `allocate`/`allocate_uninitialized` (V8 frees
    // only what this allocator gave it), with the same `len`.
    unsafe { libc::free(data) };
    memory.release_in_v8(len);
}

unsafe extern "C" fn drop_allocator(memory: *const Memory) {
    // SAFETY: the strong reference leaked in `Memory::allocator`, given back
    // once by V8 when the allocator is destroyed.
    drop(unsafe { Arc::from_raw(memory) });
}

/// Off-heap bytes charged to a worker's budget until dropped (host work
/// that holds a copy outside V8: a form body being parsed, a KV value on
/// its way to or from the store). `Send`: it may be dropped on another
/// thread.
pub struct Reservation {
    memory: Arc<Memory>,
    len: usize,
}

impl Reservation {
    /// Charges `len` bytes, or refuses them (the isolate is then being
    /// terminated at its memory limit).
    pub fn new(memory: &Arc<Memory>, len: usize) -> Result<Self, OverLimit> {
        memory.charge(len)?;
        Ok(Self {
            memory: memory.clone(),
            len,
        })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.memory.release(self.len);
    }
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
