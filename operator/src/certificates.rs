//! Certificates issued automatically (`--certificates-issuer`, chart
//! `certificates.*`): for each host a Worker is admitted to, a cert-manager
//! `Certificate` (cert-manager.io/v1) in the Worker's namespace, owned by the
//! Worker, whose Secret is labelled `isolane.dev/tls: "true"` so the router
//! serves it ([`desired`]). A host the Worker is not admitted to gets none,
//! and a Certificate whose host the Worker lost is deleted ([`sync`]). The
//! Worker's `CertificateReady` condition says how issuance goes
//! ([`readiness`]); it is written by a field manager of its own, so it is
//! absent while certificates are off. [`watch`] reconciles a Worker when one
//! of its Certificates changes. docs/tls.md tells the whole flow.

mod desired;
mod readiness;
mod settings;
mod sync;
pub mod watch;

pub use desired::{WORKER_LABEL, certificate_name, certificate_resource, desired};
pub use readiness::{CERTIFICATE_READY, Observed, condition};
pub use settings::{CertificateArgs, CertificateSettings, IssuerKind};
pub use sync::Certificates;
