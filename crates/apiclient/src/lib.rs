//! The Kubernetes API client of Isolane's binaries (operator, router, node,
//! `isolane push`): kube's, with a short, logged retry of transient refusals
//! instead of kube's default one.
//!
//! kube 5.0 retries every request answered 429, 503 or 504 up to 15 times,
//! backing off from 5 ms doubling to 1000 s and waiting at least the
//! server's `Retry-After`, and logs nothing for a 429. A watch's first list
//! answered 429 (a kube-apiserver whose watch cache is (re)initializing
//! answers label-selected lists and watches so) was measured against a fake
//! apiserver: 12 requests, the last ones 5 s and 11 s apart, and no answer
//! after 45 s, with nothing in the log; the cache behind it stays unsynced
//! all that while: the operator's `/readyz` false, the router without the
//! node Leases it routes by, a node without the bundles it serves.
//!
//! [`TransientRetry`] retries those answers [`MAX_RETRIES`] times, each after
//! the server's `Retry-After` or a doubling delay, never more than
//! [`MAX_DELAY`], and logs each retry. After that the error reaches the
//! caller: a watch logs it and lists again (kube's watcher backoff, about a
//! second between failed lists), a reconcile is requeued.
//!
//! [`infer`] makes the client from the environment (in-cluster, or
//! `KUBECONFIG`) as `kube::Client::try_default` does; [`client`] from a
//! given configuration.
#![forbid(unsafe_code)]

use std::time::Duration;

use http::{HeaderMap, Request, Response, StatusCode};
use kube::Client;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder};
use tower::BoxError;
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};
use tracing::warn;

/// How many times a request answered 429, 503 or 504 is sent again.
pub const MAX_RETRIES: u32 = 3;

/// The longest wait before a retry, whatever `Retry-After` says.
pub const MAX_DELAY: Duration = Duration::from_secs(2);

/// The wait before the first retry without a `Retry-After`.
const FIRST_DELAY: Duration = Duration::from_millis(250);

/// Requests queued for the client at most (as kube's own buffer).
const BUFFER: usize = 1024;

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Neither an in-cluster configuration nor a kubeconfig was found or read.
    #[error("no Kubernetes client configuration")]
    Infer(#[from] kube::config::InferConfigError),
    /// The configuration could not make a client (e.g. its TLS material).
    #[error("cannot make the Kubernetes client")]
    Build(#[from] kube::Error),
}

/// A client from the environment (in-cluster, else `KUBECONFIG` or
/// `~/.kube/config`), retrying as [`client`] does.
pub async fn infer() -> Result<Client, ClientError> {
    let config = kube::Config::infer().await?;
    Ok(client(config)?)
}

/// A client for `config` whose requests retry transient refusals with
/// [`TransientRetry`] instead of kube's default retry.
pub fn client(mut config: kube::Config) -> Result<Client, kube::Error> {
    config.default_retry = false;
    let builder = ClientBuilder::try_from(config)?
        // The retry needs a service it can clone.
        .with_layer(&BufferLayer::new(BUFFER))
        .with_layer(&RetryLayer::new(TransientRetry::default()));
    Ok(builder.build())
}

/// Retries a request answered 429, 503 or 504 (module docs).
#[derive(Clone, Default)]
pub struct TransientRetry {
    retries: u32,
    /// kube's own policy, for what it does as ours would: copying a request
    /// (and its body, when it can be sent again) for the next attempt.
    copies: RetryPolicy,
}

impl std::fmt::Debug for TransientRetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransientRetry")
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl TransientRetry {
    /// How long to wait before retry number `retry` (from 1), given the
    /// answer's `Retry-After` seconds.
    pub fn delay(retry: u32, retry_after: Option<u64>) -> Duration {
        let delay = match retry_after {
            Some(seconds) => Duration::from_secs(seconds),
            None => FIRST_DELAY.saturating_mul(2_u32.saturating_pow(retry.saturating_sub(1))),
        };
        delay.min(MAX_DELAY)
    }
}

/// Whether `status` says "not now" rather than "no".
fn transient(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// The `Retry-After` of `headers` in seconds (the apiserver sends seconds).
fn retry_after(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for TransientRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        request: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        let status = response.status();
        if !transient(status) || self.retries >= MAX_RETRIES {
            return None;
        }
        self.retries += 1;
        let retry_after = retry_after(response.headers());
        let delay = Self::delay(self.retries, retry_after);
        warn!(
            status = status.as_u16(),
            method = %request.method(),
            path = request.uri().path(),
            retry = self.retries,
            retry_after_s = retry_after,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "API request refused for now; retrying"
        );
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        <RetryPolicy as Policy<Request<Body>, Response<B>, BoxError>>::clone_request(
            &mut self.copies,
            request,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_what_the_server_asks_up_to_the_cap_else_doubles() {
        assert_eq!(TransientRetry::delay(1, Some(1)), Duration::from_secs(1));
        assert_eq!(TransientRetry::delay(1, Some(30)), MAX_DELAY);
        assert_eq!(TransientRetry::delay(1, None), FIRST_DELAY);
        assert_eq!(TransientRetry::delay(2, None), FIRST_DELAY * 2);
        assert_eq!(TransientRetry::delay(3, None), FIRST_DELAY * 4);
        assert_eq!(TransientRetry::delay(40, None), MAX_DELAY);
    }

    #[test]
    fn only_not_now_answers_are_retried() {
        assert!(transient(StatusCode::TOO_MANY_REQUESTS));
        assert!(transient(StatusCode::SERVICE_UNAVAILABLE));
        assert!(transient(StatusCode::GATEWAY_TIMEOUT));
        assert!(!transient(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!transient(StatusCode::CONFLICT));
        assert!(!transient(StatusCode::NOT_FOUND));
    }
}
