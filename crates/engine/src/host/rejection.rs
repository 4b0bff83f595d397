//! Unhandled promise rejections, reported the way browsers and workerd do:
//! a promise rejected with no handler is only noted; it is reported when it
//! still has none after the turn's microtask checkpoint. A handler attached
//! later in the same turn (`const p = Promise.reject(e); await x; p.catch(…)`,
//! or the runtime marking its own promises handled) withdraws the note.
//!
//! V8 tells the isolate through its promise-reject callback
//! (`unhandled::promise_reject`): `PromiseRejectWithNoHandler` when a promise without
//! a handler is rejected, `PromiseHandlerAddedAfterReject` when such a
//! promise gets one. The notes are `v8::Global`s: they keep the promise and
//! its reason alive until the end of the turn, so [`Rejections::clear`] runs
//! before the isolate is disposed (`HostState::clear`).

use std::cell::{Cell, RefCell};

/// At most this many rejections are noted per turn; past it they are only
/// counted (a worker rejecting millions of promises in one turn must not
/// make the host hold a handle to each).
const MAX_NOTED: usize = 1024;

/// The rejections of the current turn that have no handler yet.
#[derive(Default)]
pub(crate) struct Rejections {
    noted: RefCell<Vec<Noted>>,
    /// Rejections past `MAX_NOTED` this turn, reported as a count.
    untracked: Cell<usize>,
}

pub(super) struct Noted {
    promise: v8::Global<v8::Promise>,
    pub(super) reason: Option<v8::Global<v8::Value>>,
    /// The request whose turn rejected it.
    pub(super) ctx: u32,
}

// === impl Rejections ===

impl Rejections {
    pub(super) fn rejected(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        promise: v8::Local<'_, v8::Promise>,
        reason: Option<v8::Local<'_, v8::Value>>,
        ctx: u32,
    ) {
        let mut noted = self.noted.borrow_mut();
        if noted.len() >= MAX_NOTED {
            self.untracked.set(self.untracked.get().saturating_add(1));
            return;
        }
        noted.push(Noted {
            promise: v8::Global::new(scope, promise),
            reason: reason.map(|r| v8::Global::new(scope, r)),
            ctx,
        });
    }

    pub(super) fn handled(&self, promise: v8::Local<'_, v8::Promise>) {
        self.noted.borrow_mut().retain(|n| n.promise != promise);
    }

    /// The notes of the turn and the count past them, leaving none.
    pub(super) fn take(&self) -> (Vec<Noted>, usize) {
        (
            std::mem::take(&mut *self.noted.borrow_mut()),
            self.untracked.replace(0),
        )
    }

    /// Drops every note (the isolate is going away).
    pub(crate) fn clear(&self) {
        self.noted.borrow_mut().clear();
        self.untracked.set(0);
    }
}
