//! Who may tail a Worker: Kubernetes decides. The caller's bearer token
//! (from its own kubeconfig) is checked with a TokenReview; the identity it
//! names must be allowed `get` on `workers/tail` (group `isolane.dev`) in
//! the Worker's namespace, by a SubjectAccessReview. The router holds only
//! the right to create those two reviews (`system:auth-delegator`'s).
//!
//! The apiserver is asked no more than it must be, whoever calls:
//! - a request without a well-formed `Authorization: Bearer <token>` is
//!   refused before any review;
//! - a token's answer is kept, under the token's SHA-256 (never the token),
//!   for [`USER_TTL`] when the apiserver accepted it and [`STRANGER_TTL`]
//!   when it did not; a decision, under the question asked (the identity,
//!   the namespace, the Worker), for [`ALLOWED_TTL`] or [`DENIED_TTL`].
//!   A revoked token or a removed RoleBinding opens tails for at most that
//!   long (a tail already open stays open: it is checked once);
//! - a token not in the cache is reviewed only within the budgets of
//!   [`super::limit`]: its client address's (past it, 429) and everyone's
//!   (past it, 503). A token in the cache is never held by them, so a crowd
//!   of bogus tokens cannot lock out a tenant who tails.
//!
//! The caches and buckets are bounded LRUs; accepted and refused tokens are
//! kept apart, so bogus tokens never push a tenant's out. Errors of the
//! apiserver are not kept.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use http::HeaderValue;
use k8s_openapi::api::authentication::v1::UserInfo;
use sha2::{Digest, Sha256};
use tokio::time::Instant;
use tracing::debug;

use super::expiring::Expiring;
use super::limit::{self, Limiter, Throttled};
pub use super::review::{
    D1_LIST, D1_MIGRATE, GROUP, Permission, RESOURCE, SUBRESOURCE, TAIL, VERB,
};
use super::review::{Reviewer, access_review};

/// How long the identity of a token the apiserver accepted is kept, and so
/// how long a revoked token still opens tails: 10 s, the default of
/// servers that delegate authentication to the apiserver by TokenReview
/// (k8s.io/apiserver's `--authentication-token-webhook-cache-ttl` for
/// them; kube-apiserver's own webhook cache keeps 2 min). Enough for a
/// burst of tails (or of retries) to cost one review.
pub const USER_TTL: Duration = Duration::from_secs(10);

/// How long a token the apiserver refused is remembered as refused: half
/// of [`USER_TTL`], long enough that repeating one bogus token costs the
/// apiserver nothing (nor the client's budget), short enough that a token
/// refused while being made is soon tried again.
pub const STRANGER_TTL: Duration = Duration::from_secs(5);

/// How long an allowed decision is kept, and so how long a removed
/// RoleBinding still lets tails open: 10 s, k8s.io/apiserver's default for
/// delegated authorization (`--authorization-webhook-cache-authorized-ttl`
/// of those servers).
pub const ALLOWED_TTL: Duration = Duration::from_secs(10);

/// How long a denied decision is kept: a RoleBinding just made lets tails
/// open within 5 s.
pub const DENIED_TTL: Duration = Duration::from_secs(5);

/// Accepted tokens kept (a few hundred bytes each: the identity). The
/// budgets let in at most 240 tokens per [`USER_TTL`] (20 a second and the
/// burst of 40), so a live identity is never pushed out by newer ones.
const USERS: NonZeroUsize = NonZeroUsize::new(1024).expect("non-zero");

/// Refused tokens kept (a digest each): the budgets let in at most 140 per
/// [`STRANGER_TTL`].
const STRANGERS: NonZeroUsize = NonZeroUsize::new(4096).expect("non-zero");

/// Decisions kept. SubjectAccessReviews are not budgeted (only accepted
/// tokens reach them): a tenant asking about many Workers can push others'
/// decisions out, which costs them one more review, not a refusal.
const DECISIONS: NonZeroUsize = NonZeroUsize::new(1024).expect("non-zero");

