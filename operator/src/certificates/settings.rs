//! The operator's certificate flags.

use std::fmt;

/// Env var for `--certificates-issuer`.
pub const ENV_ISSUER: &str = "ISOLANE_CERTIFICATES_ISSUER";
/// Env var for `--certificates-issuer-kind`.
pub const ENV_ISSUER_KIND: &str = "ISOLANE_CERTIFICATES_ISSUER_KIND";

/// The kind of cert-manager issuer the Certificates name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IssuerKind {
    /// A cluster-wide `ClusterIssuer`.
    ClusterIssuer,
    /// An `Issuer` of the Worker's own namespace (each namespace has one of the name).
    Issuer,
}

impl fmt::Display for IssuerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ClusterIssuer => "ClusterIssuer",
            Self::Issuer => "Issuer",
        })
    }
}

/// The certificate flags.
#[derive(Clone, Debug, clap::Args)]
pub struct CertificateArgs {
    /// Ask cert-manager for a Certificate for each host a Worker is
    /// admitted to, from the issuer of this name (docs/tls.md). Unset: no
    /// Certificates, and no CertificateReady condition.
    #[arg(long = "certificates-issuer", env = ENV_ISSUER)]
    pub issuer: Option<String>,

    /// The kind of `--certificates-issuer`.
    #[arg(long = "certificates-issuer-kind", env = ENV_ISSUER_KIND, value_enum, default_value_t = IssuerKind::ClusterIssuer)]
    pub issuer_kind: IssuerKind,
}

impl CertificateArgs {
    /// The settings, when certificates are on.
    pub fn settings(&self) -> Option<CertificateSettings> {
        let issuer = self.issuer.clone().filter(|name| !name.is_empty())?;
        Some(CertificateSettings {
            issuer,
            issuer_kind: self.issuer_kind,
        })
    }
}

/// How Certificates are asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateSettings {
    /// The issuer's name.
    pub issuer: String,
    /// Its kind.
    pub issuer_kind: IssuerKind,
}
