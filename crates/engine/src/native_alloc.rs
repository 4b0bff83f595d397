//! V8's own C++ allocations, held to the running Worker's memory limit.
//!
//! Some builtins build their result in memory V8 takes with C++ `new`, off
//! the JS heap and outside the `ArrayBuffer` allocator, and copy it onto the
//! heap only at the end: `JSON.stringify` (since V8 13.8) grows one buffer
//! by doubling until the whole text fits. Neither the heap limit nor the
//! allocator sees that buffer, so a Worker could take the process hundreds
//! of MiB past its limit (260 references to one 1 MiB string), and run on
//! past `kMaxLength` for seconds.
//!
//! The static V8 library defines `operator new` and `operator new[]` as weak
//! symbols (libc++'s `new.cpp`), so the process's definitions here replace
//! them: plain `malloc`, as libc++'s are (its `operator delete` frees with
//! `free`). An allocation of [`WATCHED`] bytes or more made on a thread
//! while it runs a Worker's turn ([`Watch`]) is compared with what is left
//! of that Worker's limit; one that does not fit terminates the turn at the
//! limit (`Memory::native_over`). The allocation itself is still made (a
//! C++ allocation cannot fail here without aborting the process), and V8
//! stops at its next interrupt check: the stringifier checks before every
//! value it writes. A doubling buffer is stopped at the first size past
//! what is left, so it holds at most twice the limit, once.
//!
//! Other threads (V8's compiler and collector), allocations outside a turn
//! and smaller ones take the plain path: one comparison more than `malloc`.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;

use crate::memory::Memory;

/// The smallest C++ allocation compared with the running Worker's limit.
/// Below it, V8's own bookkeeping (vectors, small arrays) is not looked at;
/// a buffer that doubles passes it long before it matters.
pub(crate) const WATCHED: usize = 1 << 20;

thread_local! {
    /// The memory of the Worker whose turn this thread runs, or null.
    static RUNNING: Cell<*const Memory> = const { Cell::new(std::ptr::null()) };
}

/// While alive, this thread's large C++ allocations are held to `memory`'s
/// limit. Nested watches restore the outer one when dropped.
pub(crate) struct Watch<'a> {
    previous: *const Memory,
    _memory: PhantomData<&'a Memory>,
}

impl<'a> Watch<'a> {
    pub(crate) fn new(memory: &'a Memory) -> Self {
        let previous = RUNNING.with(|running| running.replace(std::ptr::from_ref(memory)));
        Watch {
            previous,
            _memory: PhantomData,
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        RUNNING.with(|running| running.set(self.previous));
    }
}

/// Compares a large allocation with the running Worker's limit.
#[cold]
fn watch(len: usize) {
    // `try_with`: C++ may allocate while this thread's locals are being
    // torn down; nothing is running then.
    let Ok(memory) = RUNNING.try_with(Cell::get) else {
        return;
    };
    if memory.is_null() {
        return;
    }
    // SAFETY: set by a live `Watch`, which borrows the `Memory` for as long
    // as the pointer is installed; only this thread reads it.
    unsafe { &*memory }.native_over(len);
}

/// `malloc` as libc++'s `operator new` does it (its `operator delete` frees
/// with `free`), after the limit's check; a failed allocation aborts, as
/// `operator new` does without exceptions.
fn allocate(len: usize) -> *mut c_void {
    if len >= WATCHED {
        watch(len);
    }
    // SAFETY: plain C allocation; at least one byte, so that `new T[0]`
    // still gets a unique, freeable pointer.
    let ptr = unsafe { libc::malloc(len.max(1)) };
    if ptr.is_null() {
        std::process::abort();
    }
    ptr
}

/// `operator new(std::size_t)`.
///
/// # Safety
/// Called by C++ code only; the pointer is released with `operator delete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Znwm(len: usize) -> *mut c_void {
    allocate(len)
}

/// `operator new[](std::size_t)`.
///
/// # Safety
/// Called by C++ code only; the pointer is released with `operator delete[]`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Znam(len: usize) -> *mut c_void {
    allocate(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_allocation_past_what_is_left_marks_the_limit() {
        let memory = Memory::new(8 << 20);
        memory.note_heap(4 << 20);
        {
            let _watch = Watch::new(&memory);
            watch(WATCHED);
            assert!(!memory.take_hit(), "1 MiB fits in what is left");
            watch(5 << 20);
            assert!(memory.take_hit(), "5 MiB does not");
        }
        watch(64 << 20);
        assert!(!memory.take_hit(), "nothing is watched outside a turn");
    }

    #[test]
    fn nested_watches_restore_the_outer_one() {
        let outer = Memory::new(64 << 20);
        let inner = Memory::new(1 << 20);
        let _outer = Watch::new(&outer);
        {
            let _inner = Watch::new(&inner);
            watch(2 << 20);
            assert!(inner.take_hit());
        }
        watch(2 << 20);
        assert!(!outer.take_hit());
        assert!(!inner.take_hit());
    }
}