/// The longest bearer token taken: a ServiceAccount token is about 1 KiB,
/// an OIDC ID token a few.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a tail was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("no bearer token: {command} sends the token of your kubeconfig's user")]
    NoToken { command: &'static str },
    #[error("the Authorization header is not `Bearer <token>` with one token of visible ASCII")]
    Malformed,
    #[error("the token was not accepted by the Kubernetes API server")]
    BadToken,
    #[error(
        "{user} may not {} in namespace {namespace}: it needs {} on {}/{} (group isolane.dev) there, e.g. a RoleBinding to the ClusterRole {}{reason}",
        permission.doing, permission.verb, permission.resource, permission.subresource, permission.role
    )]
    Forbidden {
        user: String,
        namespace: String,
        reason: String,
        permission: &'static Permission,
    },
    #[error("too many new tokens from your address: retry in {}s", whole_seconds(*retry_after))]
    TooManyNewTokens { retry_after: Duration },
    #[error("too many new tokens are being checked: retry in {}s", whole_seconds(*retry_after))]
    Busy { retry_after: Duration },
    #[error("the access check failed: {0}")]
    Review(#[source] kube::Error),
}

impl Refused {
    /// The HTTP status the tail endpoint answers with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Refused::NoToken { .. } | Refused::Malformed | Refused::BadToken => {
                http::StatusCode::UNAUTHORIZED
            }
            Refused::Forbidden { .. } => http::StatusCode::FORBIDDEN,
            Refused::TooManyNewTokens { .. } => http::StatusCode::TOO_MANY_REQUESTS,
            Refused::Busy { .. } | Refused::Review(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The `Retry-After` of a refusal for now, in whole seconds.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Refused::TooManyNewTokens { retry_after } | Refused::Busy { retry_after } => {
                Some(whole_seconds(*retry_after))
            }
            _ => None,
        }
    }

    /// Whether the refusal is worth a line in the router's log at `info`:
    /// a known identity refused, or the apiserver failing. The others are
    /// anyone's to repeat as fast as they like.
    pub fn is_notable(&self) -> bool {
        matches!(self, Refused::Forbidden { .. } | Refused::Review(_))
    }
}

impl From<Throttled> for Refused {
    fn from(throttled: Throttled) -> Self {
        match throttled {
            Throttled::Client(retry_after) => Refused::TooManyNewTokens { retry_after },
            Throttled::Everyone(retry_after) => Refused::Busy { retry_after },
        }
    }
}

/// `wait` rounded up to whole seconds, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

/// A SHA-256 digest: a cache key.
type Key = [u8; 32];

/// What the apiserver decided, as kept.
#[derive(Debug, Clone)]
struct Decision {
    allowed: bool,
    /// Its reason, as the refusal shows it (` (…)`, or empty).
    reason: String,
}

/// The reviews' answers, kept.
#[derive(Debug)]
struct Caches {
    /// Accepted tokens' identities.
    users: Expiring<Key, UserInfo>,
    /// Refused tokens.
    strangers: Expiring<Key, ()>,
    /// Decisions, under the question's digest.
    decisions: Expiring<Key, Decision>,
}

/// The tail endpoint's access check: reviews, their caches and the limits
/// on them. One per endpoint, shared by its connections.
#[derive(Debug)]
pub struct Access<R> {
    reviewer: R,
    caches: Mutex<Caches>,
    limits: Mutex<Limiter>,
}

impl<R: Reviewer> Access<R> {
    /// An access check asking `reviewer`, with empty caches and full
    /// budgets ([`limit::PER_CLIENT`], [`limit::EVERYONE`]).
    pub fn new(reviewer: R) -> Self {
        Self {
            reviewer,
            caches: Mutex::new(Caches {
                users: Expiring::new(USERS),
                strangers: Expiring::new(STRANGERS),
                decisions: Expiring::new(DECISIONS),
            }),
            limits: Mutex::new(Limiter::new(
                limit::PER_CLIENT,
                limit::EVERYONE,
                limit::CLIENTS,
            )),
        }
    }

