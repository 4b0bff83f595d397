//! The tests' one PKI: [`TestCa`], a throwaway certificate authority that
//! issues server and client certificates ([`Leaf`]), and the sets built from
//! it — one control plane's (a CA, the apiserver's serving certificate, an
//! admin client certificate, the service-account signing key) and the
//! router↔node mTLS set ([`write_grpc`]).
//!
//! Keys are ECDSA P-256 (rcgen's default), written as PKCS#8 PEM, which the
//! apiserver, kubectl, kube-rs and the project's binaries (rustls) all read.

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

/// The user the tenant certificate authenticates as: no group but
/// `system:authenticated`, so RBAC grants it nothing until a test binds it.
pub const TENANT_USER: &str = "isolane-test-tenant";

/// The common name of the apiserver's front-proxy client certificate (the
/// one it presents to aggregated API servers), and so the one name
/// `--requestheader-allowed-names` allows.
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// The tenant certificate and key, in the control plane's directory.
pub(crate) const TENANT_CERT: &str = "tenant.crt";
pub(crate) const TENANT_KEY: &str = "tenant.key";

/// Where the PEM files were written.
#[derive(Debug)]
pub(crate) struct PkiFiles {
    pub(crate) ca_cert: PathBuf,
    pub(crate) serving_cert: PathBuf,
    pub(crate) serving_key: PathBuf,
    pub(crate) admin_cert: PathBuf,
    pub(crate) admin_key: PathBuf,
    /// A client certificate of [`TENANT_USER`], from the same CA as the admin's.
    pub(crate) tenant_cert: PathBuf,
    pub(crate) tenant_key: PathBuf,
    /// The front-proxy CA (`--requestheader-client-ca-file`): its own CA, as
    /// kubeadm makes it, so no client certificate of users can pass for the
    /// apiserver in front of an aggregated API.
    pub(crate) front_proxy_ca_cert: PathBuf,
    /// The apiserver's client certificate towards aggregated API servers
    /// (`--proxy-client-cert-file`, CN [`FRONT_PROXY_CLIENT`]).
    pub(crate) front_proxy_client_cert: PathBuf,
    pub(crate) front_proxy_client_key: PathBuf,
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

// === impl TestCa ===

/// A throwaway certificate authority (ECDSA P-256) that issues test certificates.
pub struct TestCa {
    cert: rcgen::Certificate,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// What a leaf certificate is for (its extended key usage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// A TLS server (`serverAuth`).
    Server,
    /// A TLS client (`clientAuth`).
    Client,
    /// Both (`serverAuth` and `clientAuth`): a runtime node, which serves
    /// the router and calls its peers (Helm's `genSignedCert` makes such).
    ServerAndClient,
}

/// The subject of a leaf certificate that [`TestCa::issue`] signs.
#[derive(Clone, Copy, Debug)]
pub struct Leaf<'a> {
    pub common_name: &'a str,
    /// The subject's organisation (Kubernetes reads it as the user's group).
    pub organization: Option<&'a str>,
    /// Subject alternative names: DNS names or IP addresses.
    pub names: &'a [&'a str],
    pub usage: Usage,
}

impl<'a> Leaf<'a> {
    /// A server certificate for `names`.
    pub fn server(common_name: &'a str, names: &'a [&'a str]) -> Self {
        Self {
            common_name,
            organization: None,
            names,
            usage: Usage::Server,
        }
    }

    /// A client certificate for `common_name`.
    pub fn client(common_name: &'a str) -> Self {
        Self {
            common_name,
            organization: None,
            names: &[],
            usage: Usage::Client,
        }
    }
}

/// A certificate that [`TestCa::issue`] signed, and its private key.
#[derive(Clone, Debug)]
pub struct TestCert {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    /// PKCS#8.
    pub key_pem: String,
    /// PKCS#8.
    pub key_der: Vec<u8>,
}

impl TestCert {
    /// Writes the certificate and the key as PEM files.
    pub fn write(&self, cert: &Path, key: &Path) -> Result<(), Error> {
        write_file(cert, &self.cert_pem)?;
        write_file(key, &self.key_pem)
    }
}

impl TestCa {
    /// A new CA whose subject is `CN=<common_name>`.
    pub fn new(common_name: &str) -> Result<Self, Error> {
        let ca_key = generate_key("ca")?;
        let mut ca_params = CertificateParams::default();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = ca_params.self_signed(&ca_key).map_err(cert_error("ca"))?;
        Ok(Self {
            cert,
            issuer: Issuer::new(ca_params, ca_key),
        })
    }

