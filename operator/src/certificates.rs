//! Certificates issued automatically (`--certificates-issuer`, chart
//! `certificates.*`): for each host a Worker is admitted to, a cert-manager
//! `Certificate` (cert-manager.io/v1) in the Worker's namespace, owned by the
//! Worker, whose Secret is labelled `isolane.dev/tls: "true"` so the router
//! serves it ([`desired`]). A host the Worker is not admitted to gets none,
//! and a Certificate whose host the Worker lost is deleted ([`sync`]). The
//! Worker's `CertificateReady` condition says how issuance goes
//! ([`readiness`]); it is written by a field manager of its own, so it is
//! absent while certificates are off. [`watch`] reconciles a Worker when one
//! of its Certificates changes. In wildcard mode ([`wildcard`], `shared`) a
//! namespace's hosts one label under a domain a reservation gives it share
//! one `*.<domain>` Certificate instead. docs/tls.md tells the whole flow.

mod desired;
mod readiness;
mod settings;
mod shared;
mod sync;
pub mod watch;
mod wildcard;

pub use desired::{
    WILDCARD_LABEL, WORKER_LABEL, certificate_name, certificate_resource, desired,
    wildcard_certificate, wildcard_name,
};
pub use readiness::{CERTIFICATE_READY, Observed, condition};
pub use settings::{CertificateArgs, CertificateSettings, Issuer, IssuerKind, Mode};
pub use sync::Certificates;
pub use wildcard::{
    Split, awaiting, covering_domain, desired_wildcards, held_domains, holds, split,
};
