//! Who may tail a Worker: Kubernetes decides. The caller's bearer token
//! (from its own kubeconfig) is checked with a TokenReview; the identity it
//! names must be allowed `get` on `workers/tail` (group `isolane.dev`) in
//! the Worker's namespace, by a SubjectAccessReview. The router holds only
//! the right to create those two reviews (`system:auth-delegator`'s).

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

/// The permission a tail needs, as RBAC names it.
pub const GROUP: &str = "isolane.dev";
pub const RESOURCE: &str = "workers";
pub const SUBRESOURCE: &str = "tail";
pub const VERB: &str = "get";

/// Why a tail was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("no bearer token: isolane tail sends the token of your kubeconfig's user")]
    NoToken,
    #[error("the token was not accepted by the Kubernetes API server")]
    BadToken,
    #[error(
        "{user} may not tail workers in namespace {namespace}: it needs get on workers/tail (group isolane.dev) there, e.g. a RoleBinding to the ClusterRole isolane-worker-tail{reason}"
    )]
    Forbidden {
        user: String,
        namespace: String,
        reason: String,
    },
    #[error("the access check failed: {0}")]
    Review(#[source] kube::Error),
}

impl Refused {
    /// The HTTP status the tail endpoint answers with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Refused::NoToken | Refused::BadToken => http::StatusCode::UNAUTHORIZED,
            Refused::Forbidden { .. } => http::StatusCode::FORBIDDEN,
            Refused::Review(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// Checks that `token`'s identity may tail Worker `name` in `namespace`;
/// returns the user name, for logs.
pub async fn authorize(
    client: &kube::Client,
    token: Option<&str>,
    namespace: &str,
    name: &str,
) -> Result<String, Refused> {
    let token = token.filter(|t| !t.is_empty()).ok_or(Refused::NoToken)?;
    let user = authenticate(client, token).await?;
    let username = user.username.clone().unwrap_or_default();
    let decided = Api::<SubjectAccessReview>::all(client.clone())
        .create(
            &PostParams::default(),
            &access_review(user, namespace, name),
        )
        .await
        .map_err(Refused::Review)?;
    let decision = decided.status.unwrap_or_default();
    if decision.allowed {
        return Ok(username);
    }
    let reason = decision
        .reason
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    Err(Refused::Forbidden {
        user: username,
        namespace: namespace.to_owned(),
        reason,
    })
}

/// Who `token` is, by the apiserver's TokenReview.
async fn authenticate(client: &kube::Client, token: &str) -> Result<UserInfo, Refused> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            audiences: None,
        },
        ..TokenReview::default()
    };
    let reviewed = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(Refused::Review)?;
    let status = reviewed.status.unwrap_or_default();
    match (status.authenticated, status.user) {
        (Some(true), Some(user)) => Ok(user),
        _ => Err(Refused::BadToken),
    }
}

/// The question for the apiserver: may `user` get `workers/tail` of Worker
/// `name` in `namespace`?
fn access_review(user: UserInfo, namespace: &str, name: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user
                .extra
                .map(|extra| extra.into_iter().collect::<BTreeMap<_, _>>()),
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_owned()),
                resource: Some(RESOURCE.to_owned()),
                subresource: Some(SUBRESOURCE.to_owned()),
                verb: Some(VERB.to_owned()),
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}