    /// The CA certificate, PEM (a trust bundle; a `caBundle` once base64-encoded).
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA's private key, PKCS#8 PEM (for an issuer that signs with it,
    /// such as cert-manager's CA issuer).
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// Signs a new certificate, with a new key, for `leaf`.
    pub fn issue(&self, leaf: Leaf<'_>) -> Result<TestCert, Error> {
        let what = match leaf.usage {
            Usage::Server | Usage::ServerAndClient => "server",
            Usage::Client => "client",
        };
        let key = generate_key(what)?;
        let names: Vec<String> = leaf.names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names).map_err(cert_error(what))?;
        params
            .distinguished_name
            .push(DnType::CommonName, leaf.common_name);
        if let Some(organization) = leaf.organization {
            params
                .distinguished_name
                .push(DnType::OrganizationName, organization);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = match leaf.usage {
            Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
            Usage::ServerAndClient => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        };
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(cert_error(what))?;
        Ok(TestCert {
            cert_pem: cert.pem(),
            cert_der: cert.der().to_vec(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        })
    }
}

/// Generates a router↔node PKI (its own CA) and writes it into `dir`; the CA
/// is written last, so its presence means the set is complete.
pub fn write_grpc(dir: &Path) -> Result<GrpcPkiFiles, Error> {
    let ca = TestCa::new("isolane-grpc-test-ca")?;
    let files = GrpcPkiFiles::in_dir(dir);
    let node = Leaf {
        usage: Usage::ServerAndClient,
        ..Leaf::server("isolane-node", &["isolane-node"])
    };
    let router = Leaf {
        names: &["isolane-router"],
        ..Leaf::client("isolane-router")
    };
    let impostor = Leaf {
        names: &["isolane-impostor"],
        ..Leaf::client("isolane-impostor")
    };
    for (leaf, cert, key) in [
        (node, &files.node_cert, &files.node_key),
        (router, &files.router_cert, &files.router_key),
        (impostor, &files.impostor_cert, &files.impostor_key),
    ] {
        ca.issue(leaf)?.write(cert, key)?;
    }
    write_file(&files.ca_cert, &ca.cert_pem())?;
    Ok(files)
}

/// Generates the PKI and writes it into `dir`.
pub(crate) fn write(dir: &Path) -> Result<PkiFiles, Error> {
    let ca = TestCa::new("isolane-test-ca")?;
    let serving = ca.issue(Leaf::server(
        "kube-apiserver",
        &[
            "127.0.0.1",
            "localhost",
            crate::network::NODE_IP,
            KUBERNETES_SERVICE_IP,
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
    ))?;
    let admin = ca.issue(Leaf {
        organization: Some(ADMIN_GROUP),
        ..Leaf::client(ADMIN_USER)
    })?;

    let tenant = ca.issue(Leaf::client(TENANT_USER))?;
    let front_proxy_ca = TestCa::new("isolane-test-front-proxy-ca")?;
    let front_proxy_client = front_proxy_ca.issue(Leaf::client(FRONT_PROXY_CLIENT))?;
    let service_account_key = generate_key("service-account")?;

    let files = PkiFiles {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        admin_cert: dir.join("admin.crt"),
        admin_key: dir.join("admin.key"),
        tenant_cert: dir.join(TENANT_CERT),
        tenant_key: dir.join(TENANT_KEY),
        front_proxy_ca_cert: dir.join("front-proxy-ca.crt"),
        front_proxy_client_cert: dir.join("front-proxy-client.crt"),
        front_proxy_client_key: dir.join("front-proxy-client.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
    };
    write_file(&files.ca_cert, &ca.cert_pem())?;
    serving.write(&files.serving_cert, &files.serving_key)?;
    admin.write(&files.admin_cert, &files.admin_key)?;
    tenant.write(&files.tenant_cert, &files.tenant_key)?;
    write_file(&files.front_proxy_ca_cert, &front_proxy_ca.cert_pem())?;
    front_proxy_client.write(
        &files.front_proxy_client_cert,
        &files.front_proxy_client_key,
    )?;
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
        for cert in [
            &files.ca_cert,
            &files.serving_cert,
            &files.admin_cert,
            &files.tenant_cert,
            &files.front_proxy_ca_cert,
            &files.front_proxy_client_cert,
        ] {
            let pem = std::fs::read_to_string(cert).unwrap();
            assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        }
        for key in [
            &files.serving_key,
            &files.admin_key,
            &files.tenant_key,
            &files.front_proxy_client_key,
            &files.service_account_key,
        ] {
            let pem = std::fs::read_to_string(key).unwrap();
            assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        }
        let pem = std::fs::read_to_string(&files.service_account_public_key).unwrap();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    }
}
