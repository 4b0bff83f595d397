//! The Isolane operator: turns each `Worker` into an immutable bundle Secret that
//! runtime nodes load, and reports what it made of it in the Worker's status.
//!
//! The main type is the [`controller`] (kube-rs `Controller` over Workers in every
//! namespace, with the `isolane.dev/bundle` finalizer), wrapped in leader
//! election (`isolane-leader`) so that only one replica acts. Beside it run the validating admission
//! [`webhook`] (syntax errors and route conflicts rejected at `kubectl apply`) and
//! the admin server of `isolane-telemetry` (/livez, /readyz, /metrics). `main.rs` composes them from a
//! validated [`Config`]. Runtime-node Leases are read with the shared
//! `isolane-membership` crate ([`membership`] watches them) and placed with
//! `isolane-placement`, exactly as the router does.
#![forbid(unsafe_code)]

pub mod config;
pub mod controller;
mod error;
pub mod index;
pub mod membership;
pub mod metrics;
pub mod resolve;
pub mod revisions;
pub mod routes;
pub mod script;
pub mod status;
pub mod webhook;

pub use config::{Args, Config};
pub use error::Error;

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "isolane-operator";
/// The finalizer that guarantees a Worker's bundle is removed before the Worker is.
pub const FINALIZER: &str = "isolane.dev/bundle";
