//! The watch of the Secrets the router may serve: `kubernetes.io/tls`
//! Secrets labelled [`TLS_SECRET_LABEL`]`=true` in the namespaces whose
//! Workers it routes. After each change (once listed) every Secret is read
//! again into a new [`CertStore`] and swapped into the [`SniResolver`]; one
//! that cannot be served is skipped with a warning and counted
//! (`isolane_router_tls_secrets{state="rejected"}`), never fatal.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use isolane_telemetry::ReadyHandle;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use rustls::crypto::CryptoProvider;
use tracing::{info, warn};

use super::{CertError, CertStore, SniResolver, TLS_SECRET_LABEL, load};
use crate::RouterMetrics;
use crate::watch::Relist;

/// The Secret type a certificate must be stored as.
pub const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// What the router reads of a labelled Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretPem {
    /// Its namespace: the one that must own a name to be served it.
    pub namespace: String,
    /// Its `type`.
    pub kind: Option<String>,
    /// `tls.crt`: the chain, leaf first (PEM).
    pub cert: Option<Vec<u8>>,
    /// `tls.key` (PEM).
    pub key: Option<Vec<u8>>,
}

impl SecretPem {
    /// `secret`'s key (`namespace/name`) and what is read of it.
    pub fn read(secret: &Secret) -> (String, Self) {
        let namespace = secret.namespace().unwrap_or_default();
        let field = |name: &str| {
            let data = secret.data.as_ref()?;
            Some(data.get(name)?.0.clone())
        };
        let pem = Self {
            kind: secret.type_.clone(),
            cert: field("tls.crt"),
            key: field("tls.key"),
            namespace,
        };
        (format!("{}/{}", pem.namespace, secret.name_any()), pem)
    }

    /// The certificate, checked.
    fn load(&self, provider: &CryptoProvider) -> Result<super::Loaded, CertError> {
        match self.kind.as_deref() {
            Some(TLS_SECRET_TYPE) => {}
            other => return Err(CertError::Type(other.unwrap_or_default().to_owned())),
        }
        let cert = self.cert.as_deref().ok_or(CertError::Missing("tls.crt"))?;
        let key = self.key.as_deref().ok_or(CertError::Missing("tls.key"))?;
        load(cert, key, provider)
    }
}

/// The store of every servable Secret of `secrets` (keyed `namespace/name`,
/// added in that order), and how many were rejected.
pub fn build(secrets: &HashMap<String, SecretPem>) -> (CertStore, usize) {
    let provider = rustls::crypto::ring::default_provider();
    let mut keys: Vec<&String> = secrets.keys().collect();
    keys.sort();
    let mut store = CertStore::default();
    let mut rejected = 0;
    for key in keys {
        let Some(secret) = secrets.get(key) else {
            continue;
        };
        match secret.load(&provider) {
            Ok(loaded) => store.insert(&secret.namespace, &loaded),
            Err(error) => {
                rejected += 1;
                warn!(secret = %key, %error, kind = error.kind(), "not serving a TLS Secret");
            }
        }
    }
    (store, rejected)
}

/// Watches the labelled TLS Secrets (in `namespace`, or all) into
/// `resolver` until the watch stream ends; `ready` after the first list.
pub async fn secrets(
    client: Client,
    namespace: Option<&str>,
    resolver: Arc<SniResolver>,
    metrics: Arc<RouterMetrics>,
    ready: ReadyHandle,
) {
    let api: Api<Secret> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let config = watcher::Config::default().labels(&format!("{TLS_SECRET_LABEL}=true"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut state = Relist::<SecretPem>::default();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                if state.apply(event, SecretPem::read) && state.synced {
                    let (store, rejected) = build(&state.objects);
                    info!(served = store.len(), rejected, "TLS certificates loaded");
                    metrics.tls_secrets(store.len(), rejected);
                    resolver.replace(store);
                    ready.set_ready();
                }
            }
            Err(error) => {
                metrics.watch_error("tls_secrets");
                warn!(%error, "TLS Secret watch failed; retrying");
            }
        }
    }
}
