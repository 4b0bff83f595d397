//! A throwaway CA and a serving certificate for `127.0.0.1`, for a webhook the
//! test apiserver calls over HTTPS (`clientConfig.url` + `caBundle`).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

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
/// certificate and key into `dir`.
///
/// # Panics
/// When generation or writing fails.
pub fn localhost_serving_cert(dir: &Path) -> ServingCert {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "isolane-e2e-webhook-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let ca = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().expect("serving key");
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .expect("serving params");
    params
        .distinguished_name
        .push(DnType::CommonName, "isolane-operator-webhook");
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca).expect("serving certificate");

    let cert_path = dir.join("webhook.crt");
    let key_path = dir.join("webhook.key");
    std::fs::write(&cert_path, cert.pem()).expect("write webhook.crt");
    std::fs::write(&key_path, key.serialize_pem()).expect("write webhook.key");
    ServingCert {
        ca_pem: ca_cert.pem(),
        cert_path,
        key_path,
    }
}
