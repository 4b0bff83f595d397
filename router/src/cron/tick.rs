//! One cron tick, run where the Worker's requests run: a bodiless request
//! carrying the tick (`RequestHead.scheduled`), sent through the proxy's
//! placement, node channels and failover (a node that refuses before running
//! it, or is lost, means one more try on the next node, with the same tick).

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use isolane_proto::runtime::v1::ScheduledTick;

use crate::Proxy;
use crate::cron::CronWorker;
use crate::proxy::{DETAIL_HEADER, REASON_HEADER};

/// Why a cron tick failed: a bounded label (`isolane_router_cron_runs_total`,
/// `status.cron.lastRun.outcome`) and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickFailure {
    /// `exception`, `cpu_limit`, `no_live_node`, …
    pub outcome: &'static str,
    /// What happened, for the status and the Warning event.
    pub message: String,
}

/// Runs `tick` of `worker`; `Ok` when the handler succeeded.
pub async fn run_tick(
    proxy: &Proxy,
    worker: &CronWorker,
    tick: ScheduledTick,
) -> Result<(), TickFailure> {
    let request = Request::builder()
        .method(http::Method::GET)
        .uri(format!("https://{}/__scheduled", worker.host))
        .extension(tick)
        .body(http_body_util::Empty::<Bytes>::new())
        .map_err(|e| TickFailure {
            outcome: "invalid",
            message: e.to_string(),
        })?;
    let response = proxy
        .send_internal(
            &worker.key.to_string(),
            &worker.revision,
            &worker.host,
            request,
            true,
        )
        .await
        .map_err(|error| TickFailure {
            outcome: error.kind(),
            message: error.to_string(),
        })?;
    let status = response.status();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let reason = header(REASON_HEADER).unwrap_or_else(|| "exception".to_owned());
    let detail = header(DETAIL_HEADER);
    // Read to the end, so the request's accounting completes.
    let _ = response.into_body().collect().await;
    if status == StatusCode::OK {
        Ok(())
    } else {
        Err(TickFailure {
            outcome: tick_outcome(&reason),
            message: detail.unwrap_or_else(|| format!("the tick answered {status}")),
        })
    }
}

/// The bounded label for a refusal's reason header.
fn tick_outcome(reason: &str) -> &'static str {
    match reason {
        "cpu_limit" => "cpu_limit",
        "memory_limit" => "memory_limit",
        "wall_timeout" => "wall_timeout",
        "subrequest_limit" => "subrequest_limit",
        "overloaded" => "overloaded",
        "quarantined" => "quarantined",
        "unknown_worker" => "unknown_worker",
        "internal" => "internal",
        _ => "exception",
    }
}
