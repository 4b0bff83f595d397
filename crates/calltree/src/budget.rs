//! [`Budget`]: what one request in flight may still use, as the engine
//! keeps it with the request (`host/state.rs`): its own CPU and
//! subrequests, under its Worker's limits (or the lower ones its caller
//! set), and its seat in its tree of calls, whose budgets it shares once it
//! is in one ([`CallTree`]).

use std::sync::Arc;
use std::time::Duration;

use crate::queue::TreeQueues;
use crate::{CallTree, Seat};

/// One request's budgets.
#[derive(Debug)]
pub struct Budget {
    /// CPU its turns used (since its last top-up).
    cpu: Duration,
    cpu_limit: Duration,
    subrequests: u32,
    /// The fewest subrequests the request's caller allowed it (a dispatch
    /// call's `limits.subRequests`), below its Worker's own.
    subrequest_cap: Option<u32>,
    /// Its tree of calls, once in one.
    tree: Option<Seat>,
}

impl Budget {
    /// A request's budgets as it begins, allowed `cpu_limit` of CPU.
    pub fn new(cpu_limit: Duration) -> Self {
        Self {
            cpu: Duration::ZERO,
            cpu_limit,
            subrequests: 0,
            subrequest_cap: None,
            tree: None,
        }
    }

    /// CPU the request used (since its last top-up).
    pub fn cpu(&self) -> Duration {
        self.cpu
    }

    /// A fresh CPU budget (a new event of a held request).
    pub fn top_up(&mut self) {
        self.cpu = Duration::ZERO;
    }

    /// Counts `cpu` of a turn of the request, and in its tree.
    pub fn charge(&mut self, cpu: Duration) {
        self.cpu += cpu;
        if let Some(seat) = &self.tree {
            seat.tree.charge(cpu);
        }
    }

    /// CPU the request may still use: the lower of its own and its tree's.
    pub fn cpu_remaining(&self) -> Duration {
        (self.tree.as_ref())
            .map_or(self.cpu_limit, |s| s.tree.cpu_remaining())
            .min(self.cpu_limit.saturating_sub(self.cpu))
    }

    /// The CPU limit the request runs with: its own, or its tree's when
    /// lower.
    pub fn cpu_limit(&self) -> Duration {
        let tree = self.tree.as_ref().map(|s| s.tree.cpu_limit());
        tree.map_or(self.cpu_limit, |tree| tree.min(self.cpu_limit))
    }

    /// Whether the request is in a tree that used all its CPU.
    pub fn tree_cpu_spent(&self) -> bool {
        (self.tree.as_ref()).is_some_and(|s| s.tree.cpu_remaining().is_zero())
    }

    /// Caps the request's subrequests at `cap` (its caller's lower limit).
    pub fn cap_subrequests(&mut self, cap: u32) {
        self.subrequest_cap = Some(cap);
    }

    /// Counts one subrequest against `limit` (or the lower cap its caller
    /// set), and its tree's; `Err(limit)` when none is left.
    pub fn take_subrequest(&mut self, limit: u32) -> Result<(), u32> {
        let limit = self.subrequest_limit(limit);
        if self.subrequests >= limit {
            return Err(limit);
        }
        if let Some(seat) = &self.tree {
            seat.tree.take_subrequest()?;
        }
        self.subrequests += 1;
        Ok(())
    }

    fn subrequest_limit(&self, limit: u32) -> u32 {
        self.subrequest_cap.map_or(limit, |cap| cap.min(limit))
    }

    /// The request's tree of calls; made at its first call, from what it
    /// used so far of its budgets (`limit`: its Worker's subrequests), its
    /// calls queued in `queue()`.
    pub fn tree(&mut self, limit: u32, queue: impl FnOnce() -> TreeQueues) -> Arc<CallTree> {
        let subrequests = (self.subrequests, self.subrequest_limit(limit));
        let cpu = (self.cpu, self.cpu_limit);
        let seat = (self.tree)
            .get_or_insert_with(|| Seat::top_level(CallTree::new(cpu, subrequests, queue())));
        seat.tree.clone()
    }

    /// Puts the request (a service call) in its caller's tree.
    pub fn join(&mut self, tree: Arc<CallTree>) {
        self.tree = Some(Seat::call(tree));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::CallQueues;

    fn queue() -> TreeQueues {
        TreeQueues::new(&Arc::new(CallQueues::new(1, 1)), 0, "ns")
    }

    #[test]
    fn a_request_s_tree_starts_from_what_it_used_and_its_calls_share_it() {
        let ms = Duration::from_millis;
        let mut top = Budget::new(ms(10));
        top.charge(ms(4));
        top.cap_subrequests(3);
        assert_eq!(top.take_subrequest(50), Ok(()));
        assert!(!top.tree_cpu_spent());
        let tree = top.tree(50, queue);
        assert!(Arc::ptr_eq(&tree, &top.tree(50, queue)), "made once");
        let mut call = Budget::new(ms(100));
        call.join(tree);
        assert_eq!(call.cpu_limit(), ms(10), "the tree's, lower");
        call.charge(ms(5));
        assert_eq!(top.cpu_remaining(), ms(1));
        assert_eq!(call.cpu_remaining(), ms(1));
        assert_eq!(call.take_subrequest(50), Ok(()));
        assert_eq!(top.take_subrequest(50), Ok(()));
        assert_eq!(
            call.take_subrequest(50),
            Err(3),
            "the top-level cap, in the tree"
        );
        call.charge(ms(1));
        assert!(top.tree_cpu_spent());
        top.top_up();
        assert_eq!(top.cpu(), Duration::ZERO);
    }
}
