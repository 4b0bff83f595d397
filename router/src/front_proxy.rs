//! Who may call the aggregated API server (the tail API, the custom metrics
//! API): only the Kubernetes API server in front of
//! it, as any aggregated API server (metrics-server, k8s.io/apiserver's
//! `RequestHeaderAuthRequestController`) decides it.
//!
//! The apiserver publishes how it proxies in the ConfigMap
//! `kube-system/extension-apiserver-authentication`: the CA of its
//! front-proxy client certificate, the names that certificate may carry,
//! and the headers that carry the caller's identity. The router reads it
//! once at start; the TLS handshake requires a client certificate chained
//! to that CA (so nobody else reaches HTTP at all), and each request's
//! certificate must name one of the allowed names before its identity
//! headers are believed. Nothing here asks the apiserver anything per
//! request: the apiserver authenticated the caller already.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::HeaderMap;
use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// Where the apiserver publishes its front-proxy settings.
pub const CONFIGMAP_NAMESPACE: &str = "kube-system";
pub const CONFIGMAP_NAME: &str = "extension-apiserver-authentication";

/// The ConfigMap's keys (k8s.io/apiserver's names).
const CA_KEY: &str = "requestheader-client-ca-file";
const ALLOWED_NAMES_KEY: &str = "requestheader-allowed-names";
const USERNAME_HEADERS_KEY: &str = "requestheader-username-headers";
const GROUP_HEADERS_KEY: &str = "requestheader-group-headers";
const EXTRA_PREFIXES_KEY: &str = "requestheader-extra-headers-prefix";

/// Why the tail API cannot start.
#[derive(Debug, thiserror::Error)]
pub enum FrontProxyError {
    #[error("reading the ConfigMap kube-system/extension-apiserver-authentication: {0}")]
    Read(#[source] kube::Error),
    #[error(
        "the ConfigMap kube-system/extension-apiserver-authentication has no {CA_KEY}: the API server runs without --requestheader-client-ca-file, so it cannot front an aggregated API"
    )]
    NoCa,
    #[error(
        "{key} in kube-system/extension-apiserver-authentication is not a JSON list of strings"
    )]
    NotAList { key: &'static str },
    #[error("the front-proxy CA is not usable: {0}")]
    Ca(String),
    #[error("reading {what}: {reason}")]
    ServingCert { what: String, reason: String },
    #[error("invalid TLS configuration: {0}")]
    Tls(String),
}

/// How the apiserver in front proxies, as it published it.
#[derive(Debug, Clone, Default)]
pub struct FrontProxy {
    /// The CA of the front-proxy client certificate (PEM).
    pub ca_pem: String,
    /// The common names the client certificate may carry; empty: any
    /// certificate of the CA.
    pub allowed_names: Vec<String>,
    /// Headers naming the user (the first present wins).
    pub username_headers: Vec<String>,
    /// Headers naming the user's groups (every value of each).
    pub group_headers: Vec<String>,
    /// Prefixes of headers carrying the user's extra attributes
    /// (`X-Remote-Extra-<key>`, the key percent-encoded).
    pub extra_prefixes: Vec<String>,
}

impl FrontProxy {
    /// Reads the apiserver's published settings.
    pub async fn read(client: kube::Client) -> Result<Self, FrontProxyError> {
        let config = Api::<ConfigMap>::namespaced(client, CONFIGMAP_NAMESPACE)
            .get(CONFIGMAP_NAME)
            .await
            .map_err(FrontProxyError::Read)?;
        Self::from_data(&config.data.unwrap_or_default())
    }

