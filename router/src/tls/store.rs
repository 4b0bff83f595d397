//! The certificates the router may serve, by the namespace of their Secret
//! and the DNS names they carry. Built whole from the watched Secrets and
//! swapped in at once ([`super::SniResolver::replace`]).

use std::collections::HashMap;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

use super::Loaded;

/// Certificates by namespace, then by name (`a.example.com`, or
/// `*.example.com` for a wildcard).
#[derive(Debug, Default)]
pub struct CertStore {
    namespaces: HashMap<String, HashMap<String, Arc<CertifiedKey>>>,
    certificates: usize,
}

impl CertStore {
    /// Adds `loaded`, a certificate of a Secret in `namespace`. A name some
    /// earlier certificate of the namespace carries keeps that one: callers
    /// add in a stable order (the Secrets' names), so which is served does
    /// not depend on the order events arrive in.
    pub fn insert(&mut self, namespace: &str, loaded: &Loaded) {
        let names = self.namespaces.entry(namespace.to_owned()).or_default();
        for name in &loaded.names {
            names
                .entry(name.clone())
                .or_insert_with(|| Arc::clone(&loaded.key));
        }
        self.certificates += 1;
    }

    /// The certificate of `namespace` for the (normalised) host `name`: one
    /// naming it exactly, else one whose wildcard covers it (one label deep,
    /// as a route's wildcard host is).
    pub fn find(&self, namespace: &str, name: &str) -> Option<&Arc<CertifiedKey>> {
        let names = self.namespaces.get(namespace)?;
        if let Some(exact) = names.get(name) {
            return Some(exact);
        }
        let (_, parent) = name.split_once('.')?;
        names.get(&format!("*.{parent}"))
    }

    /// How many certificates were added.
    pub fn len(&self) -> usize {
        self.certificates
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.certificates == 0
    }
}