    /// Checks that the bearer token of `authorization`, sent from `client`,
    /// names an identity that may tail Worker `name` in `namespace`;
    /// returns the user name, for logs.
    pub async fn authorize(
        &self,
        client: IpAddr,
        authorization: Option<&HeaderValue>,
        namespace: &str,
        name: &str,
    ) -> Result<String, Refused> {
        self.authorize_to(&TAIL, client, authorization, namespace, name)
            .await
    }

    /// Checks that the bearer token of `authorization`, sent from
    /// `client`, names an identity with `permission` on object `name` in
    /// `namespace`; returns the user name, for logs.
    pub async fn authorize_to(
        &self,
        permission: &'static Permission,
        client: IpAddr,
        authorization: Option<&HeaderValue>,
        namespace: &str,
        name: &str,
    ) -> Result<String, Refused> {
        let token = bearer(authorization, permission)?;
        let user = self.authenticate(client, token).await?;
        self.decide(permission, user, namespace, name).await
    }

    /// Checks that `user`, whom the Kubernetes API server in front of the
    /// aggregated API authenticated, has `permission` on object `name` in
    /// `namespace` (the same SubjectAccessReview, cached alike); returns
    /// the user name.
    pub async fn authorize_user(
        &self,
        permission: &'static Permission,
        user: UserInfo,
        namespace: &str,
        name: &str,
    ) -> Result<String, Refused> {
        self.decide(permission, user, namespace, name).await
    }

    /// Who `token` is: from the cache, or by a TokenReview within the
    /// budgets.
    async fn authenticate(&self, client: IpAddr, token: &str) -> Result<UserInfo, Refused> {
        let key: Key = Sha256::digest(token.as_bytes()).into();
        if let Some(known) = self.known(&key) {
            return known;
        }
        self.limits()
            .take(client, Instant::now())
            .map_err(|throttled| {
                debug!(%client, ?throttled, "tail: token review throttled");
                Refused::from(throttled)
            })?;
        let reviewed = self
            .reviewer
            .review_token(token)
            .await
            .map_err(Refused::Review)?;
        let mut caches = self.caches();
        let now = Instant::now();
        match reviewed {
            Some(user) => {
                caches.users.insert(key, user.clone(), USER_TTL, now);
                Ok(user)
            }
            None => {
                caches.strangers.insert(key, (), STRANGER_TTL, now);
                Err(Refused::BadToken)
            }
        }
    }

    /// The cached answer for the token whose digest is `key`, if any.
    fn known(&self, key: &Key) -> Option<Result<UserInfo, Refused>> {
        let mut caches = self.caches();
        let now = Instant::now();
        if let Some(user) = caches.users.get(key, now) {
            return Some(Ok(user));
        }
        caches
            .strangers
            .get(key, now)
            .map(|()| Err(Refused::BadToken))
    }

    /// Whether `user` may tail `namespace/name`: from the cache, or by a
    /// SubjectAccessReview. Returns the user name.
    async fn decide(
        &self,
        permission: &'static Permission,
        user: UserInfo,
        namespace: &str,
        name: &str,
    ) -> Result<String, Refused> {
        let username = user.username.clone().unwrap_or_default();
        let review = access_review(permission, user, namespace, name);
        // The question is the key: the identity (name, uid, groups, extra)
        // and what it asks for.
        let key: Option<Key> = serde_json::to_vec(&review.spec)
            .ok()
            .map(|question| Sha256::digest(question).into());
        let cached = key.and_then(|key| self.caches().decisions.get(&key, Instant::now()));
        let decision = match cached {
            Some(decision) => decision,
            None => {
                let status = self
                    .reviewer
                    .review_access(review)
                    .await
                    .map_err(Refused::Review)?;
                let decision = Decision {
                    allowed: status.allowed,
                    reason: status
                        .reason
                        .filter(|r| !r.is_empty())
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default(),
                };
                if let Some(key) = key {
                    let ttl = if decision.allowed {
                        ALLOWED_TTL
                    } else {
                        DENIED_TTL
                    };
                    let now = Instant::now();
                    self.caches()
                        .decisions
                        .insert(key, decision.clone(), ttl, now);
                }
                decision
            }
        };
        if decision.allowed {
            return Ok(username);
        }
        Err(Refused::Forbidden {
            user: username,
            namespace: namespace.to_owned(),
            reason: decision.reason,
            permission,
        })
    }

