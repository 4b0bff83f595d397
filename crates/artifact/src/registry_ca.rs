//! The CAs a cluster trusts for its registries' HTTPS certificates besides
//! the public web PKI (`--bundle-registry-ca`): a registry whose certificate
//! a private CA signs.

use oci_client::client::{Certificate, CertificateEncoding};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::Error;

/// A PEM bundle's certificates, read once when the flags are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryCa {
    /// DER, one per certificate of the bundle.
    certs: Vec<Vec<u8>>,
}

impl RegistryCa {
    /// The certificates of the PEM bundle `pem`; a bundle without one, or
    /// with one that does not decode, is refused.
    pub fn from_pem(pem: &[u8]) -> Result<Self, Error> {
        let bad = |detail: String| Error::BadRegistryCa { detail };
        let certs = CertificateDer::pem_slice_iter(pem)
            .map(|cert| cert.map(|cert| cert.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| bad(format!("not a PEM certificate bundle: {error}")))?;
        if certs.is_empty() {
            return Err(bad("no certificate in the bundle".to_owned()));
        }
        Ok(Self { certs })
    }

    /// As the registry client takes them.
    pub(crate) fn certificates(&self) -> Vec<Certificate> {
        self.certs
            .iter()
            .map(|der| Certificate {
                encoding: CertificateEncoding::Der,
                data: der.clone(),
            })
            .collect()
    }
}
