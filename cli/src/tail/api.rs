//! `isolane tail` through the Kubernetes API server: a GET of the tail API
//! (the router's aggregated API, `tail.isolane.dev/v1alpha1`) with kube-rs's
//! client, which authenticates as kubectl does (exec plugins, client
//! certificates, tokens), so nothing but the kubeconfig is needed.
//!
//! The API server ends every request that is not a watch at its
//! `--request-timeout` (a minute by default), a tail too: the command opens
//! the tail again when its stream ends, so a tail runs until interrupted.
//! Invocations that end in the moment between two streams are not shown.

use std::time::Duration;

use anyhow::Context as _;
use http::StatusCode;
use tracing::debug;

use super::{Refused, TailArgs, print_events, refusal_message};
use isolane_worker::Inert;

/// The tail API's group and version, and its APIService's name.
pub const GROUP: &str = "tail.isolane.dev";
pub const VERSION: &str = "v1alpha1";
pub const API_SERVICE: &str = "v1alpha1.tail.isolane.dev";

/// The least time between two opens of the tail (when the API server ends
/// streams at once, the command does not hammer it).
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// Tails `args.worker` in `namespace` through the API server of `config`
/// until interrupted or refused.
pub(super) async fn run(
    mut config: kube::Config,
    namespace: &str,
    args: &TailArgs,
) -> anyhow::Result<()> {
    // A tail is as quiet as its Worker: no deadline between two reads.
    config.read_timeout = None;
    let client = kube::Client::try_from(config)
        .context("configuring the Kubernetes client from your kubeconfig")?;
    let path = format!(
        "/apis/{GROUP}/{VERSION}/namespaces/{namespace}/workers/{}/tail",
        args.worker
    );
    loop {
        let opened = tokio::time::Instant::now();
        let request = http::Request::get(path.as_str())
            .body(kube::client::Body::empty())
            .context("building the request")?;
        let response = client
            .send(request)
            .await
            .context("the Kubernetes API server did not answer")?;
        let status = response.status();
        let body = response.into_body();
        if !status.is_success() {
            let message = refusal_message(body).await;
            return Err(refused(status, namespace, &message).into());
        }
        match print_events(body, args).await {
            Ok(()) => debug!("the tail stream ended; opening it again"),
            // Stdout is gone: so is the reader.
            Err(error) if error.downcast_ref::<std::io::Error>().is_some() => return Err(error),
            Err(error) => debug!(%error, "the tail stream broke; opening it again"),
        }
        tokio::time::sleep_until(opened + REOPEN_AFTER).await;
    }
}

/// Why the API server (or the tail API behind it) refused, said so that the
/// reader knows what to ask for.
fn refused(status: StatusCode, namespace: &str, message: &str) -> Refused {
    let message = Inert(message);
    Refused(match status {
        StatusCode::FORBIDDEN => format!(
            "tail refused ({status}): {message}\n\
             tailing needs get on workers/tail in the API groups isolane.dev and {GROUP} \
             in namespace {namespace}: ask for a RoleBinding to the ClusterRole \
             isolane-worker-tail there"
        ),
        StatusCode::NOT_FOUND | StatusCode::SERVICE_UNAVAILABLE => format!(
            "the tail API is not available ({status}): {message}\n\
             the Kubernetes API server has no working APIService {API_SERVICE}: is Isolane \
             installed with its tail API (chart value tailApi.enabled), and is the APIService \
             Available? kubectl get apiservice {API_SERVICE}"
        ),
        StatusCode::UNAUTHORIZED => format!(
            "tail refused ({status}): {message}\n\
             the Kubernetes API server did not accept your kubeconfig's credentials"
        ),
        _ => format!("tail refused ({status}): {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_what_to_ask_for() {
        let forbidden = refused(StatusCode::FORBIDDEN, "team-b", "no").to_string();
        assert!(
            forbidden.contains("get on workers/tail")
                && forbidden.contains("in namespace team-b")
                && forbidden.contains("isolane-worker-tail"),
            "{forbidden}"
        );
        let missing = refused(StatusCode::NOT_FOUND, "a", "not found").to_string();
        assert!(
            missing.contains("the tail API is not available")
                && missing.contains("kubectl get apiservice v1alpha1.tail.isolane.dev"),
            "{missing}"
        );
    }
}
