//! Workflows' instances, step logs and events in SQLite (see
//! `crate::workflow`).

use rusqlite::{OptionalExtension as _, Transaction, params};
use serde_json::{Value, json};

use super::Sqlite;
use crate::StoreError;
use crate::workflow::{
    self, MAX_FAILED_RUNS, MAX_STEPS, RunEnd, StepKind, WorkflowDue, WorkflowError, WorkflowOp,
    WorkflowScope, is_terminal,
};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workflow_instance (
    namespace TEXT NOT NULL,
    workflow TEXT NOT NULL,
    id TEXT NOT NULL,
    worker TEXT NOT NULL,
    class TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    wake_at INTEGER NOT NULL DEFAULT 0,
    waiting_for TEXT,
    retry_delay INTEGER NOT NULL DEFAULT 1000,
    failures INTEGER NOT NULL DEFAULT 0,
    last_failure TEXT,
    output TEXT,
    error TEXT,
    PRIMARY KEY (namespace, workflow, id)
);
CREATE INDEX IF NOT EXISTS workflow_instance_due ON workflow_instance (wake_at);
CREATE TABLE IF NOT EXISTS workflow_step (
    namespace TEXT NOT NULL,
    workflow TEXT NOT NULL,
    id TEXT NOT NULL,
    step TEXT NOT NULL,
    result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    PRIMARY KEY (namespace, workflow, id, step)
);
CREATE TABLE IF NOT EXISTS workflow_event (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    workflow TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    sent_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_event_of ON workflow_event (namespace, workflow, id, type, seq);
";

/// The statuses after which nothing runs.
const TERMINAL: &str = "('complete', 'errored', 'terminated')";

/// An instance's status and whether it is paused.
fn status_of(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
) -> Result<(String, bool), StoreError> {
    tx.query_row(
        "SELECT status, paused FROM workflow_instance WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
        params![scope.namespace, scope.workflow, id],
        |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? != 0)),
    )
    .optional()?
    .ok_or_else(|| WorkflowError::NotFound { id: id.to_owned() }.into())
}

/// The instance's status, refused when its run must stop.
fn running(tx: &Transaction<'_>, scope: &WorkflowScope, id: &str) -> Result<(), StoreError> {
    let (status, paused) = status_of(tx, scope, id)?;
    if is_terminal(&status) || paused {
        let status = if paused { "paused".to_owned() } else { status };
        return Err(WorkflowError::Stopped { status }.into());
    }
    Ok(())
}

/// Cloudflare's `status()` shape: `{status, error?, output?}`.
fn status_json(tx: &Transaction<'_>, scope: &WorkflowScope, id: &str) -> Result<Value, StoreError> {
    let (status, paused, output, error): (String, bool, Option<String>, Option<String>) = tx
        .query_row(
            "SELECT status, paused, output, error FROM workflow_instance WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
            params![scope.namespace, scope.workflow, id],
            |row| Ok((row.get(0)?, row.get::<_, i64>(1)? != 0, row.get(2)?, row.get(3)?)),
        )
        .optional()?
        .ok_or_else(|| WorkflowError::NotFound { id: id.to_owned() })?;
    Ok(workflow::status_answer(status, paused, output, error))
}

impl Sqlite {
    /// Runs `op` on instance `id` (a new one's id: given, or made) at `now`.
    pub(crate) fn workflow_op(
        &self,
        scope: &WorkflowScope,
        id: Option<&str>,
        op: WorkflowOp,
        now: i64,
    ) -> Result<Value, StoreError> {
        workflow::check_sizes(&op)?;
        let mut db = self.lock();
        let tx = db.transaction()?;
        let made;
        let id = match (id, &op) {
            (Some(id), _) => id,
            (None, WorkflowOp::Create { .. }) => {
                made = workflow::new_id();
                &made
            }
            (None, _) => return Err(WorkflowError::NotFound { id: String::new() }.into()),
        };
        let answer = match op {
            WorkflowOp::Create {
                worker,
                class,
                payload,
            } => create(&tx, scope, id, (&worker, &class, &payload), now)?,
            WorkflowOp::Status => status_json(&tx, scope, id)?,
            WorkflowOp::Pause
            | WorkflowOp::Resume
            | WorkflowOp::Terminate
            | WorkflowOp::Restart => {
                control(&tx, scope, id, &op)?;
                Value::Null
            }
            WorkflowOp::SendEvent {
                event_type,
                payload,
            } => send_event(&tx, scope, id, (&event_type, &payload), now)?,
            WorkflowOp::Step { key, kind } => step(&tx, scope, id, &key, kind, now)?,
            WorkflowOp::StepDone { key, result } => step_done(&tx, scope, id, &key, &result, now)?,
            WorkflowOp::End { end } => {
                end_run(&tx, scope, id, end, now)?;
                Value::Null
            }
        };
        tx.commit()?;
        Ok(answer)
    }

