//! Workflows' instances, step logs and events in PostgreSQL (migration 11;
//! see `crate::workflow`): the SQLite backend's operations and semantics,
//! each operation in one transaction that locks its instance's row first
//! (`FOR UPDATE`), so operations on one instance from several nodes run one
//! at a time. Instances due are taken `FOR UPDATE SKIP LOCKED`; a runner on
//! a cluster asks for one workflow's, fenced by the workflow's owner epoch
//! (`workflow_owner`), as a queue's leases are. An operation's statements
//! (each on rows of one instance, by its key) are prepared once per
//! connection (`prepare_cached`): one round trip each, not two. The claim
//! of due instances is not: its plan depends on its values (one workflow or
//! all of them), which a statement planned once for any would lose.

use deadpool_postgres::Transaction;
use serde_json::{Value, json};

use super::Postgres;
use crate::StoreError;
use crate::workflow::{
    self, MAX_FAILED_RUNS, MAX_STEPS, RunEnd, StepKind, WorkflowCounts, WorkflowDue, WorkflowError,
    WorkflowOp, WorkflowScope, is_terminal,
};

/// The statuses after which nothing runs.
const TERMINAL: &str = "('complete', 'errored', 'terminated')";

/// Where an instance is: its namespace, workflow and id, as query
/// parameters `$1`, `$2`, `$3`.
struct At<'a> {
    scope: &'a WorkflowScope,
    id: &'a str,
}

impl At<'_> {
    fn keys(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 3] {
        [&self.scope.namespace, &self.scope.workflow, &self.id]
    }
}

/// The instance's status and whether it is paused, its row locked.
async fn status_of(tx: &Transaction<'_>, at: &At<'_>) -> Result<(String, bool), StoreError> {
    let row = tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT status, paused FROM workflow_instance WHERE namespace = $1 AND workflow = $2 AND id = $3 FOR UPDATE",
            )
            .await?,
            &at.keys(),
        )
        .await?
        .ok_or_else(|| WorkflowError::NotFound {
            id: at.id.to_owned(),
        })?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Cloudflare's `status()` shape: `{status, error?, output?}`.
async fn status_json(tx: &Transaction<'_>, at: &At<'_>) -> Result<Value, StoreError> {
    let row = tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT status, paused, output, error FROM workflow_instance WHERE namespace = $1 AND workflow = $2 AND id = $3",
            )
            .await?,
            &at.keys(),
        )
        .await?
        .ok_or_else(|| WorkflowError::NotFound {
            id: at.id.to_owned(),
        })?;
    let (status, paused): (String, bool) = (row.try_get(0)?, row.try_get(1)?);
    let (output, error) = (row.try_get(2)?, row.try_get(3)?);
    Ok(workflow::status_answer(status, paused, output, error))
}

