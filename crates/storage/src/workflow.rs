//! Workflows' instances (docs/workflows.md): each instance of a workflow
//! of a Kubernetes namespace ([`WorkflowScope`]) with its status, its step
//! log (each step's result stored once it returned, never recomputed: a run
//! replays from it) and the events sent to it. `isolane dev`'s SQLite store
//! keeps them, and a cluster's PostgreSQL, where each workflow's runner is
//! its owner node, fenced by the workflow's owner epoch
//! ([`Store::workflow_take`], [`Store::workflow_due_of`]).
//!
//! The operations a Worker's JavaScript asks for are one [`WorkflowOp`],
//! answered with JSON; the runner's are [`crate::Store::workflow_due`] and
//! [`crate::Store::workflow_failed`].

use serde::Deserialize;

pub use crate::workflow_limits::{
    MAX_FAILED_RUNS, MAX_STEPS, MAX_VALUE_BYTES, WorkflowError, is_instance_id,
};
use crate::{Backend, Store, StoreError, blocking};

/// A workflow of a Kubernetes namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkflowScope {
    pub namespace: String,
    pub workflow: String,
}

impl WorkflowScope {
    pub fn new(namespace: impl Into<String>, workflow: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            workflow: workflow.into(),
        }
    }
}

/// What a step of a run asks before it runs.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum StepKind {
    /// `step.do`: counts an attempt; a run that ends without recording is
    /// run again after the attempt's retry delay ([`retry_delay`]).
    #[serde(rename_all = "camelCase")]
    Do { delay_ms: i64, backoff: Backoff },
    /// `step.sleep`, `step.sleepUntil`: notes when it began.
    Sleep,
    /// `step.waitForEvent`: takes the oldest event of `type` sent, if any.
    Event {
        #[serde(rename = "type")]
        event_type: String,
    },
}

/// How a step's retry delay grows (Cloudflare's `retries.backoff`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Backoff {
    Constant,
    Linear,
    Exponential,
}

/// The delay before the retry that follows attempt `attempt` (1 for the
/// first) of a step whose `retries.delay` is `delay_ms`.
pub fn retry_delay(delay_ms: i64, backoff: Backoff, attempt: i64) -> i64 {
    let attempt = attempt.max(1);
    let delay = delay_ms.max(0);
    match backoff {
        Backoff::Constant => delay,
        Backoff::Linear => delay.saturating_mul(attempt),
        Backoff::Exponential => delay.saturating_mul(
            1_i64
                .checked_shl(u32::try_from(attempt - 1).unwrap_or(62).min(62))
                .unwrap_or(i64::MAX),
        ),
    }
}

/// How a run ended, as it records it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "end", rename_all = "camelCase")]
pub enum RunEnd {
    /// `run()` returned `output` (JSON).
    Complete { output: String },
    /// `run()` threw `error` (JSON `{name, message}`).
    Errored { error: String },
    /// Waiting (a sleep, an event) until `wake_at` (ms) or the event.
    #[serde(rename_all = "camelCase")]
    Waiting {
        wake_at: i64,
        waiting_for: Option<String>,
    },
    /// A step's retry, due `delay_ms` from now.
    #[serde(rename_all = "camelCase")]
    Retry { delay_ms: i64 },
}

/// One operation on an instance.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum WorkflowOp {
    /// Creates the instance (the binding's `create`): `worker` and `class`
    /// are the host's to set, never JavaScript's.
    Create {
        #[serde(default)]
        worker: String,
        #[serde(default)]
        class: String,
        payload: String,
    },
    Status,
    Pause,
    Resume,
    Terminate,
    Restart,
    SendEvent {
        #[serde(rename = "type")]
        event_type: String,
        payload: String,
    },
    /// Before a step: its stored result, or its attempts and start.
    Step {
        key: String,
        #[serde(flatten)]
        kind: StepKind,
    },
    /// A step returned `result` (JSON).
    StepDone {
        key: String,
        result: String,
    },
    /// The run ended.
    End {
        #[serde(flatten)]
        end: RunEnd,
    },
}