    /// Up to `max` instances due at `now` (not paused, not finished),
    /// marked running.
    pub(crate) fn workflow_due(&self, now: i64, max: u32) -> Result<Vec<WorkflowDue>, StoreError> {
        let mut db = self.lock();
        let tx = db.transaction()?;
        let due = {
            let mut statement = tx.prepare_cached(
                "SELECT namespace, workflow, id, worker, class, payload, created_at FROM workflow_instance
                 WHERE wake_at <= ?1 AND paused = 0 AND status IN ('queued', 'running', 'waiting')
                 ORDER BY wake_at LIMIT ?2",
            )?;
            let rows = statement.query_map(params![now, max], |row| {
                Ok(WorkflowDue {
                    scope: WorkflowScope::new(row.get::<_, String>(0)?, row.get::<_, String>(1)?),
                    id: row.get(2)?,
                    worker_id: row.get(3)?,
                    class: row.get(4)?,
                    payload: row.get(5)?,
                    created_ms: row.get(6)?,
                })
            })?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        for instance in &due {
            tx.execute(
                "UPDATE workflow_instance SET status = 'running', waiting_for = NULL WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
                params![instance.scope.namespace, instance.scope.workflow, instance.id],
            )?;
        }
        tx.commit()?;
        Ok(due)
    }

    /// The earliest wake-up after `now` of an instance that is not paused
    /// nor finished.
    pub(crate) fn workflow_next_wake(&self, now: i64) -> Result<Option<i64>, StoreError> {
        let db = self.lock();
        let next = db.query_row(
            "SELECT min(wake_at) FROM workflow_instance
             WHERE wake_at > ?1 AND paused = 0 AND status IN ('queued', 'running', 'waiting')",
            params![now],
            |row| row.get::<_, Option<i64>>(0),
        )?;
        Ok(next)
    }

    /// A run of `id` ended without recording how (`error`): it runs again
    /// after its last step's retry delay, or is errored after
    /// [`MAX_FAILED_RUNS`] such runs in a row.
    pub(crate) fn workflow_failed(
        &self,
        scope: &WorkflowScope,
        id: &str,
        error: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let db = self.lock();
        let failed = json!({
            "name": "Error",
            "message": format!("the workflow's run() failed {MAX_FAILED_RUNS} times in a row; the last: {error}"),
        })
        .to_string();
        db.execute(
            &format!(
                "UPDATE workflow_instance SET failures = failures + 1, last_failure = ?4,
                    wake_at = ?5 + retry_delay,
                    status = CASE WHEN failures + 1 >= ?6 THEN 'errored' ELSE status END,
                    error = CASE WHEN failures + 1 >= ?6 THEN ?7 ELSE error END
                 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND status NOT IN {TERMINAL}"
            ),
            params![
                scope.namespace,
                scope.workflow,
                id,
                error,
                now,
                MAX_FAILED_RUNS,
                failed
            ],
        )?;
        Ok(())
    }
}

fn send_event(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    (event_type, payload): (&str, &str),
    now: i64,
) -> Result<Value, StoreError> {
    status_of(tx, scope, id)?;
    tx.execute(
        "INSERT INTO workflow_event (namespace, workflow, id, type, payload, sent_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![scope.namespace, scope.workflow, id, event_type, payload, now],
    )?;
    // An instance waiting for this type runs at once.
    tx.execute(
        "UPDATE workflow_instance SET wake_at = ?4 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND status = 'waiting' AND waiting_for = ?5",
        params![scope.namespace, scope.workflow, id, now, event_type],
    )?;
    Ok(Value::Null)
}

/// A step returned `result`: stored, unless the instance finished.
fn step_done(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    key: &str,
    result: &str,
    now: i64,
) -> Result<Value, StoreError> {
    let (status, _) = status_of(tx, scope, id)?;
    if is_terminal(&status) {
        return Err(WorkflowError::Stopped { status }.into());
    }
    tx.execute(
        "INSERT INTO workflow_step (namespace, workflow, id, step, result, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (namespace, workflow, id, step) DO UPDATE SET result = excluded.result",
        params![scope.namespace, scope.workflow, id, key, result, now],
    )?;
    tx.execute(
        "UPDATE workflow_instance SET failures = 0 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
        params![scope.namespace, scope.workflow, id],
    )?;
    Ok(Value::Null)
}

fn create(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    (worker, class, payload): (&str, &str, &str),
    now: i64,
) -> Result<Value, StoreError> {
    if !workflow::is_instance_id(id) {
        return Err(WorkflowError::InvalidId { id: id.to_owned() }.into());
    }
    let inserted = tx.execute(
        "INSERT OR IGNORE INTO workflow_instance (namespace, workflow, id, worker, class, payload, created_at, status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued')",
        params![scope.namespace, scope.workflow, id, worker, class, payload, now],
    )?;
    if inserted == 0 {
        return Err(WorkflowError::Exists { id: id.to_owned() }.into());
    }
    Ok(json!({ "id": id }))
}

/// `pause()`, `resume()`, `terminate()`, `restart()`.
fn control(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    op: &WorkflowOp,
) -> Result<(), StoreError> {
    let (status, _) = status_of(tx, scope, id)?;
    let keys = params![scope.namespace, scope.workflow, id];
    let set = match op {
        WorkflowOp::Pause if !is_terminal(&status) => "paused = 1",
        WorkflowOp::Resume => "paused = 0",
        WorkflowOp::Terminate if !is_terminal(&status) => "status = 'terminated', paused = 0",
        WorkflowOp::Restart => {
            for table in ["workflow_step", "workflow_event"] {
                tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE namespace = ?1 AND workflow = ?2 AND id = ?3"
                    ),
                    keys,
                )?;
            }
            "status = 'queued', paused = 0, wake_at = 0, waiting_for = NULL, failures = 0, last_failure = NULL, output = NULL, error = NULL"
        }
        _ => return Ok(()),
    };
    tx.execute(
        &format!(
            "UPDATE workflow_instance SET {set} WHERE namespace = ?1 AND workflow = ?2 AND id = ?3"
        ),
        keys,
    )?;
    Ok(())
}

