//! The two questions the tail endpoint asks the apiserver — who is this
//! token (TokenReview), may that identity tail this Worker
//! (SubjectAccessReview) — behind a trait, so that what stands in front of
//! them ([`super::access`]: caches, limits) is tested with a fake.

use std::collections::BTreeMap;
use std::future::Future;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube::Api;
use kube::api::PostParams;

/// The permission a tail needs, as RBAC names it (what the
/// SubjectAccessReview asks).
pub const GROUP: &str = "isolane.dev";
pub const RESOURCE: &str = "workers";
pub const SUBRESOURCE: &str = "tail";
pub const VERB: &str = "get";

/// A permission the router's endpoints ask Kubernetes about (a
/// SubjectAccessReview in group [`GROUP`]), and how a refusal names it.
#[derive(Debug)]
pub struct Permission {
    pub verb: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// What it allows, as a refusal says it: `tail workers`.
    pub doing: &'static str,
    /// The chart's ClusterRole that grants it.
    pub role: &'static str,
    /// The command that asks for it, as a refusal names it.
    pub command: &'static str,
}

/// Tailing a Worker: `get` on `workers/tail`.
pub static TAIL: Permission = Permission {
    verb: VERB,
    resource: RESOURCE,
    subresource: SUBRESOURCE,
    doing: "tail workers",
    role: "isolane-worker-tail",
    command: "isolane tail",
};

/// Applying D1 migrations to a database (`isolane d1 migrations apply
/// --remote`): `create` on `d1databases/migrations`, the database's name
/// the object's.
pub static D1_MIGRATE: Permission = Permission {
    verb: "create",
    resource: "d1databases",
    subresource: "migrations",
    doing: "apply D1 migrations",
    role: "isolane-d1-migrate",
    command: "isolane d1 migrations apply --remote",
};

/// Listing a database's applied migrations (`isolane d1 migrations list
/// --remote`): `get` on `d1databases/migrations`.
pub static D1_LIST: Permission = Permission {
    verb: "get",
    resource: "d1databases",
    subresource: "migrations",
    doing: "list D1 migrations",
    role: "isolane-d1-migrate",
    command: "isolane d1 migrations list --remote",
};

/// Asks the apiserver.
pub trait Reviewer: Send + Sync {
    /// Who `token` is, by a TokenReview: `None` when the apiserver does not
    /// accept it.
    fn review_token(
        &self,
        token: &str,
    ) -> impl Future<Output = Result<Option<UserInfo>, kube::Error>> + Send;

    /// The apiserver's answer to `review`.
    fn review_access(
        &self,
        review: SubjectAccessReview,
    ) -> impl Future<Output = Result<SubjectAccessReviewStatus, kube::Error>> + Send;
}

impl Reviewer for kube::Client {
    async fn review_token(&self, token: &str) -> Result<Option<UserInfo>, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        Ok(match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Some(user),
            _ => None,
        })
    }

    async fn review_access(
        &self,
        review: SubjectAccessReview,
    ) -> Result<SubjectAccessReviewStatus, kube::Error> {
        let decided = Api::<SubjectAccessReview>::all(self.clone())
            .create(&PostParams::default(), &review)
            .await?;
        Ok(decided.status.unwrap_or_default())
    }
}

/// The question for the apiserver: has `user` `permission` on object
/// `name` in `namespace` (may it get `workers/tail` of Worker `name`)?
pub fn access_review(
    permission: &Permission,
    user: UserInfo,
    namespace: &str,
    name: &str,
) -> SubjectAccessReview {
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
                resource: Some(permission.resource.to_owned()),
                subresource: Some(permission.subresource.to_owned()),
                verb: Some(permission.verb.to_owned()),
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}