/// An instance due to run (the engine's `Work::WorkflowRun`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowDue {
    pub scope: WorkflowScope,
    pub id: String,
    /// The Worker (`<namespace>/<name>`) that runs it, and its class.
    pub worker_id: String,
    pub class: String,
    /// Its params as JSON.
    pub payload: String,
    pub created_ms: i64,
}

impl WorkflowDue {
    /// The path its run's tail event shows (the Worker never sees it):
    /// `/__workflow/<workflow>/<instance id>`, each percent-encoded.
    pub fn tail_path(&self) -> String {
        let encode =
            |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        format!(
            "/__workflow/{}/{}",
            encode(&self.scope.workflow),
            encode(&self.id)
        )
    }

    /// What a run's JavaScript gets (`js/40_workflow.js` of
    /// isolane-bindings): `{workflow, className, instanceId, payload,
    /// timestamp}`, `payload` as JSON text.
    pub fn event_json(&self) -> String {
        serde_json::json!({
            "workflow": self.scope.workflow,
            "className": self.class,
            "instanceId": self.id,
            "payload": self.payload,
            "timestamp": self.created_ms,
        })
        .to_string()
    }
}

/// The size checks of an op's values.
pub(crate) fn check_sizes(op: &WorkflowOp) -> Result<(), WorkflowError> {
    let (what, len) = match op {
        WorkflowOp::Create { payload, .. } => ("the instance's params", payload.len()),
        WorkflowOp::SendEvent { payload, .. } => ("the event's payload", payload.len()),
        WorkflowOp::StepDone { result, .. } => ("the step's result", result.len()),
        WorkflowOp::End {
            end: RunEnd::Complete { output },
        } => ("the workflow's output", output.len()),
        _ => return Ok(()),
    };
    if len > MAX_VALUE_BYTES {
        return Err(WorkflowError::TooLarge { what, len });
    }
    Ok(())
}

/// Whether nothing runs any more in an instance of `status`.
pub(crate) fn is_terminal(status: &str) -> bool {
    matches!(status, "complete" | "errored" | "terminated")
}

/// Cloudflare's `status()` shape, `{status, error?, output?}`, of an
/// instance stored with `status`, `paused`, `output` and `error` (JSON).
pub(crate) fn status_answer(
    status: String,
    paused: bool,
    output: Option<String>,
    error: Option<String>,
) -> serde_json::Value {
    let status = if paused && !is_terminal(&status) {
        "paused".to_owned()
    } else {
        status
    };
    let parse = |text: Option<String>| {
        text.and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    };
    let mut answer = serde_json::json!({ "status": status });
    if let Some(error) = parse(error) {
        answer["error"] = error;
    }
    if let Some(output) = parse(output) {
        answer["output"] = output;
    }
    answer
}

/// What a run's end writes to its instance: the `SET` of its status and
/// text column (parameter 4 is the text), the text, and its wake-up time
/// (ms; `None` keeps it). `event_sent`: an event of the type a waiting run
/// waits for was sent while it ran (it wakes at once).
pub(crate) fn end_write(
    end: RunEnd,
    event_sent: bool,
    now: i64,
) -> (&'static str, Option<String>, Option<i64>) {
    match end {
        RunEnd::Complete { output } => ("status = 'complete', output = ", Some(output), None),
        RunEnd::Errored { error } => ("status = 'errored', error = ", Some(error), None),
        RunEnd::Waiting {
            wake_at,
            waiting_for,
        } => {
            let wake_at = if event_sent { now } else { wake_at };
            (
                "status = 'waiting', waiting_for = ",
                waiting_for,
                Some(wake_at),
            )
        }
        RunEnd::Retry { delay_ms } => (
            "status = 'running', waiting_for = ",
            None,
            Some(now.saturating_add(delay_ms.max(0))),
        ),
    }
}

