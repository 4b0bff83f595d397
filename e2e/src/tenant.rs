//! A tenant as the tests run one: a ServiceAccount of a namespace bound to
//! one of the chart's ClusterRoles there, its token, and a kubeconfig whose
//! user is that token (what `isolane tail --endpoint` and `isolane d1
//! migrations --remote --endpoint` send), or a client certificate.

use std::path::Path;

use isolane_testenv::ControlPlane;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

/// Makes ServiceAccount `account` in `namespace`, binds it to ClusterRole
/// `role` there (RoleBinding `<account>-<role>`), and returns a token of
/// it valid for an hour.
pub async fn account_token(
    cp: &ControlPlane,
    namespace: &str,
    account: &str,
    role: &str,
) -> String {
    let client = cp.client();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let service_account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(account.to_owned()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    accounts
        .create(&PostParams::default(), &service_account)
        .await
        .expect("create the ServiceAccount");
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some(format!("{account}-{role}")),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: role.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: account.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Subject::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("create the RoleBinding");
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            bound_object_ref: None,
        },
        ..TokenRequest::default()
    };
    accounts
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .expect("a token for the ServiceAccount")
        .status
        .expect("the token")
        .token
}

/// Writes to `path` the control plane's kubeconfig with its user replaced
/// by `token`.
pub fn kubeconfig_with(cp: &ControlPlane, token: &str, path: &Path) {
    let user = kube::config::AuthInfo {
        token: Some(token.to_owned().into()),
        ..kube::config::AuthInfo::default()
    };
    kubeconfig_with_user(cp, &user, path);
}

/// Writes to `path` the control plane's kubeconfig with its user replaced
/// by the client certificate `cert` and its key `key` (files).
pub fn kubeconfig_with_certificate(cp: &ControlPlane, (cert, key): (&Path, &Path), path: &Path) {
    let user = kube::config::AuthInfo {
        client_certificate: Some(cert.display().to_string()),
        client_key: Some(key.display().to_string()),
        ..kube::config::AuthInfo::default()
    };
    kubeconfig_with_user(cp, &user, path);
}

/// Writes to `path` the control plane's kubeconfig with its user replaced
/// by `user`.
fn kubeconfig_with_user(cp: &ControlPlane, user: &kube::config::AuthInfo, path: &Path) {
    let mut config =
        kube::config::Kubeconfig::read_from(cp.kubeconfig_path()).expect("the admin kubeconfig");
    for entry in &mut config.auth_infos {
        entry.auth_info = Some(user.clone());
    }
    let yaml = serde_yaml::to_string(&config).expect("a kubeconfig as YAML");
    std::fs::write(path, yaml).expect("write the tenant kubeconfig");
}