    /// The settings of the ConfigMap's `data`.
    pub fn from_data(
        data: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, FrontProxyError> {
        let ca_pem = data
            .get(CA_KEY)
            .filter(|pem| !pem.trim().is_empty())
            .ok_or(FrontProxyError::NoCa)?
            .clone();
        let list = |key: &'static str| -> Result<Vec<String>, FrontProxyError> {
            match data.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
                None => Ok(Vec::new()),
                Some(json) => {
                    serde_json::from_str(json).map_err(|_| FrontProxyError::NotAList { key })
                }
            }
        };
        Ok(Self {
            ca_pem,
            allowed_names: list(ALLOWED_NAMES_KEY)?,
            username_headers: list(USERNAME_HEADERS_KEY)?,
            group_headers: list(GROUP_HEADERS_KEY)?,
            extra_prefixes: list(EXTRA_PREFIXES_KEY)?,
        })
    }

    /// The TLS server: serves `cert_pem`/`key_pem` and requires a client
    /// certificate chained to the front-proxy CA (HTTP/1.1).
    pub fn server_config(
        &self,
        cert_pem: &[u8],
        key_pem: &[u8],
    ) -> Result<Arc<rustls::ServerConfig>, FrontProxyError> {
        let serving = |what: &str, reason: String| FrontProxyError::ServingCert {
            what: what.to_owned(),
            reason,
        };
        let certs = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| serving("the serving certificate", e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| serving("the serving key", e.to_string()))?;
        let mut roots = RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            let ca = ca.map_err(|e| FrontProxyError::Ca(e.to_string()))?;
            roots
                .add(ca)
                .map_err(|e| FrontProxyError::Ca(e.to_string()))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| FrontProxyError::Ca(e.to_string()))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| FrontProxyError::Tls(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .map_err(|e| FrontProxyError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// Whether the (already verified) client certificate `end_entity` is
    /// the front proxy's: its common name is an allowed one.
    pub fn allows(&self, end_entity: &CertificateDer<'_>) -> bool {
        if self.allowed_names.is_empty() {
            return true;
        }
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(end_entity.as_ref()) else {
            return false;
        };
        cert.subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok())
            .any(|cn| self.allowed_names.iter().any(|name| name == cn))
    }

    /// The caller the apiserver authenticated, from the request's headers;
    /// `None` when no user header is set.
    pub fn identity(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let username = self
            .username_headers
            .iter()
            .find_map(|name| headers.get(name.as_str())?.to_str().ok())
            .filter(|user| !user.is_empty())?
            .to_owned();
        let groups: Vec<String> = self
            .group_headers
            .iter()
            .flat_map(|name| headers.get_all(name.as_str()))
            .filter_map(|value| value.to_str().ok())
            .filter(|group| !group.is_empty())
            .map(str::to_owned)
            .collect();
        let extra = self.extra(headers);
        Some(UserInfo {
            username: Some(username),
            groups: Some(groups),
            extra: (!extra.is_empty()).then_some(extra),
            ..UserInfo::default()
        })
    }

    /// The user's extra attributes: every header under an extra prefix,
    /// keyed by the rest of its name, lower-cased and percent-decoded (as
    /// k8s.io/apiserver's request-header authenticator reads them).
    fn extra(&self, headers: &HeaderMap) -> BTreeMap<String, Vec<String>> {
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            let key = self.extra_prefixes.iter().find_map(|prefix| {
                let name = name.as_str();
                let head = name.get(..prefix.len())?;
                head.eq_ignore_ascii_case(prefix)
                    .then(|| name.get(prefix.len()..))
                    .flatten()
            });
            let (Some(key), Ok(value)) = (key, value.to_str()) else {
                continue;
            };
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .to_lowercase();
            extra.entry(key).or_default().push(value.to_owned());
        }
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> BTreeMap<String, String> {
        BTreeMap::from([
            (CA_KEY.to_owned(), "PEM".to_owned()),
            (
                ALLOWED_NAMES_KEY.to_owned(),
                "[\"front-proxy-client\"]".to_owned(),
            ),
            (
                USERNAME_HEADERS_KEY.to_owned(),
                "[\"X-Remote-User\"]".to_owned(),
            ),
            (
                GROUP_HEADERS_KEY.to_owned(),
                "[\"X-Remote-Group\"]".to_owned(),
            ),
            (
                EXTRA_PREFIXES_KEY.to_owned(),
                "[\"X-Remote-Extra-\"]".to_owned(),
            ),
        ])
    }

    #[test]
    fn reads_the_published_settings_and_refuses_an_apiserver_without_a_ca() {
        let front = FrontProxy::from_data(&data()).unwrap();
        assert_eq!(front.allowed_names, ["front-proxy-client"]);
        assert_eq!(front.username_headers, ["X-Remote-User"]);
        let mut without = data();
        without.remove(CA_KEY);
        assert!(matches!(
            FrontProxy::from_data(&without),
            Err(FrontProxyError::NoCa)
        ));
        let mut garbled = data();
        garbled.insert(GROUP_HEADERS_KEY.to_owned(), "X-Remote-Group".to_owned());
        assert!(matches!(
            FrontProxy::from_data(&garbled),
            Err(FrontProxyError::NotAList { .. })
        ));
    }

    #[test]
    fn the_identity_is_the_user_header_and_every_group_header() {
        let front = FrontProxy::from_data(&data()).unwrap();
        let mut headers = HeaderMap::new();
        assert!(front.identity(&headers).is_none());
        headers.insert("x-remote-user", "alice".parse().unwrap());
        headers.append("x-remote-group", "team-a".parse().unwrap());
        headers.append("x-remote-group", "system:authenticated".parse().unwrap());
        let user = front.identity(&headers).unwrap();
        assert_eq!(user.username.as_deref(), Some("alice"));
        assert_eq!(
            user.groups.unwrap(),
            ["team-a", "system:authenticated"].map(str::to_owned)
        );
        assert!(user.extra.is_none());
        headers.append("x-remote-extra-scopes", "view".parse().unwrap());
        headers.append("x-remote-extra-scopes", "edit".parse().unwrap());
        headers.append("x-remote-extra-example.org%2fteam", "a".parse().unwrap());
        let extra = front.identity(&headers).unwrap().extra.unwrap();
        assert_eq!(extra["scopes"], ["view", "edit"]);
        assert_eq!(extra["example.org/team"], ["a"]);
    }

    #[test]
    fn only_an_allowed_common_name_is_the_front_proxy() {
        let ca = isolane_testenv::TestCa::new("front-proxy-ca").unwrap();
        let front = FrontProxy {
            ca_pem: ca.cert_pem(),
            ..FrontProxy::from_data(&data()).unwrap()
        };
        let allowed = ca
            .issue(isolane_testenv::Leaf::client("front-proxy-client"))
            .unwrap();
        let other = ca.issue(isolane_testenv::Leaf::client("someone")).unwrap();
        assert!(front.allows(&CertificateDer::from(allowed.cert_der)));
        assert!(!front.allows(&CertificateDer::from(other.cert_der)));
    }
}
