//! The operator's certificate flags.

use std::fmt;

/// Env var for `--certificates-issuer`.
pub const ENV_ISSUER: &str = "ISOLANE_CERTIFICATES_ISSUER";
/// Env var for `--certificates-issuer-kind`.
pub const ENV_ISSUER_KIND: &str = "ISOLANE_CERTIFICATES_ISSUER_KIND";
/// Env var for `--certificates-mode`.
pub const ENV_MODE: &str = "ISOLANE_CERTIFICATES_MODE";
/// Env var for `--certificates-wildcard-issuer`.
pub const ENV_WILDCARD_ISSUER: &str = "ISOLANE_CERTIFICATES_WILDCARD_ISSUER";
/// Env var for `--certificates-wildcard-issuer-kind`.
pub const ENV_WILDCARD_ISSUER_KIND: &str = "ISOLANE_CERTIFICATES_WILDCARD_ISSUER_KIND";

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

/// Which Certificates are asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One Certificate per admitted host.
    #[default]
    PerHost,
    /// One `*.<domain>` Certificate per namespace and wildcard reservation
    /// it holds, for the hosts one label under it; a Certificate per host
    /// for the others.
    Wildcard,
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

    /// `per-host`: a Certificate per admitted host. `wildcard`: one
    /// `*.<domain>` Certificate per namespace for the hosts one label
    /// under a `--reserved-host *.<domain>` the namespace holds, a
    /// Certificate per host for the others (docs/tls.md).
    #[arg(long = "certificates-mode", env = ENV_MODE, value_enum, default_value_t = Mode::PerHost)]
    pub mode: Mode,

    /// The issuer of the wildcard Certificates (ACME needs DNS-01 for
    /// them); default: `--certificates-issuer`.
    #[arg(long = "certificates-wildcard-issuer", env = ENV_WILDCARD_ISSUER)]
    pub wildcard_issuer: Option<String>,

    /// The kind of `--certificates-wildcard-issuer`; default: that of
    /// `--certificates-issuer`.
    #[arg(long = "certificates-wildcard-issuer-kind", env = ENV_WILDCARD_ISSUER_KIND, value_enum)]
    pub wildcard_issuer_kind: Option<IssuerKind>,
}

impl CertificateArgs {
    /// The settings, when certificates are on; a namespace holds a domain
    /// for wildcards only through one of `reservations`.
    pub fn settings(
        &self,
        reservations: &[isolane_worker::Reservation],
    ) -> Option<CertificateSettings> {
        let issuer = self.issuer.clone().filter(|name| !name.is_empty())?;
        let wildcard_issuer = Issuer {
            name: (self.wildcard_issuer.clone())
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| issuer.clone()),
            kind: self.wildcard_issuer_kind.unwrap_or(self.issuer_kind),
        };
        Some(CertificateSettings {
            issuer,
            issuer_kind: self.issuer_kind,
            mode: self.mode,
            wildcard_issuer,
            reservations: reservations.to_vec(),
        })
    }
}

/// A cert-manager issuer, by kind and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: IssuerKind,
}

/// How Certificates are asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateSettings {
    /// The issuer's name.
    pub issuer: String,
    /// Its kind.
    pub issuer_kind: IssuerKind,
    /// Per host, or wildcards where a namespace holds the domain.
    pub mode: Mode,
    /// The issuer of the wildcard Certificates.
    pub wildcard_issuer: Issuer,
    /// The hosts reserved for namespaces (`--reserved-host`): a namespace
    /// holds a domain only through one.
    pub reservations: Vec<isolane_worker::Reservation>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        certificates: CertificateArgs,
    }

    fn settings(argv: &[&str]) -> Option<CertificateSettings> {
        let argv = std::iter::once("operator").chain(argv.iter().copied());
        Flags::try_parse_from(argv)
            .unwrap()
            .certificates
            .settings(&[])
    }

    #[test]
    fn the_wildcard_issuer_defaults_to_the_issuer() {
        assert_eq!(settings(&[]), None);
        let plain = settings(&[
            "--certificates-issuer=le",
            "--certificates-issuer-kind=issuer",
        ]);
        let plain = plain.unwrap();
        assert_eq!(plain.mode, Mode::PerHost);
        let expected = Issuer {
            name: "le".to_owned(),
            kind: IssuerKind::Issuer,
        };
        assert_eq!(plain.wildcard_issuer, expected);
        let wildcard = settings(&[
            "--certificates-issuer=le",
            "--certificates-mode=wildcard",
            "--certificates-wildcard-issuer=le-dns",
            "--certificates-wildcard-issuer-kind=cluster-issuer",
        ])
        .unwrap();
        assert_eq!(wildcard.mode, Mode::Wildcard);
        assert_eq!(wildcard.wildcard_issuer.name, "le-dns");
        assert_eq!(wildcard.wildcard_issuer.kind, IssuerKind::ClusterIssuer);
    }
}
