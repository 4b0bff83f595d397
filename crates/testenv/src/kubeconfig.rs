//! The kubeconfig file that kubectl and kube-rs share.

use std::path::Path;

use kube::config::{
    Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

use crate::Error;
use crate::pki::PkiFiles;

const NAME: &str = "isolane-test";

/// Writes a kubeconfig for `server` that authenticates with the admin client certificate.
/// It refers to the PEM files by path, so it is valid as long as they are.
pub(crate) fn write(path: &Path, server: &str, pki: &PkiFiles) -> Result<(), Error> {
    let display = |p: &Path| Some(p.display().to_string());
    let kubeconfig = Kubeconfig {
        api_version: Some("v1".to_owned()),
        kind: Some("Config".to_owned()),
        clusters: vec![NamedCluster {
            name: NAME.to_owned(),
            cluster: Some(Cluster {
                server: Some(server.to_owned()),
                certificate_authority: display(&pki.ca_cert),
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: NAME.to_owned(),
            auth_info: Some(kube::config::AuthInfo {
                client_certificate: display(&pki.admin_cert),
                client_key: display(&pki.admin_key),
                ..kube::config::AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: NAME.to_owned(),
            context: Some(Context {
                cluster: NAME.to_owned(),
                user: Some(NAME.to_owned()),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(NAME.to_owned()),
        ..Kubeconfig::default()
    };
    let yaml = serde_yaml::to_string(&kubeconfig).map_err(Error::SerializeKubeconfig)?;
    crate::pki::write_file(path, &yaml)
}

/// The client configuration of the current context of the kubeconfig at `path`.
pub(crate) async fn load(path: &Path) -> Result<kube::Config, Error> {
    let kubeconfig_error = |source| Error::Kubeconfig {
        path: path.to_owned(),
        source,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(kubeconfig_error)
}

/// A client for the current context of the kubeconfig at `path`.
pub(crate) async fn client(path: &Path) -> Result<kube::Client, Error> {
    kube::Client::try_from(load(path).await?).map_err(Error::Client)
}
