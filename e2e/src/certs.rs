//! A webhook's serving certificate for `127.0.0.1`, from the tests' PKI
//! ([`isolane_testenv::TestCa`]), for a webhook the test apiserver calls over
//! HTTPS (`clientConfig.url` + `caBundle`).

use std::path::{Path, PathBuf};

use isolane_testenv::{Leaf, TestCa};

/// PEM files of a serving certificate and the CA that signed it.
#[derive(Clone, Debug)]
pub struct ServingCert {
    /// The CA certificate, PEM (the `caBundle`, base64-encoded by the caller).
    pub ca_pem: String,
    /// The serving certificate file.
    pub cert_path: PathBuf,
    /// The private key file.
    pub key_path: PathBuf,
}

/// Generates a CA and a certificate for `127.0.0.1` and `localhost`, writing the
/// certificate and key into `dir` (`webhook.crt`, `webhook.key`).
///
/// # Panics
/// When generation or writing fails.
pub fn localhost_serving_cert(dir: &Path) -> ServingCert {
    let ca = TestCa::new("isolane-e2e-webhook-ca").expect("a test CA");
    let cert = ca
        .issue(Leaf::server(
            "isolane-operator-webhook",
            &["127.0.0.1", "localhost"],
        ))
        .expect("a serving certificate");
    let cert_path = dir.join("webhook.crt");
    let key_path = dir.join("webhook.key");
    cert.write(&cert_path, &key_path)
        .expect("write webhook.crt and webhook.key");
    ServingCert {
        ca_pem: ca.cert_pem(),
        cert_path,
        key_path,
    }
}
