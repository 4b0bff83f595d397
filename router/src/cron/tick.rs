//! One cron tick, run where the Worker's requests run: a bodiless request
//! carrying the tick (`RequestHead.scheduled`), sent through the proxy's
//! placement, node channels and failover (a node that refuses before running
//! it, or is lost, means one more try on the next node, with the same tick).

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use isolane_proto::Outcome;
use isolane_proto::runtime::v1::ScheduledTick;

use crate::Proxy;
use crate::cron::CronWorker;

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
        .map_err(TickFailure::from)?;
    let status = response.status();
    // Read to the end, so the request's accounting completes.
    let _ = response.into_body().collect().await;
    // A refusal came back typed (above); an answer of the node's that is
    // not the tick's 200 is the handler failing.
    if status == StatusCode::OK {
        Ok(())
    } else {
        Err(TickFailure {
            outcome: "exception",
            message: format!("the tick answered {status}"),
        })
    }
}

impl From<crate::Error> for TickFailure {
    /// A tick the node refused says what the engine said (its typed
    /// outcome and detail); any other failure, what failed.
    fn from(error: crate::Error) -> Self {
        match error {
            crate::Error::Refused {
                outcome, detail, ..
            } => TickFailure {
                outcome: tick_outcome(outcome),
                message: match detail.trim() {
                    "" => format!("the tick answered {}", outcome.http_status().unwrap_or(500)),
                    detail => detail.to_owned(),
                },
            },
            error => TickFailure {
                outcome: error.kind(),
                message: error.to_string(),
            },
        }
    }
}

/// The label of a refused tick (`status.cron.lastRun.outcome`): its
/// outcome's when the tick's status says it, else `exception`.
fn tick_outcome(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::CpuLimit
        | Outcome::MemoryLimit
        | Outcome::WallTimeout
        | Outcome::SubrequestLimit
        | Outcome::Overloaded
        | Outcome::Quarantined
        | Outcome::QuotaExceeded
        | Outcome::UnknownWorker
        | Outcome::Internal => outcome.label(),
        _ => "exception",
    }
}
