//! Unhandled promise rejections, reported the way browsers and workerd do:
//! a promise rejected with no handler is only noted; it is reported when it
//! still has none after the turn's microtask checkpoint. A handler attached
//! later in the same turn (`const p = Promise.reject(e); await x; p.catch(…)`,
//! or the runtime marking its own promises handled) withdraws the note.
//!
//! V8 tells the isolate through its promise-reject callback
//! ([`promise_reject`]): `PromiseRejectWithNoHandler` when a promise without
//! a handler is rejected, `PromiseHandlerAddedAfterReject` when such a
//! promise gets one. The notes are `v8::Global`s: they keep the promise and
//! its reason alive until the end of the turn, so [`Rejections::clear`] runs
//! before the isolate is disposed (`HostState::clear`).

use std::cell::{Cell, RefCell};

use super::HostState;

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

struct Noted {
    promise: v8::Global<v8::Promise>,
    reason: Option<v8::Global<v8::Value>>,
    /// The request whose turn rejected it.
    ctx: u32,
}

// === impl Rejections ===

impl Rejections {
    fn rejected(
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

    fn handled(&self, promise: v8::Local<'_, v8::Promise>) {
        self.noted.borrow_mut().retain(|n| n.promise != promise);
    }

    /// Drops every note (the isolate is going away).
    pub(crate) fn clear(&self) {
        self.noted.borrow_mut().clear();
        self.untracked.set(0);
    }
}

/// V8's promise-reject callback: notes rejections without a handler and
/// withdraws the note when one is added.
pub(crate) unsafe extern "C" fn promise_reject(message: v8::PromiseRejectMessage) {
    // SAFETY: V8 calls this on the isolate's thread, inside JS execution.
    v8::callback_scope!(unsafe scope, &message);
    let Some(host) = HostState::get(scope) else {
        return;
    };
    match message.get_event() {
        v8::PromiseRejectEvent::PromiseRejectWithNoHandler => {
            let ctx = host.current();
            host.rejections
                .rejected(scope, message.get_promise(), message.get_value(), ctx);
        }
        v8::PromiseRejectEvent::PromiseHandlerAddedAfterReject => {
            host.rejections.handled(message.get_promise());
        }
        v8::PromiseRejectEvent::PromiseRejectAfterResolved
        | v8::PromiseRejectEvent::PromiseResolveAfterResolved => {}
    }
}

/// Reports the rejections still without a handler; called after the turn's
/// microtask checkpoint, still under the turn's watchdog (a reason's
/// `toString` is the worker's code).
pub(crate) fn report(scope: &mut v8::PinScope<'_, '_>, host: &HostState) {
    let noted = std::mem::take(&mut *host.rejections.noted.borrow_mut());
    let untracked = host.rejections.untracked.replace(0);
    // The common case, on every turn: nothing to report.
    if noted.is_empty() && untracked == 0 {
        return;
    }
    // Its own TryCatch: a reason whose `toString` throws (or a Symbol) must
    // not read as the turn's exception.
    v8::tc_scope!(let tc, scope);
    for Noted { reason, ctx, .. } in noted {
        let reason = match reason {
            Some(reason) => {
                let reason = v8::Local::new(tc, reason);
                match reason.to_string(tc) {
                    Some(text) => text.to_rust_string_lossy(tc),
                    None => {
                        tc.reset();
                        "(a value that cannot be converted to a string)".to_owned()
                    }
                }
            }
            None => String::new(),
        };
        super::console::report_exception(host, ctx, "unhandled promise rejection", &reason, "");
    }
    if untracked > 0 {
        tracing::warn!(
            worker.id = host.worker_id(),
            revision = host.revision(),
            thread = host.thread.index,
            count = untracked,
            "more promises were rejected without a handler in one turn than are tracked"
        );
    }
}
