//! One Secret's certificate and key, checked and made ready to serve: the
//! PEM chain and key parse, the key fits the leaf certificate, and the leaf
//! names at least one DNS name (its subject alternative names; a common
//! name alone is not read, as browsers do not).

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use x509_parser::extensions::GeneralName;

/// Why a Secret's certificate is not served.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The Secret is not of type `kubernetes.io/tls`.
    #[error("the Secret's type is {0:?}, not kubernetes.io/tls")]
    Type(String),
    /// `tls.crt` or `tls.key` is missing.
    #[error("the Secret has no {0}")]
    Missing(&'static str),
    /// A PEM block that does not parse.
    #[error("{file} is not valid PEM: {reason}")]
    Pem {
        /// `tls.crt` or `tls.key`.
        file: &'static str,
        /// The parser's message.
        reason: String,
    },
    /// `tls.crt` holds no certificate.
    #[error("tls.crt holds no certificate")]
    NoCertificate,
    /// The leaf certificate is not X.509 as expected.
    #[error("the certificate cannot be read: {0}")]
    Certificate(String),
    /// The leaf names no DNS name.
    #[error("the certificate names no DNS name")]
    NoNames,
    /// The key is unusable or not the certificate's.
    #[error("the key does not serve the certificate: {0}")]
    Key(String),
}

impl CertError {
    /// A bounded label, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Type(_) => "type",
            Self::Missing(_) => "missing",
            Self::Pem { .. } => "pem",
            Self::NoCertificate => "no_certificate",
            Self::Certificate(_) => "certificate",
            Self::NoNames => "no_names",
            Self::Key(_) => "key",
        }
    }
}

/// A certificate ready to serve, and the DNS names (lower case, exact or
/// `*.` wildcard) it may be served for.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The leaf's DNS names.
    pub names: Vec<String>,
    /// Chain and signing key, as handshakes use them.
    pub key: Arc<CertifiedKey>,
}

/// Reads a PEM chain (leaf first) and its PEM private key with `provider`.
pub fn load(
    cert_pem: &[u8],
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<Loaded, CertError> {
    let pem = |file: &'static str| {
        move |error: rustls::pki_types::pem::Error| CertError::Pem {
            file,
            reason: error.to_string(),
        }
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem("tls.crt"))?;
    let leaf = chain.first().ok_or(CertError::NoCertificate)?;
    let names = dns_names(leaf)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(pem("tls.key"))?;
    let key = CertifiedKey::from_der(chain, key, provider)
        .map_err(|error| CertError::Key(error.to_string()))?;
    Ok(Loaded {
        names,
        key: Arc::new(key),
    })
}

/// The DNS names among `leaf`'s subject alternative names.
fn dns_names(leaf: &CertificateDer<'_>) -> Result<Vec<String>, CertError> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|error| CertError::Certificate(error.to_string()))?;
    let alternatives = cert
        .subject_alternative_name()
        .map_err(|error| CertError::Certificate(error.to_string()))?;
    let names: Vec<String> = alternatives
        .iter()
        .flat_map(|extension| extension.value.general_names.iter())
        .filter_map(|name| match name {
            GeneralName::DNSName(name) => Some(name.trim_end_matches('.').to_ascii_lowercase()),
            _ => None,
        })
        .filter(|name| !name.is_empty())
        .collect();
    if names.is_empty() {
        return Err(CertError::NoNames);
    }
    Ok(names)
}
