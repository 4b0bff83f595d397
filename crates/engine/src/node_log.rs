//! [`NodeLogGate`]: what Workers may put in the node's own log, bounded per
//! engine thread whatever they do. Console lines never go there (they go to
//! the tail, `tail.rs`); uncaught exceptions do, cut short and rate-limited,
//! because an operator needs to see that Workers fail.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Worker errors an engine thread writes to the node's log per second
/// (bursts up to this many; the rest are counted in the next line's
/// `suppressed`).
pub const NODE_LOG_PER_SECOND: u32 = 10;
/// A Worker error's message in the node's log is cut here.
pub(crate) const NODE_LOG_MESSAGE_BYTES: usize = 256;
/// A Worker error's stack in the node's log is cut here.
pub(crate) const NODE_LOG_STACK_BYTES: usize = 1024;

/// Bounds what Workers put in the node's log, per engine thread: at most
/// [`NODE_LOG_PER_SECOND`] lines a second, each under ~1.3 KiB of the
/// Worker's text, so a thread adds at most ~15 KiB/s however its Workers
/// fail. Console lines never go there (docs/tail.md).
#[derive(Debug, Default)]
pub(crate) struct NodeLogGate {
    window: Cell<Option<Instant>>,
    used: Cell<u32>,
    suppressed: Cell<u64>,
}

impl NodeLogGate {
    /// `Some(suppressed since the last line)` when a line may go out now.
    pub(crate) fn admit(&self) -> Option<u64> {
        let now = Instant::now();
        if self
            .window
            .get()
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1))
        {
            self.window.set(Some(now));
            self.used.set(0);
        }
        if self.used.get() >= NODE_LOG_PER_SECOND {
            self.suppressed.set(self.suppressed.get() + 1);
            return None;
        }
        self.used.set(self.used.get() + 1);
        Some(self.suppressed.replace(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_log_gate_lets_a_few_through_and_counts_the_rest() {
        let gate = NodeLogGate::default();
        let passed = (0..100).filter(|_| gate.admit().is_some()).count();
        assert_eq!(passed, NODE_LOG_PER_SECOND as usize);
        assert_eq!(gate.suppressed.get(), 100 - u64::from(NODE_LOG_PER_SECOND));
    }
}
