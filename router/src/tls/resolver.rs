//! Chooses a handshake's certificate by SNI: the certificate of the
//! namespace that owns the name, or none (the handshake is refused).

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::CertStore;
use crate::Proxy;
use crate::routes::normalize_host;

/// Which namespace a host belongs to, by the router's ownership rule.
pub trait HostOwners: Send + Sync + std::fmt::Debug + 'static {
    /// The namespace admitted to the (normalised) host `name`, exactly or
    /// through its one-label wildcard; `None` when no namespace is.
    fn namespace_of(&self, name: &str) -> Option<String>;
}

/// The route table now: the hosts its Workers were admitted to.
impl HostOwners for Proxy {
    fn namespace_of(&self, name: &str) -> Option<String> {
        self.routes().host_namespace(name).map(str::to_owned)
    }
}

/// The router's certificate resolver: one for the process, shared by the
/// `ServerConfig` and the Secret watch that replaces its certificates.
#[derive(Debug)]
pub struct SniResolver {
    certs: ArcSwap<CertStore>,
    owners: Box<dyn HostOwners>,
}

impl SniResolver {
    /// A resolver with no certificate yet, asking `owners` who owns a name.
    pub fn new(owners: impl HostOwners) -> Self {
        Self {
            certs: ArcSwap::from_pointee(CertStore::default()),
            owners: Box::new(owners),
        }
    }

    /// Serves `certs` from the next handshake on; open connections keep
    /// the certificate they were made with.
    pub fn replace(&self, certs: CertStore) {
        self.certs.store(Arc::new(certs));
    }

    /// The certificate a handshake for `host` gets: its owner's, if the
    /// owner has one for it.
    pub fn certificate_for(&self, host: &str) -> Option<Arc<CertifiedKey>> {
        let host = normalize_host(host);
        let namespace = self.owners.namespace_of(&host)?;
        self.certs.load().find(&namespace, &host).cloned()
    }

    /// Whether a handshake for `host` would succeed.
    pub fn has_certificate(&self, host: &str) -> bool {
        self.certificate_for(host).is_some()
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // No SNI: no name to own, so nothing to serve.
        let name = hello.server_name()?;
        self.certificate_for(name)
    }
}