impl Postgres {
    /// Runs `op` on instance `id` (a new one's id: given, or made) at `now`.
    pub(crate) async fn workflow_op(
        &self,
        scope: WorkflowScope,
        id: Option<String>,
        op: WorkflowOp,
        now: i64,
    ) -> Result<Value, StoreError> {
        workflow::check_sizes(&op)?;
        let id = match (id, &op) {
            (Some(id), _) => id,
            (None, WorkflowOp::Create { .. }) => workflow::new_id(),
            (None, _) => return Err(WorkflowError::NotFound { id: String::new() }.into()),
        };
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let at = At {
                scope: &scope,
                id: &id,
            };
            let answer = apply(&tx, &at, op, now).await?;
            tx.commit().await?;
            Ok(answer)
        })
        .await
    }

    /// Increments `scope`'s owner epoch for `owner`; the new epoch.
    pub(crate) async fn workflow_take(
        &self,
        scope: WorkflowScope,
        owner: String,
    ) -> Result<i64, StoreError> {
        self.run(move |client| async move {
            let row = client
                .query_one(
                    "INSERT INTO workflow_owner (namespace, workflow, owner, epoch) VALUES ($1, $2, $3, 1)
                     ON CONFLICT (namespace, workflow) DO UPDATE SET owner = excluded.owner, epoch = workflow_owner.epoch + 1
                     RETURNING epoch",
                    &[&scope.namespace, &scope.workflow, &owner],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    /// Up to `max` instances due at `now` (of `of`'s workflow only, when
    /// given, refused unless its epoch is still the one given), marked
    /// running.
    pub(crate) async fn workflow_due(
        &self,
        of: Option<(WorkflowScope, i64)>,
        now: i64,
        max: u32,
    ) -> Result<Vec<WorkflowDue>, StoreError> {
        let max = i64::from(max);
        self.run(move |mut client| async move {
            let tx = client.transaction().await?;
            if let Some((scope, mine)) = &of {
                fenced(&tx, scope, *mine).await?;
            }
            let (namespace, flow) = match &of {
                Some((scope, _)) => (Some(scope.namespace.as_str()), Some(scope.workflow.as_str())),
                None => (None, None),
            };
            let rows = tx
                .query(
                    "WITH picked AS MATERIALIZED (
                         SELECT namespace, workflow, id FROM workflow_instance
                         WHERE wake_at <= $1 AND NOT paused AND status IN ('queued', 'running', 'waiting')
                           AND ($3::text IS NULL OR (namespace = $3 AND workflow = $4))
                         ORDER BY wake_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                     UPDATE workflow_instance AS i SET status = 'running', waiting_for = NULL
                     FROM picked WHERE i.namespace = picked.namespace AND i.workflow = picked.workflow AND i.id = picked.id
                     RETURNING i.namespace, i.workflow, i.id, i.worker, i.class, i.payload, i.created_at",
                    &[&now, &max, &namespace, &flow],
                )
                .await?;
            let due = rows.iter().map(due_of).collect::<Result<Vec<_>, _>>()?;
            tx.commit().await?;
            Ok(due)
        })
        .await
    }

    /// The earliest wake-up after `now` of an instance (of `of`, when
    /// given) that is not paused nor finished.
    pub(crate) async fn workflow_next_wake(
        &self,
        of: Option<WorkflowScope>,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.run(move |client| async move {
            let (namespace, flow) = match &of {
                Some(scope) => (Some(scope.namespace.as_str()), Some(scope.workflow.as_str())),
                None => (None, None),
            };
            let row = client
                .query_one(
                    "SELECT min(wake_at) FROM workflow_instance
                     WHERE wake_at > $1 AND NOT paused AND status IN ('queued', 'running', 'waiting')
                       AND ($2::text IS NULL OR (namespace = $2 AND workflow = $3))",
                    &[&now, &namespace, &flow],
                )
                .await?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    /// A run of `id` ended without recording how (`error`): it runs again
    /// after its last step's retry delay, or is errored after
    /// [`MAX_FAILED_RUNS`] such runs in a row.
    pub(crate) async fn workflow_failed(
        &self,
        scope: WorkflowScope,
        id: String,
        error: String,
        now: i64,
    ) -> Result<(), StoreError> {
        let failed = json!({
            "name": "Error",
            "message": format!("the workflow's run() failed {MAX_FAILED_RUNS} times in a row; the last: {error}"),
        })
        .to_string();
        self.run(move |client| async move {
            client
                .execute(
                    &format!(
                        "UPDATE workflow_instance SET failures = failures + 1, last_failure = $4,
                            wake_at = $5 + retry_delay,
                            status = CASE WHEN failures + 1 >= $6 THEN 'errored' ELSE status END,
                            error = CASE WHEN failures + 1 >= $6 THEN $7 ELSE error END
                         WHERE namespace = $1 AND workflow = $2 AND id = $3 AND status NOT IN {TERMINAL}"
                    ),
                    &[
                        &scope.namespace,
                        &scope.workflow,
                        &id,
                        &error,
                        &now,
                        &MAX_FAILED_RUNS,
                        &failed,
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    /// How many instances of each of `scopes` are in each status.
    pub(crate) async fn workflow_counts(
        &self,
        scopes: Vec<WorkflowScope>,
    ) -> Result<Vec<WorkflowCounts>, StoreError> {
        let (namespaces, flows): (Vec<String>, Vec<String>) = scopes
            .into_iter()
            .map(|scope| (scope.namespace, scope.workflow))
            .unzip();
        self.run(move |client| async move {
            let rows = client
                .query(
                    "SELECT namespace, workflow, CASE WHEN paused AND status NOT IN ('complete', 'errored', 'terminated') THEN 'paused' ELSE status END, count(*)
                     FROM workflow_instance
                     WHERE (namespace, workflow) IN (SELECT * FROM unnest($1::text[], $2::text[]))
                     GROUP BY 1, 2, 3 ORDER BY 1, 2",
                    &[&namespaces, &flows],
                )
                .await?;
            let mut counts: Vec<WorkflowCounts> = Vec::new();
            for row in rows {
                let scope = WorkflowScope::new(
                    row.try_get::<_, String>(0)?,
                    row.try_get::<_, String>(1)?,
                );
                let (status, n): (String, i64) = (row.try_get(2)?, row.try_get(3)?);
                match counts.last_mut() {
                    Some(last) if last.scope == scope => last.add(&status, n),
                    _ => {
                        let mut fresh = WorkflowCounts::new(scope);
                        fresh.add(&status, n);
                        counts.push(fresh);
                    }
                }
            }
            Ok(counts)
        })
        .await
    }
}

/// Refused unless `scope`'s owner epoch is still `mine`.
async fn fenced(tx: &Transaction<'_>, scope: &WorkflowScope, mine: i64) -> Result<(), StoreError> {
    // FOR SHARE: a take waits for the claim this check is part of.
    let current: i64 = match tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT epoch FROM workflow_owner WHERE namespace = $1 AND workflow = $2 FOR SHARE",
            )
            .await?,
            &[&scope.namespace, &scope.workflow],
        )
        .await?
    {
        Some(row) => row.try_get(0)?,
        None => 0,
    };
    if current != mine {
        return Err(WorkflowError::Fenced { mine, current }.into());
    }
    Ok(())
}

/// An instance claimed (`namespace, workflow, id, worker, class, payload,
/// created_at`).
fn due_of(row: &tokio_postgres::Row) -> Result<WorkflowDue, StoreError> {
    Ok(WorkflowDue {
        scope: WorkflowScope::new(row.try_get::<_, String>(0)?, row.try_get::<_, String>(1)?),
        id: row.try_get(2)?,
        worker_id: row.try_get(3)?,
        class: row.try_get(4)?,
        payload: row.try_get(5)?,
        created_ms: row.try_get(6)?,
    })
}

/// Runs one operation in `tx`.
async fn apply(
    tx: &Transaction<'_>,
    at: &At<'_>,
    op: WorkflowOp,
    now: i64,
) -> Result<Value, StoreError> {
    Ok(match op {
        WorkflowOp::Create {
            worker,
            class,
            payload,
        } => create(tx, at, (&worker, &class, &payload), now).await?,
        WorkflowOp::Status => status_json(tx, at).await?,
        WorkflowOp::Pause | WorkflowOp::Resume | WorkflowOp::Terminate | WorkflowOp::Restart => {
            control(tx, at, &op).await?;
            Value::Null
        }
        WorkflowOp::SendEvent {
            event_type,
            payload,
        } => send_event(tx, at, (&event_type, &payload), now).await?,
        WorkflowOp::Step { key, kind } => step(tx, at, &key, kind, now).await?,
        WorkflowOp::StepDone { key, result } => step_done(tx, at, &key, &result, now).await?,
        WorkflowOp::End { end } => {
            end_run(tx, at, end, now).await?;
            Value::Null
        }
    })
}

async fn create(
    tx: &Transaction<'_>,
    at: &At<'_>,
    (worker, class, payload): (&str, &str, &str),
    now: i64,
) -> Result<Value, StoreError> {
    if !workflow::is_instance_id(at.id) {
        return Err(WorkflowError::InvalidId {
            id: at.id.to_owned(),
        }
        .into());
    }
    let inserted = tx
        .execute(
            &tx.prepare_cached(
                "INSERT INTO workflow_instance (namespace, workflow, id, worker, class, payload, created_at, status)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued') ON CONFLICT DO NOTHING",
            )
            .await?,
            &[
                &at.scope.namespace,
                &at.scope.workflow,
                &at.id,
                &worker,
                &class,
                &payload,
                &now,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(WorkflowError::Exists {
            id: at.id.to_owned(),
        }
        .into());
    }
    Ok(json!({ "id": at.id }))
}

/// `pause()`, `resume()`, `terminate()`, `restart()`.
async fn control(tx: &Transaction<'_>, at: &At<'_>, op: &WorkflowOp) -> Result<(), StoreError> {
    let (status, _) = status_of(tx, at).await?;
    let set = match op {
        WorkflowOp::Pause if !is_terminal(&status) => "paused = true",
        WorkflowOp::Resume => "paused = false",
        WorkflowOp::Terminate if !is_terminal(&status) => "status = 'terminated', paused = false",
        WorkflowOp::Restart => {
            for table in ["workflow_step", "workflow_event"] {
                tx.execute(
                    &tx.prepare_cached(&format!(
                        "DELETE FROM {table} WHERE namespace = $1 AND workflow = $2 AND id = $3"
                    ))
                    .await?,
                    &at.keys(),
                )
                .await?;
            }
            "status = 'queued', paused = false, wake_at = 0, waiting_for = NULL, failures = 0, last_failure = NULL, output = NULL, error = NULL"
        }
        _ => return Ok(()),
    };
    tx.execute(
        &tx.prepare_cached(&format!(
            "UPDATE workflow_instance SET {set} WHERE namespace = $1 AND workflow = $2 AND id = $3"
        ))
        .await?,
        &at.keys(),
    )
    .await?;
    Ok(())
}

async fn send_event(
    tx: &Transaction<'_>,
    at: &At<'_>,
    (event_type, payload): (&str, &str),
    now: i64,
) -> Result<Value, StoreError> {
    status_of(tx, at).await?;
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO workflow_event (namespace, workflow, id, type, payload, sent_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .await?,
        &[ns, flow, id, &event_type, &payload, &now],
    )
    .await?;
    // An instance waiting for this type runs at once.
    tx.execute(
        &tx.prepare_cached(
            "UPDATE workflow_instance SET wake_at = $4 WHERE namespace = $1 AND workflow = $2 AND id = $3 AND status = 'waiting' AND waiting_for = $5",
        )
        .await?,
        &[ns, flow, id, &now, &event_type],
    )
    .await?;
    Ok(Value::Null)
}

/// A step returned `result`: stored, unless the instance finished.
async fn step_done(
    tx: &Transaction<'_>,
    at: &At<'_>,
    key: &str,
    result: &str,
    now: i64,
) -> Result<Value, StoreError> {
    let (status, _) = status_of(tx, at).await?;
    if is_terminal(&status) {
        return Err(WorkflowError::Stopped { status }.into());
    }
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO workflow_step (namespace, workflow, id, step, result, started_at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (namespace, workflow, id, step) DO UPDATE SET result = excluded.result",
        )
        .await?,
        &[ns, flow, id, &key, &result, &now],
    )
    .await?;
    tx.execute(
        &tx.prepare_cached(
            "UPDATE workflow_instance SET failures = 0 WHERE namespace = $1 AND workflow = $2 AND id = $3",
        )
        .await?,
        &at.keys(),
    )
    .await?;
    Ok(Value::Null)
}

/// Before a step: its stored result (`{result}`, JSON text), or what it
/// needs to run (`{attempts, startedAt, lastFailure}`).
async fn step(
    tx: &Transaction<'_>,
    at: &At<'_>,
    key: &str,
    kind: StepKind,
    now: i64,
) -> Result<Value, StoreError> {
    let (status, paused) = status_of(tx, at).await?;
    if is_terminal(&status) || paused {
        let status = if paused { "paused".to_owned() } else { status };
        return Err(WorkflowError::Stopped { status }.into());
    }
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    let stored = tx
        .query_opt(
            &tx.prepare_cached(
                "SELECT result, started_at FROM workflow_step WHERE namespace = $1 AND workflow = $2 AND id = $3 AND step = $4",
            )
            .await?,
            &[ns, flow, id, &key],
        )
        .await?;
    let started = match stored {
        Some(row) => {
            if let Some(result) = row.try_get::<_, Option<String>>(0)? {
                return Ok(json!({ "result": result }));
            }
            row.try_get::<_, i64>(1)?
        }
        None => first_run(tx, at, key, now).await?,
    };
    match kind {
        StepKind::Do { delay_ms, backoff } => {
            count_attempt(tx, at, key, (delay_ms, backoff), (started, now)).await
        }
        StepKind::Sleep => Ok(json!({ "startedAt": started, "now": now })),
        StepKind::Event { event_type } => {
            take_event(tx, at, key, &event_type, (started, now)).await
        }
    }
}

/// Step `key` seen for the first time, at `now`: recorded (unless the
/// instance has `MAX_STEPS` already); `now` is when it started.
async fn first_run(
    tx: &Transaction<'_>,
    at: &At<'_>,
    key: &str,
    now: i64,
) -> Result<i64, StoreError> {
    let steps: i64 = tx
        .query_one(
            &tx.prepare_cached(
                "SELECT count(*) FROM workflow_step WHERE namespace = $1 AND workflow = $2 AND id = $3",
            )
            .await?,
            &at.keys(),
        )
        .await?
        .try_get(0)?;
    if steps >= MAX_STEPS {
        return Err(WorkflowError::TooManySteps.into());
    }
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO workflow_step (namespace, workflow, id, step, started_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .await?,
        &[ns, flow, id, &key, &now],
    )
    .await?;
    Ok(now)
}

/// A new attempt of `step.do` step `key`, counted before it runs; the
/// instance's retry delay set to the one that follows it.
async fn count_attempt(
    tx: &Transaction<'_>,
    at: &At<'_>,
    key: &str,
    (delay_ms, backoff): (i64, workflow::Backoff),
    (started, now): (i64, i64),
) -> Result<Value, StoreError> {
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    let attempts: i64 = tx
        .query_one(
            &tx.prepare_cached(
                "UPDATE workflow_step SET attempts = attempts + 1 WHERE namespace = $1 AND workflow = $2 AND id = $3 AND step = $4
                 RETURNING attempts",
            )
            .await?,
            &[ns, flow, id, &key],
        )
        .await?
        .try_get(0)?;
    let delay = workflow::retry_delay(delay_ms, backoff, attempts);
    let failure: Option<String> = tx
        .query_one(
            &tx.prepare_cached(
                "UPDATE workflow_instance SET retry_delay = $4 WHERE namespace = $1 AND workflow = $2 AND id = $3
                 RETURNING last_failure",
            )
            .await?,
            &[ns, flow, id, &delay],
        )
        .await?
        .try_get(0)?;
    Ok(
        json!({ "attempts": attempts, "startedAt": started, "now": now, "retryDelayMs": delay, "lastFailure": failure }),
    )
}

/// The oldest event of `event_type` sent to the instance, taken as step
/// `key`'s result; or when the wait began.
async fn take_event(
    tx: &Transaction<'_>,
    at: &At<'_>,
    key: &str,
    event_type: &str,
    (started, now): (i64, i64),
) -> Result<Value, StoreError> {
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    let taken = tx
        .query_opt(
            &tx.prepare_cached(
                "DELETE FROM workflow_event WHERE seq = (
                     SELECT seq FROM workflow_event WHERE namespace = $1 AND workflow = $2 AND id = $3 AND type = $4
                     ORDER BY seq LIMIT 1)
                 RETURNING payload, sent_at",
            )
            .await?,
            &[ns, flow, id, &event_type],
        )
        .await?;
    let Some(row) = taken else {
        return Ok(json!({ "startedAt": started, "now": now }));
    };
    let (payload, sent_at): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
    let payload = serde_json::from_str::<Value>(&payload).unwrap_or(Value::Null);
    let result =
        json!({ "payload": payload, "timestamp": sent_at, "type": event_type }).to_string();
    tx.execute(
        &tx.prepare_cached(
            "UPDATE workflow_step SET result = $5 WHERE namespace = $1 AND workflow = $2 AND id = $3 AND step = $4",
        )
        .await?,
        &[ns, flow, id, &key, &result],
    )
    .await?;
    Ok(json!({ "result": result }))
}

/// How a run ended, unless the instance finished or was terminated since.
async fn end_run(
    tx: &Transaction<'_>,
    at: &At<'_>,
    end: RunEnd,
    now: i64,
) -> Result<(), StoreError> {
    status_of(tx, at).await?;
    let (ns, flow, id) = (&at.scope.namespace, &at.scope.workflow, &at.id);
    // An event sent while the run was under way wakes it at once.
    let sent = match end.waiting_for() {
        Some(event_type) => tx
            .query_opt(
                &tx.prepare_cached(
                    "SELECT 1 FROM workflow_event WHERE namespace = $1 AND workflow = $2 AND id = $3 AND type = $4 LIMIT 1",
                )
                .await?,
                &[ns, flow, id, &event_type],
            )
            .await?
            .is_some(),
        None => false,
    };
    let (set, text, wake) = workflow::end_write(end, sent, now);
    tx.execute(
        &tx.prepare_cached(
            &format!(
                "UPDATE workflow_instance SET {set}$4, wake_at = coalesce($5, wake_at), failures = 0 WHERE namespace = $1 AND workflow = $2 AND id = $3 AND status NOT IN {TERMINAL}"
            ),
        )
        .await?,
        &[ns, flow, id, &text, &wake],
    )
    .await?;
    Ok(())
}