impl RunEnd {
    /// The event type a waiting run waits for.
    pub(crate) fn waiting_for(&self) -> Option<&str> {
        match self {
            RunEnd::Waiting {
                waiting_for: Some(event_type),
                ..
            } => Some(event_type),
            _ => None,
        }
    }
}

/// A new instance id.
pub(crate) fn new_id() -> String {
    crate::queue::new_id()
}

impl Store {
    /// Runs `op` on instance `id` of `scope` (`None` with `Create`: a new
    /// id), answered with JSON: `{id}` for a creation, `status()`'s shape
    /// for a status, a step's stored result or what it needs to run.
    pub async fn workflow(
        &self,
        scope: WorkflowScope,
        id: Option<String>,
        op: WorkflowOp,
    ) -> Result<serde_json::Value, StoreError> {
        let answer = match &self.backend {
            Backend::Sqlite(folder) => {
                let now = crate::now_ms();
                blocking(folder, move |db, _| {
                    db.workflow_op(&scope, id.as_deref(), op, now)
                })
                .await
            }
            Backend::Postgres(db) => db.workflow_op(scope, id, op, crate::now_ms()).await,
        };
        answer.inspect(|_| self.workflow_changed())
    }

    /// A receiver that changes with each workflow operation of this
    /// process (the runner waits on it: nothing done between two looks is
    /// missed).
    pub fn workflow_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.workflows_changed.subscribe()
    }

    fn workflow_changed(&self) {
        self.workflows_changed
            .send_modify(|n| *n = n.wrapping_add(1));
    }

    /// When the next instance not due at `now` (ms) is (a sleep's end, a
    /// retry's delay, an event's timeout), if any.
    pub async fn workflow_next_wake(&self, now: i64) -> Result<Option<i64>, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.workflow_next_wake(now)).await
            }
            Backend::Postgres(db) => db.workflow_next_wake(None, now).await,
        }
    }

    /// Up to `max` instances due to run at `now` (ms), marked running.
    pub async fn workflow_due(&self, now: i64, max: u32) -> Result<Vec<WorkflowDue>, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.workflow_due(now, max)).await
            }
            Backend::Postgres(db) => db.workflow_due(None, now, max).await,
        }
    }

    /// A run of instance `id` ended without recording how: it runs again
    /// after its step's retry delay, or is errored after
    /// [`MAX_FAILED_RUNS`] such runs in a row.
    pub async fn workflow_failed(
        &self,
        scope: WorkflowScope,
        id: String,
        error: String,
    ) -> Result<(), StoreError> {
        let recorded = match &self.backend {
            Backend::Sqlite(folder) => {
                let now = crate::now_ms();
                blocking(folder, move |db, _| {
                    db.workflow_failed(&scope, &id, &error, now)
                })
                .await
            }
            Backend::Postgres(db) => db.workflow_failed(scope, id, error, crate::now_ms()).await,
        };
        recorded.inspect(|_| self.workflow_changed())
    }
}

/// How many instances of a workflow are in each status (the metrics'
/// gauges, `isolane_workflow_instances`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowCounts {
    pub scope: WorkflowScope,
    /// Queued (created, never run).
    pub queued: u64,
    pub running: u64,
    /// Sleeping, waiting for an event or a retry's delay.
    pub waiting: u64,
    pub paused: u64,
    pub errored: u64,
    pub complete: u64,
    pub terminated: u64,
}

impl WorkflowCounts {
    pub fn new(scope: WorkflowScope) -> Self {
        Self {
            scope,
            ..Self::default()
        }
    }

    /// Counts `n` more instances in `status` (one of the store's).
    pub(crate) fn add(&mut self, status: &str, n: i64) {
        let n = u64::try_from(n).unwrap_or(0);
        let slot = match status {
            "queued" => &mut self.queued,
            "running" => &mut self.running,
            "waiting" => &mut self.waiting,
            "paused" => &mut self.paused,
            "errored" => &mut self.errored,
            "complete" => &mut self.complete,
            "terminated" => &mut self.terminated,
            _ => return,
        };
        *slot += n;
    }

