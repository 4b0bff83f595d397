//! End-to-end tests against a real kube-apiserver: the whole system, as users run it.
//!
//! Helpers, each in a module named for what it does: [`process`] (build and run
//! the project's binaries, wait on conditions with deadlines), [`operator`] (the
//! operator as a process), [`workers`] (Workers, bundles and conditions through
//! the API), [`certs`] (a throwaway CA for webhooks), [`http`] (admin endpoints).
#![forbid(unsafe_code)]

pub mod certs;
pub mod http;
pub mod operator;
pub mod process;
pub mod workers;
