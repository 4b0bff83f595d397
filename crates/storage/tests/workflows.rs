//! Workflows' instances on both backends (SQLite in a temporary folder, and
//! a real PostgreSQL started by `isolane_testenv::Postgres`), the same
//! scenario on each: creation (ids unique per workflow, namespaces apart),
//! a step's result stored once and replayed, attempts counted with their
//! retry delay, events waking a waiting instance, terminate, failed runs
//! erroring an instance, restart. On PostgreSQL: the owner epoch fencing a
//! cluster's runner, two runners never taking the same instance, and the
//! counts by status the metrics read.
#![allow(clippy::unwrap_used)]

use isolane_storage::workflow::{Backoff, MAX_FAILED_RUNS, RunEnd, StepKind};
use isolane_storage::{
    PostgresSettings, Store, StoreError, WorkflowError, WorkflowOp, WorkflowScope,
};
use isolane_testenv::Postgres;
use serde_json::{Value, json};

fn now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn create() -> WorkflowOp {
    WorkflowOp::Create {
        worker: "team-a/w".into(),
        class: "Order".into(),
        payload: r#"{"n":1}"#.into(),
    }
}

fn attempt(key: &str, delay_ms: i64) -> WorkflowOp {
    WorkflowOp::Step {
        key: key.into(),
        kind: StepKind::Do {
            delay_ms,
            backoff: Backoff::Exponential,
        },
    }
}

fn wait(key: &str) -> WorkflowOp {
    WorkflowOp::Step {
        key: key.into(),
        kind: StepKind::Event {
            event_type: "go".into(),
        },
    }
}

async fn op(store: &Store, scope: &WorkflowScope, id: &str, op: WorkflowOp) -> Value {
    store
        .workflow(scope.clone(), Some(id.into()), op)
        .await
        .unwrap()
}

async fn refused(store: &Store, scope: &WorkflowScope, id: &str, op: WorkflowOp) -> WorkflowError {
    match store.workflow(scope.clone(), Some(id.into()), op).await {
        Err(StoreError::Workflow(error)) => error,
        other => panic!("not refused: {other:?}"),
    }
}

