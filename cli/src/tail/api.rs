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
use tracing::debug;

use super::{Refused, TailArgs, print_events, refusal_message};
use crate::cluster::{GROUP, Need, VERSION, api_refusal};

/// What a tail needs, as a refusal says it.
const NEED: Need = Need {
    what: "tail",
    permission: "get on workers/tail",
    role: "isolane-worker-tail",
};

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
            return Err(Refused(api_refusal(NEED, status, namespace, &message)).into());
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
