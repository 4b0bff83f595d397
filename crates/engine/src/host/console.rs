//! The `log` unit: `host.log(level, message)` keeps a Worker's console
//! lines for the tail of its invocation ([`Logs`], within the log budgets),
//! and [`report_exception`] records what it did not catch. Neither writes
//! the tenant's text to the node's own log, except exceptions through a
//! per-thread gate (`node_log.rs`) that bounds the node's log volume.
//!
//! The budgets (Cloudflare-like; docs/tail.md):
//! - per invocation: [`LINES_PER_INVOCATION`] lines, [`BYTES_PER_INVOCATION`]
//!   bytes;
//! - per Worker on an engine thread: [`LINES_PER_SECOND`] lines and
//!   [`BYTES_PER_SECOND`] bytes each second;
//! - one line is cut at [`MAX_LINE_BYTES`] (the formatter in
//!   `isolane-web`'s `17_console.js` stops early too).
//!
//! Lines over a budget are dropped and counted (the observer's
//! `log_lines_dropped`, the event's `dropped_lines`). Lines are kept only
//! for invocations someone tails (`tail.rs`): with no tail, `log` returns at
//! once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use isolane_worker::{Exception, LogLine};

use super::HostState;
use crate::node_log::{NODE_LOG_MESSAGE_BYTES, NODE_LOG_STACK_BYTES};
use crate::observer::LogDropReason;
use crate::unit::Unit;

/// Console lines one invocation keeps.
pub const LINES_PER_INVOCATION: usize = 256;
/// Bytes of console text one invocation keeps.
pub const BYTES_PER_INVOCATION: usize = 128 * 1024;
/// Console lines one Worker keeps per second on one engine thread.
pub const LINES_PER_SECOND: u32 = 1_000;
/// Bytes of console text one Worker keeps per second on one engine thread.
pub const BYTES_PER_SECOND: usize = 1024 * 1024;
/// One console line is cut here (and marked).
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// Uncaught exceptions one invocation keeps.
const EXCEPTIONS_PER_INVOCATION: usize = 16;

/// `log`: the console's lines to [`Logs`] (the console itself, its
/// formatting, is `isolane-web`'s `17_console.js`).
pub(super) fn unit() -> Unit {
    Unit::new("log")
        .function("log", log)
        .function("exception", exception)
        .state::<Logs>()
}

host_fn! {
/// `log(level, message)`: kept for the tail of the current invocation when
/// someone tails it, within the budgets; otherwise dropped at once.
fn log<'s>(_scope, level: String, message: String, host: Rc<HostState>) {
    let Some(logs) = host.state::<Logs>() else {
        return;
    };
    let ctx = host.current();
    // Top-level code (no request): kept for the next invocation's event
    // when someone tails the Worker now.
    let kept = logs.is_watched(ctx)
        || (ctx == 0 && host.thread.shared.tail.watching(host.worker_id()));
    if !kept {
        return;
    }
    let level = match level.as_str() {
        "error" | "warn" | "debug" | "info" => level,
        _ => "log".to_owned(),
    };
    if let Err(reason) = logs.push(ctx, level, message) {
        host.thread.observer.log_lines_dropped(host.thread.index, reason, 1);
    }
}
}

host_fn! {
/// `exception(message, stack)`: an error nobody caught (in a timer, a
/// listener, `waitUntil`): the current invocation's exception.
fn exception<'s>(_scope, message: String, stack: String, host: Rc<HostState>) {
    report_exception(&host, host.current(), "uncaught exception", &message, &stack);
}
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What one invocation logged, for its event.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub(crate) lines: Vec<LogLine>,
    pub(crate) bytes: usize,
    pub(crate) dropped: u64,
    pub(crate) exceptions: Vec<Exception>,
}

/// The console lines of the invocations tailed in one isolate, and the
/// Worker's per-second budget on this thread (an isolate is one Worker's).
#[derive(Default)]
pub(crate) struct Logs {
    requests: RefCell<HashMap<u32, Collected>>,
    window: Cell<Option<Instant>>,
    window_lines: Cell<u32>,
    window_bytes: Cell<usize>,
}

impl Logs {
    /// Invocation `ctx` is tailed: keep its lines.
    pub(crate) fn watch(&self, ctx: u32) {
        self.requests.borrow_mut().entry(ctx).or_default();
    }

    fn is_watched(&self, ctx: u32) -> bool {
        let requests = self.requests.borrow();
        !requests.is_empty() && requests.contains_key(&ctx)
    }

