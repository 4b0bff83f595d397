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

/// The question for the apiserver: may `user` get `workers/tail` of Worker
/// `name` in `namespace`?
pub fn access_review(user: UserInfo, namespace: &str, name: &str) -> SubjectAccessReview {
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
