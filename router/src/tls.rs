//! HTTPS at the router: a TLS listener served by the same request path as
//! plain HTTP (`server.rs`), with each tenant host's certificate chosen by
//! SNI from labelled `kubernetes.io/tls` Secrets ([`TLS_SECRET_LABEL`]).
//!
//! A certificate is served for a name only when the Secret's namespace owns
//! that name under the router's one ownership rule (the route table's
//! admitted hosts, [`crate::routes::RouteTable::host_namespace`]): a
//! tenant's Secret for another namespace's host, or for a host nobody was
//! admitted to, is never served. A name with no such certificate, or a
//! ClientHello without SNI, has its handshake refused; there is no default
//! certificate. The Secrets are watched ([`watch`]); each change swaps the
//! resolver's certificate set ([`SniResolver::replace`]) while the
//! `ServerConfig` stays, so open connections are untouched and the next
//! handshake sees the change. A Secret that cannot be served (bad PEM, a key
//! that does not fit its certificate, no DNS name) is skipped with a
//! warning and counted (`isolane_router_tls_secrets{state="rejected"}`).
//! [`Redirect`] optionally sends plain-HTTP requests for hosts with a
//! certificate to HTTPS. [`Http01`] answers cert-manager's ACME HTTP-01
//! challenges for hosts their namespace owns (`--acme-http01`). docs/tls.md
//! covers the flags, the Secret and automatic certificates.

mod certs;
pub mod challenge_watch;
mod challenges;
mod config;
mod redirect;
mod resolver;
mod store;
pub mod watch;

pub use certs::{CertError, Loaded, load};
pub use challenges::{Challenge, ChallengeSet, HTTP01, Http01};
pub use config::{HttpsArgs, server_config};
pub use redirect::{ACME_CHALLENGE_PREFIX, Redirect};
pub use resolver::{HostOwners, SniResolver};
pub use store::CertStore;

/// The label that marks a `kubernetes.io/tls` Secret as one the router may
/// serve (value `"true"`); cert-manager sets it through a `Certificate`'s
/// `spec.secretTemplate.labels`.
pub const TLS_SECRET_LABEL: &str = "isolane.dev/tls";

#[cfg(test)]
mod tests;
