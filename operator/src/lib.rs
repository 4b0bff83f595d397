//! The Isolane operator: turns each `Worker` into an immutable bundle Secret that
//! runtime nodes load, and reports what it made of it in the Worker's status.
//!
//! The main type is the [`controller`] (kube-rs `Controller` over Workers in every
//! namespace, fed by the [`watches`], with the `isolane.dev/bundle` finalizer):
//! each [`reconcile`] observes, decides with [`plan`] (no I/O) and carries the
//! plan out with the [`executor`]. [`lifecycle`] wraps it in leader election
//! (`isolane-leader`) so that only one replica acts, beside the validating
//! admission [`webhook`] (syntax errors and route conflicts rejected at
//! `kubectl apply`) and the admin server of `isolane-telemetry` (/livez,
//! /readyz, /metrics); `main.rs` only parses the flags into a validated
//! [`Config`], sets up tracing and the runtime, and calls [`lifecycle`].
//! Runtime-node Leases are read with the shared `isolane-membership` crate
//! ([`membership`] watches them) and placed with `isolane-placement`, exactly
//! as the router does.
#![forbid(unsafe_code)]

pub mod artifact;
pub mod backlog;
pub mod bundle;
pub mod caches;
pub mod certificates;
pub mod class_claim;
pub mod config;
pub mod controller;
mod error;
pub mod executor;
#[cfg(test)]
mod fixtures;
pub mod index;
pub mod lifecycle;
pub mod membership;
pub mod metrics;
pub mod owners;
pub mod plan;
pub mod policy;
pub mod reconcile;
pub mod resolve;
pub mod revisions;
pub mod routes;
pub mod script;
pub mod status;
pub mod storage;
pub mod triggers;
pub mod watches;
pub mod webhook;

pub use config::{Args, Config};
pub use error::Error;

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "isolane-operator";
/// The recorder of the operator's Events, as this pod (`HOSTNAME`) of the
/// operator ([`FIELD_MANAGER`]).
pub(crate) fn event_recorder(client: kube::Client) -> kube::runtime::events::Recorder {
    kube::runtime::events::Recorder::new(
        client,
        kube::runtime::events::Reporter {
            controller: FIELD_MANAGER.to_owned(),
            instance: std::env::var("HOSTNAME").ok(),
        },
    )
}

/// The finalizer that guarantees a Worker's bundle is removed before the Worker is.
pub const FINALIZER: &str = "isolane.dev/bundle";

/// Locks `mutex`, carrying on with its data if a holder panicked (every
/// lock here guards a cache that stays consistent between statements).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