/// Before a step: its stored result (`{result}`, JSON text), or what it
/// needs to run (`{attempts, startedAt, lastFailure}`).
fn step(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    key: &str,
    kind: StepKind,
    now: i64,
) -> Result<Value, StoreError> {
    running(tx, scope, id)?;
    let keys = params![scope.namespace, scope.workflow, id, key];
    let stored: Option<(Option<String>, i64, i64)> = tx
        .query_row(
            "SELECT result, attempts, started_at FROM workflow_step WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND step = ?4",
            keys,
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    if let Some((Some(result), ..)) = &stored {
        return Ok(json!({ "result": result }));
    }
    if stored.is_none() {
        let steps: i64 = tx.query_row(
            "SELECT count(*) FROM workflow_step WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
            params![scope.namespace, scope.workflow, id],
            |row| row.get(0),
        )?;
        if steps >= MAX_STEPS {
            return Err(WorkflowError::TooManySteps.into());
        }
        tx.execute(
            "INSERT INTO workflow_step (namespace, workflow, id, step, started_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![scope.namespace, scope.workflow, id, key, now],
        )?;
    }
    let started = stored.map_or(now, |(_, _, started)| started);
    match kind {
        StepKind::Do { delay_ms, backoff } => {
            count_attempt(tx, scope, id, key, (delay_ms, backoff), (started, now))
        }
        StepKind::Sleep => Ok(json!({ "startedAt": started, "now": now })),
        StepKind::Event { event_type } => {
            take_event(tx, scope, id, key, &event_type, (started, now))
        }
    }
}

/// A new attempt of `step.do` step `key`, counted before it runs; the
/// instance's retry delay set to the one that follows it.
fn count_attempt(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    key: &str,
    (delay_ms, backoff): (i64, workflow::Backoff),
    (started, now): (i64, i64),
) -> Result<Value, StoreError> {
    let keys = params![scope.namespace, scope.workflow, id, key];
    tx.execute(
            "UPDATE workflow_step SET attempts = attempts + 1 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND step = ?4",
            keys,
        )?;
    let (attempts, failure): (i64, Option<String>) = tx.query_row(
            "SELECT s.attempts, i.last_failure FROM workflow_step s JOIN workflow_instance i USING (namespace, workflow, id)
             WHERE s.namespace = ?1 AND s.workflow = ?2 AND s.id = ?3 AND s.step = ?4",
            keys,
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
    let delay = workflow::retry_delay(delay_ms, backoff, attempts);
    tx.execute(
            "UPDATE workflow_instance SET retry_delay = ?4 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3",
            params![scope.namespace, scope.workflow, id, delay],
        )?;
    Ok(
        json!({ "attempts": attempts, "startedAt": started, "now": now, "retryDelayMs": delay, "lastFailure": failure }),
    )
}

/// The oldest event of `event_type` sent to the instance, taken as step
/// `key`'s result; or when the wait began.
fn take_event(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    key: &str,
    event_type: &str,
    (started, now): (i64, i64),
) -> Result<Value, StoreError> {
    let event: Option<(i64, String, i64)> = tx
        .query_row(
            "SELECT seq, payload, sent_at FROM workflow_event WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND type = ?4 ORDER BY seq LIMIT 1",
            params![scope.namespace, scope.workflow, id, event_type],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((seq, payload, sent_at)) = event else {
        return Ok(json!({ "startedAt": started, "now": now }));
    };
    let payload = serde_json::from_str::<Value>(&payload).unwrap_or(Value::Null);
    let result =
        json!({ "payload": payload, "timestamp": sent_at, "type": event_type }).to_string();
    tx.execute("DELETE FROM workflow_event WHERE seq = ?1", params![seq])?;
    tx.execute(
        "UPDATE workflow_step SET result = ?5 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND step = ?4",
        params![scope.namespace, scope.workflow, id, key, result],
    )?;
    Ok(json!({ "result": result }))
}

/// How a run ended, unless the instance finished or was terminated since.
fn end_run(
    tx: &Transaction<'_>,
    scope: &WorkflowScope,
    id: &str,
    end: RunEnd,
    now: i64,
) -> Result<(), StoreError> {
    // An event sent while the run was under way wakes it at once.
    let sent = match end.waiting_for() {
        Some(event_type) => tx
            .query_row(
                "SELECT 1 FROM workflow_event WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND type = ?4",
                params![scope.namespace, scope.workflow, id, event_type],
                |_| Ok(()),
            )
            .optional()?
            .is_some(),
        None => false,
    };
    let (set, a, b) = workflow::end_write(end, sent, now);
    tx.execute(
        &format!(
            "UPDATE workflow_instance SET {set}?4, wake_at = coalesce(?5, wake_at), failures = 0 WHERE namespace = ?1 AND workflow = ?2 AND id = ?3 AND status NOT IN {TERMINAL}"
        ),
        params![scope.namespace, scope.workflow, id, a, b],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::Backoff;

    fn op(
        db: &Sqlite,
        scope: &WorkflowScope,
        op: WorkflowOp,
        now: i64,
    ) -> Result<Value, StoreError> {
        db.workflow_op(scope, Some("i"), op, now)
    }

    fn step(key: &str, kind: StepKind) -> WorkflowOp {
        WorkflowOp::Step {
            key: key.into(),
            kind,
        }
    }

    #[test]
    fn a_stored_step_is_replayed_and_events_wake_a_waiting_instance() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(&dir.path().join("db.sqlite3")).unwrap();
        let scope = WorkflowScope::new("team-a", "orders");
        let create = WorkflowOp::Create {
            worker: "team-a/w".into(),
            class: "Order".into(),
            payload: "{}".into(),
        };
        op(&db, &scope, create.clone(), 10).unwrap();
        assert!(matches!(
            op(&db, &scope, create, 10),
            Err(StoreError::Workflow(WorkflowError::Exists { .. }))
        ));
        // Another namespace's workflow of the same name has no instance i.
        let other = WorkflowScope::new("team-b", "orders");
        assert!(op(&db, &other, WorkflowOp::Status, 10).is_err());
        assert_eq!(db.workflow_due(10, 10).unwrap().len(), 1);

        let attempt = || {
            step(
                "a#0",
                StepKind::Do {
                    delay_ms: 100,
                    backoff: Backoff::Exponential,
                },
            )
        };
        let first = op(&db, &scope, attempt(), 11).unwrap();
        assert_eq!(
            (first["attempts"].clone(), first["retryDelayMs"].clone()),
            (json!(1), json!(100))
        );
        let second = op(&db, &scope, attempt(), 12).unwrap();
        assert_eq!(
            (second["attempts"].clone(), second["retryDelayMs"].clone()),
            (json!(2), json!(200))
        );
        let done = WorkflowOp::StepDone {
            key: "a#0".into(),
            result: r#"{"v":1}"#.into(),
        };
        op(&db, &scope, done, 13).unwrap();
        assert_eq!(
            op(&db, &scope, attempt(), 14).unwrap(),
            json!({"result": r#"{"v":1}"#})
        );

        // Waiting for an event: not due until it is sent.
        let wait = || {
            step(
                "e#0",
                StepKind::Event {
                    event_type: "go".into(),
                },
            )
        };
        assert_eq!(op(&db, &scope, wait(), 20).unwrap()["startedAt"], 20);
        let end = RunEnd::Waiting {
            wake_at: 1_000,
            waiting_for: Some("go".into()),
        };
        op(&db, &scope, WorkflowOp::End { end }, 21).unwrap();
        assert_eq!(
            op(&db, &scope, WorkflowOp::Status, 22).unwrap(),
            json!({"status": "waiting"})
        );
        assert!(db.workflow_due(30, 10).unwrap().is_empty());
        // The runner sleeps until then (the event's timeout), not less.
        assert_eq!(db.workflow_next_wake(30).unwrap(), Some(1_000));
        assert_eq!(db.workflow_next_wake(1_000).unwrap(), None);
        let send = WorkflowOp::SendEvent {
            event_type: "go".into(),
            payload: "5".into(),
        };
        op(&db, &scope, send, 40).unwrap();
        assert_eq!(db.workflow_due(41, 10).unwrap().len(), 1);
        let taken = op(&db, &scope, wait(), 42).unwrap();
        let event: Value = serde_json::from_str(taken["result"].as_str().unwrap()).unwrap();
        assert_eq!(event, json!({"payload": 5, "timestamp": 40, "type": "go"}));

        // Terminated: steps stop, a late end changes nothing.
        op(&db, &scope, WorkflowOp::Terminate, 50).unwrap();
        assert!(matches!(
            op(&db, &scope, attempt(), 51),
            Err(StoreError::Workflow(WorkflowError::Stopped { .. }))
        ));
        let late = RunEnd::Complete { output: "1".into() };
        op(&db, &scope, WorkflowOp::End { end: late }, 52).unwrap();
        assert_eq!(
            op(&db, &scope, WorkflowOp::Status, 53).unwrap(),
            json!({"status": "terminated"})
        );
        assert!(db.workflow_due(60, 10).unwrap().is_empty());
    }

    #[test]
    fn failed_runs_wait_their_retry_delay_then_error_the_instance() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(&dir.path().join("db.sqlite3")).unwrap();
        let scope = WorkflowScope::new("team-a", "spin");
        let create = WorkflowOp::Create {
            worker: "team-a/w".into(),
            class: "Spin".into(),
            payload: "{}".into(),
        };
        op(&db, &scope, create, 0).unwrap();
        let attempt = step(
            "s#0",
            StepKind::Do {
                delay_ms: 500,
                backoff: Backoff::Constant,
            },
        );
        op(&db, &scope, attempt, 1).unwrap();
        db.workflow_failed(&scope, "i", "CPU time limit exceeded", 2)
            .unwrap();
        assert!(db.workflow_due(400, 10).unwrap().is_empty());
        assert_eq!(db.workflow_due(502, 10).unwrap().len(), 1);
        for n in 1..MAX_FAILED_RUNS {
            db.workflow_failed(&scope, "i", "again", 600 + n).unwrap();
        }
        let status = op(&db, &scope, WorkflowOp::Status, 700).unwrap();
        assert_eq!(status["status"], "errored");
        assert!(
            status["error"]["message"]
                .as_str()
                .unwrap()
                .contains("20 times in a row; the last: again")
        );
    }
}
