//! A throwaway PKI for one control plane: a CA, the apiserver's serving
//! certificate, an admin client certificate and the service-account signing key.
//!
//! Keys are ECDSA P-256 (rcgen's default), written as PKCS#8 PEM, which the
//! apiserver, kubectl and kube-rs (rustls) all read.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::Error;

/// The first address of `SERVICE_CLUSTER_IP_RANGE`: the `kubernetes` Service's ClusterIP,
/// which the serving certificate must name for in-cluster clients.
pub(crate) const SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
const KUBERNETES_SERVICE_IP: &str = "10.0.0.1";

/// The user the admin certificate authenticates as; `system:masters` makes it cluster-admin.
pub(crate) const ADMIN_USER: &str = "isolane-test-admin";
const ADMIN_GROUP: &str = "system:masters";

/// Where the PEM files were written.
#[derive(Debug)]
pub(crate) struct PkiFiles {
    pub(crate) ca_cert: PathBuf,
    pub(crate) serving_cert: PathBuf,
    pub(crate) serving_key: PathBuf,
    pub(crate) admin_cert: PathBuf,
    pub(crate) admin_key: PathBuf,
    /// Signs service-account tokens (`--service-account-signing-key-file`).
    pub(crate) service_account_key: PathBuf,
    /// Verifies them (`--service-account-key-file`, which wants a public key).
    pub(crate) service_account_public_key: PathBuf,
}

/// The router↔node mTLS files one [`write_grpc`] call wrote: a CA, a node
/// serving certificate (`isolane-node`, serverAuth), the router's client
/// certificate (`isolane-router`, clientAuth) and an impostor client
/// certificate from the same CA under another name (`isolane-impostor`).
#[derive(Debug, Clone)]
pub struct GrpcPkiFiles {
    pub ca_cert: PathBuf,
    pub node_cert: PathBuf,
    pub node_key: PathBuf,
    pub router_cert: PathBuf,
    pub router_key: PathBuf,
    pub impostor_cert: PathBuf,
    pub impostor_key: PathBuf,
}

impl GrpcPkiFiles {
    /// Where [`write_grpc`] writes (or wrote) the files in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca_cert: dir.join("grpc-ca.crt"),
            node_cert: dir.join("node.crt"),
            node_key: dir.join("node.key"),
            router_cert: dir.join("router.crt"),
            router_key: dir.join("router.key"),
            impostor_cert: dir.join("impostor.crt"),
            impostor_key: dir.join("impostor.key"),
        }
    }
}

/// Generates a router↔node PKI (its own CA) and writes it into `dir`; the CA
/// is written last, so its presence means the set is complete.
pub fn write_grpc(dir: &Path) -> Result<GrpcPkiFiles, Error> {
    let (ca_cert, ca) = new_ca("isolane-grpc-test-ca")?;
    let files = GrpcPkiFiles::in_dir(dir);
    for (name, usage, cert, key) in [
        (
            "isolane-node",
            ExtendedKeyUsagePurpose::ServerAuth,
            &files.node_cert,
            &files.node_key,
        ),
        (
            "isolane-router",
            ExtendedKeyUsagePurpose::ClientAuth,
            &files.router_cert,
            &files.router_key,
        ),
        (
            "isolane-impostor",
            ExtendedKeyUsagePurpose::ClientAuth,
            &files.impostor_cert,
            &files.impostor_key,
        ),
    ] {
        let leaf_key = generate_key("grpc")?;
        let mut params =
            CertificateParams::new(vec![name.to_owned()]).map_err(cert_error("grpc"))?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        let leaf = params
            .signed_by(&leaf_key, &ca)
            .map_err(cert_error("grpc"))?;
        write_file(cert, &leaf.pem())?;
        write_file(key, &leaf_key.serialize_pem())?;
    }
    write_file(&files.ca_cert, &ca_cert.pem())?;
    Ok(files)
}

fn new_ca(name: &str) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), Error> {
    let ca_key = generate_key("ca")?;
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name.push(DnType::CommonName, name);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(cert_error("ca"))?;
    Ok((ca_cert, Issuer::new(ca_params, ca_key)))
}

/// Generates the PKI and writes it into `dir`.
pub(crate) fn write(dir: &Path) -> Result<PkiFiles, Error> {
    let (ca_cert, ca) = new_ca("isolane-test-ca")?;

    let serving_key = generate_key("serving")?;
    let sans: Vec<String> = [
        "127.0.0.1",
        "localhost",
        crate::node::NODE_IP,
        KUBERNETES_SERVICE_IP,
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let mut serving_params = CertificateParams::new(sans).map_err(cert_error("serving"))?;
    serving_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving_params
        .signed_by(&serving_key, &ca)
        .map_err(cert_error("serving"))?;

    let admin_key = generate_key("admin")?;
    let mut admin_params = CertificateParams::default();
    admin_params
        .distinguished_name
        .push(DnType::CommonName, ADMIN_USER);
    admin_params
        .distinguished_name
        .push(DnType::OrganizationName, ADMIN_GROUP);
    admin_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    admin_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let admin_cert = admin_params
        .signed_by(&admin_key, &ca)
        .map_err(cert_error("admin"))?;

    let service_account_key = generate_key("service-account")?;

    let files = PkiFiles {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        admin_cert: dir.join("admin.crt"),
        admin_key: dir.join("admin.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
    };
    write_file(&files.ca_cert, &ca_cert.pem())?;
    write_file(&files.serving_cert, &serving_cert.pem())?;
    write_file(&files.serving_key, &serving_key.serialize_pem())?;
    write_file(&files.admin_cert, &admin_cert.pem())?;
    write_file(&files.admin_key, &admin_key.serialize_pem())?;
    write_file(
        &files.service_account_key,
        &service_account_key.serialize_pem(),
    )?;
    write_file(
        &files.service_account_public_key,
        &service_account_key.public_key_pem(),
    )?;
    Ok(files)
}

fn generate_key(what: &'static str) -> Result<KeyPair, Error> {
    KeyPair::generate().map_err(cert_error(what))
}

fn cert_error(what: &'static str) -> impl Fn(rcgen::Error) -> Error {
    move |source| Error::Certificate { what, source }
}

pub(crate) fn write_file(path: &Path, contents: &str) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(|source| Error::WriteFile {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_as_pem() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(dir.path()).unwrap();
        for cert in [&files.ca_cert, &files.serving_cert, &files.admin_cert] {
            let pem = std::fs::read_to_string(cert).unwrap();
            assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        }
        for key in [
            &files.serving_key,
            &files.admin_key,
            &files.service_account_key,
        ] {
            let pem = std::fs::read_to_string(key).unwrap();
            assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        }
        let pem = std::fs::read_to_string(&files.service_account_public_key).unwrap();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    }
}
