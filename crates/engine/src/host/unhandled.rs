//! V8's promise-reject callback and the report, after each turn, of the
//! rejections still without a handler (`rejection.rs` keeps the notes).

use super::HostState;
use super::rejection::Noted;

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
    let (noted, untracked) = host.rejections.take();
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
