//! Recording a tick: `status.cron` (the router's own server-side-apply field
//! manager, so the operator's status writes never touch it), the runs
//! counter, and a Warning event on the Worker when a tick failed. Without a
//! cluster (`isolane dev`) the runs counter and the log are all there is.

use std::sync::Arc;
use std::time::SystemTime;

use isolane_crds::Worker;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter as EventReporter};
use kube::{Api, Client, Resource};
use tracing::{debug, info, warn};

use super::CronWorker;
use crate::cron::TickFailure;
use crate::metrics::RouterMetrics;

/// The field manager of `status.cron`.
pub const FIELD_MANAGER: &str = "isolane-router-cron";

/// Writes what ticks did.
#[derive(Clone)]
pub struct Reporter {
    metrics: Arc<RouterMetrics>,
    /// Where status and events go; `None` without a cluster.
    cluster: Option<(Client, Recorder)>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").finish_non_exhaustive()
    }
}

fn rfc3339(t: SystemTime) -> String {
    Timestamp::try_from(t).map_or_else(|_| String::new(), |t| t.to_string())
}

impl Reporter {
    /// A reporter writing with `client`.
    pub fn new(client: Client, metrics: Arc<RouterMetrics>) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            EventReporter {
                controller: FIELD_MANAGER.to_owned(),
                instance: std::env::var("HOSTNAME").ok(),
            },
        );
        Self {
            metrics,
            cluster: Some((client, recorder)),
        }
    }

    /// A reporter that counts and logs runs only (`isolane dev`).
    pub fn local(metrics: Arc<RouterMetrics>) -> Self {
        Self {
            metrics,
            cluster: None,
        }
    }

    /// Records the tick of `cron` due `at` for `worker`.
    pub async fn record(
        &self,
        worker: &CronWorker,
        cron: &str,
        at: SystemTime,
        result: Result<(), TickFailure>,
    ) {
        let outcome = match &result {
            Ok(()) => "ok",
            Err(failure) => failure.outcome,
        };
        self.metrics.cron_run(outcome);
        let Some((client, recorder)) = &self.cluster else {
            match &result {
                Ok(()) => info!(worker.id = %worker.key, %cron, "ran scheduled event"),
                Err(failure) => {
                    warn!(worker.id = %worker.key, %cron, outcome, message = %failure.message, "scheduled event failed")
                }
            }
            return;
        };
        let api: Api<Worker> = Api::namespaced(client.clone(), &worker.key.namespace);
        let message = result.as_ref().err().map(|f| f.message.as_str());
        let body = status_patch(worker, cron, at, outcome, message);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if let Err(error) = api
            .patch_status(&worker.key.name, &params, &Patch::Apply(&body))
            .await
        {
            debug!(worker.id = %worker.key, %error, "could not write status.cron");
        }
        if let Err(failure) = result {
            warn!(worker.id = %worker.key, %cron, outcome, message = %failure.message, "cron tick failed");
            let note = format!(
                "the tick of {cron:?} due {} failed: {outcome}: {}",
                rfc3339(at),
                failure.message
            );
            publish_failure(&api, recorder, &worker.key.name, note).await;
        }
    }
}

/// `status.cron` after the tick of `cron` due `at`: its outcome, and the
/// Worker's next tick.
fn status_patch(
    worker: &CronWorker,
    cron: &str,
    at: SystemTime,
    outcome: &str,
    message: Option<&str>,
) -> serde_json::Value {
    let now = SystemTime::now();
    let next = worker
        .schedules
        .iter()
        .filter_map(|s| s.next_after(now))
        .min();
    serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "status": {
            "cron": {
                "lastRun": {
                    "cron": cron,
                    "scheduledTime": rfc3339(at),
                    "finishedTime": rfc3339(now),
                    "outcome": outcome,
                    "message": message,
                },
                "nextTick": next.map(rfc3339),
            }
        }
    })
}

/// A `CronFailed` Warning Event on the Worker `name`.
async fn publish_failure(api: &Api<Worker>, recorder: &Recorder, name: &str, note: String) {
    let Ok(object) = api.get(name).await else {
        return;
    };
    let event = Event {
        type_: EventType::Warning,
        reason: "CronFailed".to_owned(),
        note: Some(note),
        action: "Scheduled".to_owned(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &object.object_ref(&())).await {
        debug!(%error, "failed to publish an event");
    }
}
