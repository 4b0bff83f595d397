//! Consistent placement of workers onto runtime nodes and their threads.
//!
//! The operator uses it to report `status.placement` and the router to route,
//! so it is one pure, deterministic function of its inputs: no I/O, no clock,
//! no per-process randomness. [`NodeSet`] is the main type: built from the
//! live, non-draining nodes (the caller filters them), it gives each worker
//! (`namespace/name`) a preference order over nodes by weighted rendezvous
//! hashing ([`NodeSet::candidates`], [`NodeSet::place`]), optionally skipping
//! overloaded nodes ([`NodeSet::choose_bounded`]); [`thread_for`] then picks
//! the thread on the chosen node by jump consistent hash. The [`ring`] module
//! holds the consistent-hash ring it was measured against
//! (`docs/placement.md`).
#![forbid(unsafe_code)]

mod bounded;
mod hash;
mod jump;
mod node;
pub mod rendezvous;
pub mod ring;

pub use bounded::{DEFAULT_LOAD_FACTOR, LONE_HEADROOM};
pub use jump::thread_for;
pub use node::{Assignment, Node, NodeSet};
pub use rendezvous::Preference;