    /// Each status and its count, in a fixed order (the metrics' `status`
    /// label's values).
    pub fn by_status(&self) -> [(&'static str, u64); 7] {
        [
            ("queued", self.queued),
            ("running", self.running),
            ("waiting", self.waiting),
            ("paused", self.paused),
            ("errored", self.errored),
            ("complete", self.complete),
            ("terminated", self.terminated),
        ]
    }
}

/// A cluster's runner: each workflow run by its owner node, fenced by the
/// workflow's owner epoch (PostgreSQL only: [`WorkflowError::NoOwners`]
/// from SQLite, whose only process runs every instance).
impl Store {
    /// Increments `scope`'s owner epoch for `owner`; the new epoch, which
    /// [`Store::workflow_due_of`] is fenced with.
    pub async fn workflow_take(
        &self,
        scope: WorkflowScope,
        owner: String,
    ) -> Result<i64, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Err(WorkflowError::NoOwners.into()),
            Backend::Postgres(db) => db.workflow_take(scope, owner).await,
        }
    }

    /// Up to `max` instances of `scope` due at `now` (ms), marked running;
    /// refused ([`WorkflowError::Fenced`]) once another process took the
    /// workflow after epoch `fence`.
    pub async fn workflow_due_of(
        &self,
        scope: WorkflowScope,
        fence: i64,
        now: i64,
        max: u32,
    ) -> Result<Vec<WorkflowDue>, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Err(WorkflowError::NoOwners.into()),
            Backend::Postgres(db) => db.workflow_due(Some((scope, fence)), now, max).await,
        }
    }

    /// When the next instance of `scope` not due at `now` (ms) is.
    pub async fn workflow_next_wake_of(
        &self,
        scope: WorkflowScope,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Err(WorkflowError::NoOwners.into()),
            Backend::Postgres(db) => db.workflow_next_wake(Some(scope), now).await,
        }
    }

    /// The instances of each of `scopes` by status (PostgreSQL: a
    /// cluster's metrics); a workflow without instances is left out.
    pub async fn workflow_counts(
        &self,
        scopes: Vec<WorkflowScope>,
    ) -> Result<Vec<WorkflowCounts>, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Err(WorkflowError::NoOwners.into()),
            Backend::Postgres(db) => db.workflow_counts(scopes).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_parse_from_javascripts_json() {
        let op: WorkflowOp = serde_json::from_str(
            r#"{"op":"step","key":"a#0","kind":"do","delayMs":5,"backoff":"linear"}"#,
        )
        .unwrap();
        assert_eq!(
            op,
            WorkflowOp::Step {
                key: "a#0".into(),
                kind: StepKind::Do {
                    delay_ms: 5,
                    backoff: Backoff::Linear
                }
            }
        );
        let op: WorkflowOp = serde_json::from_str(
            r#"{"op":"end","end":"waiting","wakeAt":7,"waitingFor":"approval"}"#,
        )
        .unwrap();
        assert_eq!(
            op,
            WorkflowOp::End {
                end: RunEnd::Waiting {
                    wake_at: 7,
                    waiting_for: Some("approval".into())
                }
            }
        );
        assert_eq!(retry_delay(100, Backoff::Exponential, 3), 400);
        assert_eq!(retry_delay(100, Backoff::Linear, 3), 300);
        assert_eq!(retry_delay(100, Backoff::Constant, 3), 100);
        assert!(retry_delay(100, Backoff::Exponential, 500) > 0);
        assert!(is_instance_id("order-42_a") && !is_instance_id("-a") && !is_instance_id("a b"));
        let big = WorkflowOp::StepDone {
            key: "k".into(),
            result: "x".repeat(MAX_VALUE_BYTES + 1),
        };
        assert!(matches!(
            check_sizes(&big),
            Err(WorkflowError::TooLarge { .. })
        ));
    }
}
