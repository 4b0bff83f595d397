//! ACME HTTP-01 answers (`--acme-http01`): cert-manager's `Challenge`
//! resources name a host, a token and the key authorization to answer with;
//! the router answers `GET http://<host>/.well-known/acme-challenge/<token>`
//! with that key, as text, only when the Challenge's namespace owns the host
//! in the route table ([`HostOwners`]). Any other request under the prefix
//! goes on to the Worker as before.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};

use super::{ACME_CHALLENGE_PREFIX, HostOwners};
use crate::answer::{ResponseBody, full_body};
use crate::routes::normalize_host;

/// The one challenge type the router answers.
pub const HTTP01: &str = "HTTP-01";

/// What the router reads of one `Challenge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Its namespace: the one that must own `host`.
    pub namespace: String,
    /// `spec.dnsName`, normalised.
    pub host: String,
    /// `spec.token`: the last segment of the path asked for.
    pub token: String,
    /// `spec.key`: the key authorization to answer with.
    pub key: String,
}

/// The HTTP-01 challenges now open, by token.
#[derive(Debug, Default)]
pub struct ChallengeSet(HashMap<String, Vec<Challenge>>);

impl ChallengeSet {
    /// The set of `challenges`.
    pub fn new(challenges: impl IntoIterator<Item = Challenge>) -> Self {
        let mut by_token: HashMap<String, Vec<Challenge>> = HashMap::new();
        for challenge in challenges {
            by_token
                .entry(challenge.token.clone())
                .or_default()
                .push(challenge);
        }
        Self(by_token)
    }

    /// How many challenges the set holds.
    pub fn len(&self) -> usize {
        self.0.values().map(Vec::len).sum()
    }

    /// Whether the set holds none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The router's HTTP-01 responder: the open challenges, replaced by the
/// watch, and who owns which host.
#[derive(Debug)]
pub struct Http01 {
    challenges: ArcSwap<ChallengeSet>,
    owners: Box<dyn HostOwners>,
}

impl Http01 {
    /// A responder with no challenge yet, asking `owners` who owns a host.
    pub fn new(owners: impl HostOwners) -> Self {
        Self {
            challenges: ArcSwap::from_pointee(ChallengeSet::default()),
            owners: Box::new(owners),
        }
    }

    /// Answers from `challenges` from the next request on.
    pub fn replace(&self, challenges: ChallengeSet) {
        self.challenges.store(Arc::new(challenges));
    }

    /// The key for `token` on `host`, if an open challenge of the host's
    /// owning namespace asks for it.
    pub fn key_for(&self, host: &str, token: &str) -> Option<String> {
        let host = normalize_host(host);
        let set = self.challenges.load();
        let candidates = set.0.get(token)?;
        let owner = self.owners.namespace_of(&host)?;
        candidates
            .iter()
            .find(|c| c.host == host && c.namespace == owner)
            .map(|c| c.key.clone())
    }

    /// The answer to `request` if it is a challenge this router answers;
    /// `None` sends it on its way.
    pub fn answer<B>(&self, request: &Request<B>) -> Option<Response<ResponseBody>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return None;
        }
        let token = request.uri().path().strip_prefix(ACME_CHALLENGE_PREFIX)?;
        if token.is_empty() || token.contains('/') {
            return None;
        }
        let host = match request.uri().authority() {
            Some(authority) => authority.host(),
            None => request.headers().get(header::HOST)?.to_str().ok()?,
        };
        let key = self.key_for(host, token)?;
        let mut response = Response::new(full_body(Bytes::from(key)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        Some(response)
    }
}
