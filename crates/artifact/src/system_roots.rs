//! The system's trusted certificates, read once per process.
//!
//! The registry makes a client per credentials (`clients.rs`). Left to
//! itself, each client's TLS verifier (reqwest's default,
//! rustls-platform-verifier) read and parsed the whole system store again:
//! on Debian `ca-certificates.crt` and every file of `/etc/ssl/certs`, 145
//! certificates in ~440 files, 10-17 ms on the bench machine, twice per
//! client (oci-client builds a default reqwest client inside each too; that
//! one is out of reach). The store is read here once, by the same reader
//! (rustls-native-certs, which also honours `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`), and each client gets it as its roots, with the CAs of
//! `--bundle-registry-ca`. A store that could not be read at all leaves the
//! client to reqwest's own verifier, as before.

use std::sync::OnceLock;

use oci_client::client::{Certificate, CertificateEncoding};

/// The system's roots as the registry client takes them (DER); empty when
/// none could be read.
pub(crate) fn system_roots() -> &'static [Certificate] {
    static ROOTS: OnceLock<Vec<Certificate>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::warn!(%error, "a certificate of the system store could not be read");
        }
        tracing::debug!(
            certificates = found.certs.len(),
            "system certificate store read"
        );
        found
            .certs
            .into_iter()
            .map(|der| Certificate {
                encoding: CertificateEncoding::Der,
                data: der.to_vec(),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::system_roots;

    #[test]
    fn the_store_is_read_once_per_process() {
        let first = system_roots();
        let second = system_roots();
        assert!(std::ptr::eq(first, second));
    }
}