/// Steps replayed, attempts counted, events waking a waiting instance.
async fn steps_and_events(store: &Store) {
    let scope = WorkflowScope::new("team-a", "orders");
    op(store, &scope, "i", create()).await;
    assert!(matches!(
        refused(store, &scope, "i", create()).await,
        WorkflowError::Exists { .. }
    ));
    assert!(matches!(
        refused(store, &scope, "-bad", create()).await,
        WorkflowError::InvalidId { .. }
    ));
    // A made id.
    let made = store.workflow(scope.clone(), None, create()).await.unwrap();
    assert_eq!(made["id"].as_str().unwrap().len(), 32);
    // Another namespace's workflow of the same name has no instance i.
    let other = WorkflowScope::new("team-b", "orders");
    assert!(matches!(
        refused(store, &other, "i", WorkflowOp::Status).await,
        WorkflowError::NotFound { .. }
    ));
    let due = store.workflow_due(now(), 10).await.unwrap();
    assert_eq!(due.len(), 2);
    let mine = due.iter().find(|d| d.id == "i").unwrap();
    assert_eq!(
        (
            mine.worker_id.as_str(),
            mine.class.as_str(),
            mine.payload.as_str()
        ),
        ("team-a/w", "Order", r#"{"n":1}"#)
    );
    assert_eq!(
        op(store, &scope, "i", WorkflowOp::Status).await,
        json!({"status": "running"})
    );

    let first = op(store, &scope, "i", attempt("a#0", 100)).await;
    assert_eq!(
        (first["attempts"].clone(), first["retryDelayMs"].clone()),
        (json!(1), json!(100))
    );
    let second = op(store, &scope, "i", attempt("a#0", 100)).await;
    assert_eq!(
        (second["attempts"].clone(), second["retryDelayMs"].clone()),
        (json!(2), json!(200))
    );
    let done = WorkflowOp::StepDone {
        key: "a#0".into(),
        result: r#"{"v":1}"#.into(),
    };
    op(store, &scope, "i", done).await;
    assert_eq!(
        op(store, &scope, "i", attempt("a#0", 100)).await,
        json!({"result": r#"{"v":1}"#})
    );

    // Waiting for an event: not due until it is sent (or its timeout).
    let started = op(store, &scope, "i", wait("e#0")).await;
    assert!(started["startedAt"].as_i64().unwrap() > 0);
    let timeout = now() + 3_600_000;
    let end = RunEnd::Waiting {
        wake_at: timeout,
        waiting_for: Some("go".into()),
    };
    op(store, &scope, "i", WorkflowOp::End { end }).await;
    assert_eq!(
        op(store, &scope, "i", WorkflowOp::Status).await,
        json!({"status": "waiting"})
    );
    // The made instance is still running; only i waits.
    let t = now();
    assert!(
        store
            .workflow_due(t, 10)
            .await
            .unwrap()
            .iter()
            .all(|d| d.id != "i")
    );
    assert_eq!(store.workflow_next_wake(t).await.unwrap(), Some(timeout));
    let send = WorkflowOp::SendEvent {
        event_type: "go".into(),
        payload: "5".into(),
    };
    op(store, &scope, "i", send).await;
    let due = store.workflow_due(now() + 1, 10).await.unwrap();
    assert!(due.iter().any(|d| d.id == "i"));
    let taken = op(store, &scope, "i", wait("e#0")).await;
    let event: Value = serde_json::from_str(taken["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        (event["payload"].clone(), event["type"].clone()),
        (json!(5), json!("go"))
    );
    // Taken once: the next wait for the same type finds nothing.
    assert!(
        op(store, &scope, "i", wait("e#1"))
            .await
            .get("result")
            .is_none()
    );

    // Paused: its steps stop; resumed, they go on.
    op(store, &scope, "i", WorkflowOp::Pause).await;
    assert_eq!(
        op(store, &scope, "i", WorkflowOp::Status).await,
        json!({"status": "paused"})
    );
    assert!(matches!(
        refused(store, &scope, "i", attempt("b#0", 1)).await,
        WorkflowError::Stopped { .. }
    ));
    op(store, &scope, "i", WorkflowOp::Resume).await;
    // Terminated: steps stop, a late end changes nothing.
    op(store, &scope, "i", WorkflowOp::Terminate).await;
    assert!(matches!(
        refused(store, &scope, "i", attempt("a#0", 1)).await,
        WorkflowError::Stopped { .. }
    ));
    let late = RunEnd::Complete { output: "1".into() };
    op(store, &scope, "i", WorkflowOp::End { end: late }).await;
    assert_eq!(
        op(store, &scope, "i", WorkflowOp::Status).await,
        json!({"status": "terminated"})
    );
    // Restarted: its step log is gone, it runs again from the start.
    op(store, &scope, "i", WorkflowOp::Restart).await;
    assert_eq!(
        op(store, &scope, "i", attempt("a#0", 100)).await["attempts"],
        json!(1)
    );
    let output = RunEnd::Complete {
        output: r#"{"ok":true}"#.into(),
    };
    op(store, &scope, "i", WorkflowOp::End { end: output }).await;
    assert_eq!(
        op(store, &scope, "i", WorkflowOp::Status).await,
        json!({"status": "complete", "output": {"ok": true}})
    );
}

/// Failed runs wait their step's retry delay, then error the instance.
async fn failed_runs(store: &Store) {
    let scope = WorkflowScope::new("team-a", "spin");
    op(store, &scope, "s", create()).await;
    op(store, &scope, "s", attempt("s#0", 60_000)).await;
    store
        .workflow_failed(scope.clone(), "s".into(), "CPU time limit exceeded".into())
        .await
        .unwrap();
    let is_due = |due: Vec<isolane_storage::WorkflowDue>| due.iter().any(|d| d.id == "s");
    assert!(!is_due(
        store.workflow_due(now() + 30_000, 10).await.unwrap()
    ));
    assert!(is_due(
        store.workflow_due(now() + 61_000, 10).await.unwrap()
    ));
    for _ in 1..MAX_FAILED_RUNS {
        store
            .workflow_failed(scope.clone(), "s".into(), "again".into())
            .await
            .unwrap();
    }
    let status = op(store, &scope, "s", WorkflowOp::Status).await;
    assert_eq!(status["status"], "errored");
    assert!(
        status["error"]["message"]
            .as_str()
            .unwrap()
            .contains("20 times in a row; the last: again"),
        "{status}"
    );
}

#[tokio::test]
async fn workflows_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::sqlite(dir.path());
    steps_and_events(&store).await;
    failed_runs(&store).await;
    // No owners: its only process runs every instance.
    let scope = WorkflowScope::new("team-a", "orders");
    assert!(matches!(
        store.workflow_take(scope, "n".into()).await,
        Err(StoreError::Workflow(WorkflowError::NoOwners))
    ));
}

#[tokio::test]
async fn workflows_on_a_real_postgresql() {
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap();
    steps_and_events(&store).await;
    failed_runs(&store).await;

    // A cluster's runner: the owner's claims are fenced by its epoch.
    let scope = WorkflowScope::new("team-c", "jobs");
    for n in 0..50 {
        op(&store, &scope, &format!("j{n}"), create()).await;
    }
    let first = store
        .workflow_take(scope.clone(), "node-a".into())
        .await
        .unwrap();
    let second = Store::postgres(&settings).unwrap();
    let next = second
        .workflow_take(scope.clone(), "node-b".into())
        .await
        .unwrap();
    assert_eq!(next, first + 1);
    let stale = store.workflow_due_of(scope.clone(), first, now(), 10).await;
    assert!(
        matches!(
            stale,
            Err(StoreError::Workflow(WorkflowError::Fenced { .. }))
        ),
        "{stale:?}"
    );
    // Two claims at once (each locks what it takes, the other skips it)
    // take every instance due, only this workflow's; a running instance
    // stays due (its run's owner dedups it; a new owner resumes it).
    let t = now();
    let (one, two) = tokio::join!(
        second.workflow_due_of(scope.clone(), next, t, 30),
        second.workflow_due_of(scope.clone(), next, t, 30)
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert!(one.len() <= 30 && two.len() <= 30);
    assert!(one.iter().chain(&two).all(|d| d.scope == scope));
    let mut ids: Vec<_> = one.iter().chain(&two).map(|d| d.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert!(ids.len() >= 30, "{}", ids.len());
    assert_eq!(
        second
            .workflow_next_wake_of(scope.clone(), t)
            .await
            .unwrap(),
        None
    );

    // The counts the metrics read, per workflow and status.
    let spin = WorkflowScope::new("team-a", "spin");
    let asked = vec![
        scope.clone(),
        spin.clone(),
        WorkflowScope::new("team-a", "none"),
    ];
    let counts = second.workflow_counts(asked).await.unwrap();
    assert_eq!(counts.len(), 2);
    let jobs = counts.iter().find(|c| c.scope == scope).unwrap();
    assert_eq!(jobs.running as usize, ids.len());
    assert_eq!(jobs.queued as usize, 50 - ids.len());
    let spin = counts.iter().find(|c| c.scope == spin).unwrap();
    assert_eq!(spin.errored, 1);
}