    fn caches(&self) -> MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn limits(&self) -> MutexGuard<'_, Limiter> {
        self.limits.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in
/// any case, RFC 9110 §11.1): one token of visible ASCII, at most
/// [`MAX_TOKEN_BYTES`]. No header, or another scheme: [`Refused::NoToken`]
/// (naming `permission`'s command);
/// anything else: [`Refused::Malformed`].
fn bearer<'a>(
    authorization: Option<&'a HeaderValue>,
    permission: &Permission,
) -> Result<&'a str, Refused> {
    let no_token = || Refused::NoToken {
        command: permission.command,
    };
    let value = authorization.ok_or_else(no_token)?;
    let value = value.to_str().map_err(|_| Refused::Malformed)?.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(no_token());
    }
    let token = token.trim_start_matches(' ');
    let well_formed = !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && token.bytes().all(|b| b.is_ascii_graphic());
    well_formed.then_some(token).ok_or(Refused::Malformed)
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewStatus};

    use super::*;

    /// A fake apiserver: accepts the tokens of `users`, allows users in
    /// the namespaces of `allowed`, and counts the reviews.
    #[derive(Default)]
    struct Fake {
        /// Token → user name.
        users: HashMap<String, String>,
        /// (user name, namespace) allowed to tail there.
        allowed: HashSet<(String, String)>,
        /// Tokens whose review fails.
        failing: HashSet<String>,
        token_reviews: AtomicUsize,
        access_reviews: AtomicUsize,
    }

    impl Reviewer for Fake {
        async fn review_token(&self, token: &str) -> Result<Option<UserInfo>, kube::Error> {
            self.token_reviews.fetch_add(1, Ordering::Relaxed);
            if self.failing.contains(token) {
                return Err(kube::Error::LinesCodecMaxLineLengthExceeded);
            }
            Ok(self.users.get(token).map(|name| UserInfo {
                username: Some(name.clone()),
                groups: Some(vec!["system:authenticated".to_owned()]),
                ..UserInfo::default()
            }))
        }

        async fn review_access(
            &self,
            review: SubjectAccessReview,
        ) -> Result<SubjectAccessReviewStatus, kube::Error> {
            self.access_reviews.fetch_add(1, Ordering::Relaxed);
            let user = review.spec.user.unwrap_or_default();
            let namespace = review
                .spec
                .resource_attributes
                .and_then(|r| r.namespace)
                .unwrap_or_default();
            Ok(SubjectAccessReviewStatus {
                allowed: self.allowed.contains(&(user, namespace)),
                reason: Some("no RoleBinding".to_owned()),
                ..SubjectAccessReviewStatus::default()
            })
        }
    }

    const ALICE_TOKEN: &str = "alice-token";
    const BOB_TOKEN: &str = "bob-token";

    /// Alice may tail in `team-a`; Bob is known but allowed nowhere.
    fn access() -> Access<Fake> {
        Access::new(Fake {
            users: HashMap::from([
                (ALICE_TOKEN.to_owned(), "alice".to_owned()),
                (BOB_TOKEN.to_owned(), "bob".to_owned()),
            ]),
            allowed: HashSet::from([("alice".to_owned(), "team-a".to_owned())]),
            failing: HashSet::from(["flaky".to_owned()]),
            ..Fake::default()
        })
    }

    fn header(value: &str) -> HeaderValue {
        HeaderValue::from_str(value).unwrap()
    }

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4((0xC000_0200 + n).into())
    }

    async fn tail(access: &Access<Fake>, from: IpAddr, token: &str) -> Result<String, Refused> {
        let authorization = header(&format!("Bearer {token}"));
        access
            .authorize(from, Some(&authorization), "team-a", "hello")
            .await
    }

    fn reviews(access: &Access<Fake>) -> (usize, usize) {
        let fake = &access.reviewer;
        (
            fake.token_reviews.load(Ordering::Relaxed),
            fake.access_reviews.load(Ordering::Relaxed),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_and_its_decision_are_reviewed_once_per_ttl() {
        let access = access();
        assert_eq!(tail(&access, ip(1), ALICE_TOKEN).await.unwrap(), "alice");
        assert_eq!(reviews(&access), (1, 1));
        // From another address too: the cache is the token's.
        assert_eq!(tail(&access, ip(2), ALICE_TOKEN).await.unwrap(), "alice");
        tokio::time::advance(USER_TTL - Duration::from_millis(1)).await;
        assert!(tail(&access, ip(1), ALICE_TOKEN).await.is_ok());
        assert_eq!(reviews(&access), (1, 1));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(tail(&access, ip(1), ALICE_TOKEN).await.is_ok());
        assert_eq!(reviews(&access), (2, 2), "reviewed again after the TTL");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_token_is_remembered_for_a_shorter_time() {
        let access = access();
        for _ in 0..5 {
            assert!(matches!(
                tail(&access, ip(1), "bogus").await,
                Err(Refused::BadToken)
            ));
        }
        assert_eq!(reviews(&access), (1, 0));
        tokio::time::advance(STRANGER_TTL).await;
        assert!(matches!(
            tail(&access, ip(1), "bogus").await,
            Err(Refused::BadToken)
        ));
        assert_eq!(reviews(&access), (2, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_decision_is_kept_per_question() {
        let access = access();
        let forbidden = |refused: Result<String, Refused>| match refused {
            Err(Refused::Forbidden { user, reason, .. }) => (user, reason),
            other => panic!("expected Forbidden, got {other:?}"),
        };
        let (user, reason) = forbidden(tail(&access, ip(1), BOB_TOKEN).await);
        assert_eq!(
            (user.as_str(), reason.as_str()),
            ("bob", " (no RoleBinding)")
        );
        forbidden(tail(&access, ip(1), BOB_TOKEN).await);
        assert_eq!(reviews(&access), (1, 1), "the denial is kept");
        // Another namespace is another question.
        let authorization = header(&format!("Bearer {ALICE_TOKEN}"));
        let elsewhere = access
            .authorize(ip(1), Some(&authorization), "team-b", "hello")
            .await;
        forbidden(elsewhere);
        assert!(tail(&access, ip(1), ALICE_TOKEN).await.is_ok());
        assert_eq!(reviews(&access), (2, 3));
        // A denial is kept for less time than an allowance.
        tokio::time::advance(DENIED_TTL).await;
        forbidden(tail(&access, ip(1), BOB_TOKEN).await);
        assert!(tail(&access, ip(1), ALICE_TOKEN).await.is_ok());
        assert_eq!(reviews(&access), (2, 4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_review_is_not_kept() {
        let access = access();
        for _ in 0..3 {
            let refused = tail(&access, ip(1), "flaky").await.unwrap_err();
            assert!(matches!(refused, Refused::Review(_)));
            assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(reviews(&access), (3, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn one_address_reaches_the_reviewer_at_most_its_burst_and_a_cached_token_still_works() {
        let access = access();
        let attacker = ip(1);
        // A tenant at the same address (a NAT) tailed just before.
        assert!(tail(&access, attacker, ALICE_TOKEN).await.is_ok());
        let mut throttled = 0;
        for n in 0..100 {
            match tail(&access, attacker, &format!("bogus-{n}")).await {
                Err(Refused::BadToken) => {}
                Err(refused @ Refused::TooManyNewTokens { .. }) => {
                    assert_eq!(refused.status(), http::StatusCode::TOO_MANY_REQUESTS);
                    assert_eq!(refused.retry_after(), Some(1));
                    throttled += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
            // The cached token works meanwhile, from there and elsewhere,
            // with no review.
            assert!(tail(&access, attacker, ALICE_TOKEN).await.is_ok());
            assert!(tail(&access, ip(2), ALICE_TOKEN).await.is_ok());
        }
        let burst = limit::PER_CLIENT.burst as usize;
        assert_eq!(reviews(&access), (burst, 1));
        assert_eq!(throttled, 100 - (burst - 1));
        // Another address's new token is not held by this one's budget.
        assert!(matches!(
            tail(&access, ip(2), BOB_TOKEN).await,
            Err(Refused::Forbidden { .. })
        ));
        // The budget refills.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(matches!(
            tail(&access, attacker, "bogus-again").await,
            Err(Refused::BadToken)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_crowd_of_addresses_is_bounded_and_cannot_lock_out_a_cached_token() {
        let access = access();
        let tenant = ip(10_000);
        assert!(tail(&access, tenant, ALICE_TOKEN).await.is_ok());
        let mut busy = 0;
        for n in 0..500 {
            // Each address sends 3 bogus tokens.
            for k in 0..3 {
                match tail(&access, ip(n), &format!("bogus-{n}-{k}")).await {
                    Err(Refused::BadToken) => {}
                    Err(refused @ Refused::Busy { .. }) => {
                        assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
                        assert_eq!(refused.retry_after(), Some(1));
                        busy += 1;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            assert!(tail(&access, tenant, ALICE_TOKEN).await.is_ok());
            assert!(tail(&access, ip(n), ALICE_TOKEN).await.is_ok());
        }
        let burst = limit::EVERYONE.burst as usize;
        assert_eq!(reviews(&access).0, burst);
        assert_eq!(busy, 1500 - (burst - 1));
        // A token not in the cache waits like the crowd's (documented).
        assert!(matches!(
            tail(&access, tenant, BOB_TOKEN).await,
            Err(Refused::Busy { .. })
        ));
    }

    #[tokio::test]
    async fn no_review_without_a_well_formed_bearer_token() {
        let access = access();
        let refused = async |value: Option<&str>| {
            let header = value.map(header);
            access
                .authorize(ip(1), header.as_ref(), "team-a", "hello")
                .await
                .unwrap_err()
        };
        assert!(matches!(refused(None).await, Refused::NoToken { .. }));
        assert!(matches!(
            refused(Some("Basic YWxpY2U6cGFzcw==")).await,
            Refused::NoToken { .. }
        ));
        assert!(matches!(refused(Some("Bearer")).await, Refused::Malformed));
        assert!(matches!(
            refused(Some("Bearer   ")).await,
            Refused::Malformed
        ));
        assert!(matches!(
            refused(Some("Bearer two tokens")).await,
            Refused::Malformed
        ));
        assert!(matches!(
            refused(Some("Bearer a\tb")).await,
            Refused::Malformed
        ));
        let long = format!("Bearer {}", "x".repeat(MAX_TOKEN_BYTES + 1));
        assert!(matches!(refused(Some(&long)).await, Refused::Malformed));
        let not_ascii = HeaderValue::from_bytes(b"Bearer caf\xc3\xa9").unwrap();
        let refused = access
            .authorize(ip(1), Some(&not_ascii), "team-a", "hello")
            .await
            .unwrap_err();
        assert!(matches!(refused, Refused::Malformed));
        assert_eq!(refused.status(), http::StatusCode::UNAUTHORIZED);
        assert_eq!(reviews(&access), (0, 0));
        // The scheme in any case, spaces around the token: as RFC 9110 has it.
        let authorization = header(&format!("bearer  {ALICE_TOKEN} "));
        let user = access
            .authorize(ip(1), Some(&authorization), "team-a", "hello")
            .await;
        assert_eq!(user.unwrap(), "alice");
    }

    #[tokio::test]
    async fn a_missing_token_s_refusal_names_the_command_refused() {
        let access = access();
        for (permission, command) in [
            (&TAIL, "isolane tail"),
            (&D1_MIGRATE, "isolane d1 migrations apply --remote"),
            (&D1_LIST, "isolane d1 migrations list --remote"),
        ] {
            let refused = access
                .authorize_to(permission, ip(1), None, "team-a", "orders")
                .await
                .unwrap_err()
                .to_string();
            assert_eq!(
                refused,
                format!("no bearer token: {command} sends the token of your kubeconfig's user")
            );
        }
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(whole_seconds(Duration::from_millis(50)), 1);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_secs(2)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(2001)), 3);
    }
}