    /// What invocation `ctx` logged (with the lines of top-level code
    /// before it, first).
    pub(crate) fn take(&self, ctx: u32) -> Collected {
        let mut requests = self.requests.borrow_mut();
        let mut collected = requests.remove(&ctx).unwrap_or_default();
        if let Some(mut startup) = requests.remove(&0) {
            startup.lines.append(&mut collected.lines);
            startup.exceptions.append(&mut collected.exceptions);
            collected.lines = startup.lines;
            collected.exceptions = startup.exceptions;
            collected.dropped += startup.dropped;
        }
        collected
    }

    /// Keeps one line, or says which budget dropped it.
    fn push(&self, ctx: u32, level: String, mut message: String) -> Result<(), LogDropReason> {
        if message.len() > MAX_LINE_BYTES {
            message.truncate(floor_char_boundary(&message, MAX_LINE_BYTES));
            message.push_str("… [line cut at 16 KiB]");
        }
        let mut requests = self.requests.borrow_mut();
        let collected = requests.entry(ctx).or_default();
        if collected.lines.len() >= LINES_PER_INVOCATION
            || collected.bytes + message.len() > BYTES_PER_INVOCATION
        {
            collected.dropped += 1;
            return Err(LogDropReason::Invocation);
        }
        if !self.take_rate(message.len()) {
            collected.dropped += 1;
            return Err(LogDropReason::Rate);
        }
        collected.bytes += message.len();
        collected.lines.push(LogLine {
            level,
            message,
            timestamp_ms: epoch_ms(),
        });
        Ok(())
    }

    /// The per-second budget: a fixed one-second window.
    fn take_rate(&self, bytes: usize) -> bool {
        let now = Instant::now();
        let fresh = self
            .window
            .get()
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1));
        if fresh {
            self.window.set(Some(now));
            self.window_lines.set(0);
            self.window_bytes.set(0);
        }
        let lines = self.window_lines.get() + 1;
        let total = self.window_bytes.get() + bytes;
        if lines > LINES_PER_SECOND || total > BYTES_PER_SECOND {
            return false;
        }
        self.window_lines.set(lines);
        self.window_bytes.set(total);
        true
    }

    fn exception(&self, ctx: u32, exception: Exception) {
        let mut requests = self.requests.borrow_mut();
        let Some(collected) = requests.get_mut(&ctx) else {
            return;
        };
        if collected.exceptions.len() < EXCEPTIONS_PER_INVOCATION {
            collected.exceptions.push(exception);
        }
    }
}

/// The largest char boundary of `s` at or below `at`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Something of the Worker's failed uncaught (`what` says how: "handler
/// threw", "unhandled promise rejection", …): kept for the tail of
/// invocation `ctx` when it is tailed, and written to the node's log
/// through the thread's gate.
pub(crate) fn report_exception(
    host: &HostState,
    ctx: u32,
    what: &'static str,
    message: &str,
    stack: &str,
) {
    if let Some(logs) = host.state::<Logs>() {
        let stack = &stack[..floor_char_boundary(stack, MAX_LINE_BYTES)];
        let message = &message[..floor_char_boundary(message, MAX_LINE_BYTES)];
        logs.exception(ctx, Exception::from_message(message, stack, epoch_ms()));
    }
    let gate = &host.thread.node_log;
    let Some(suppressed) = gate.admit() else {
        return;
    };
    let request_id = host.request_id(ctx);
    tracing::warn!(
        worker.id = host.worker_id(),
        revision = host.revision(),
        thread = host.thread.index,
        request.id = request_id.as_deref().unwrap_or(""),
        error = &message[..floor_char_boundary(message, NODE_LOG_MESSAGE_BYTES)],
        stack = &stack[..floor_char_boundary(stack, NODE_LOG_STACK_BYTES)],
        suppressed,
        "{what}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_line_is_cut_on_a_char_boundary() {
        let logs = Logs::default();
        logs.watch(1);
        let line = "é".repeat(MAX_LINE_BYTES);
        logs.push(1, "log".into(), line).unwrap();
        let collected = logs.take(1);
        let message = &collected.lines[0].message;
        assert!(message.len() < MAX_LINE_BYTES + 64, "{}", message.len());
        assert!(message.ends_with("[line cut at 16 KiB]"));
    }

    #[test]
    fn lines_past_the_invocation_budget_are_dropped_and_counted() {
        let logs = Logs::default();
        logs.watch(1);
        let mut dropped = 0;
        for i in 0..LINES_PER_INVOCATION + 10 {
            if logs.push(1, "log".into(), format!("{i}")).is_err() {
                dropped += 1;
            }
        }
        let collected = logs.take(1);
        assert_eq!((collected.lines.len(), dropped), (LINES_PER_INVOCATION, 10));
        assert_eq!(collected.dropped, 10);
    }
}
