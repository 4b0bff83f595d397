//! Cron ticks: a `Work::Scheduled` runs the worker's
//! `scheduled` handler (module or service worker) under its limits.

use std::sync::Arc;

use isolane_engine::{ExecuteError, PoolMode, ScheduledEvent, Work, WorkerBundle};

use crate::support::*;

fn tick(cron: &str, at_ms: i64) -> Work {
    let event = ScheduledEvent {
        cron: cron.to_owned(),
        scheduled_time_ms: at_ms,
    };
    let request = get("/__scheduled");
    Work::Scheduled { event, request }
}

async fn fire(
    engine: &isolane_engine::Engine,
    worker: &Arc<WorkerBundle>,
    cron: &str,
    at_ms: i64,
) -> Result<u16, ExecuteError> {
    engine
        .run(0, worker.clone(), tick(cron, at_ms))
        .await
        .map(|r| r.status().as_u16())
}

/// The handler sees the tick; what it records is read back by a request.
const RECORDER: &str = r#"
const seen = [];
export default {
  async scheduled(controller, env, ctx) {
    if (controller.cron === 'throw') throw new Error('tick failed on purpose');
    if (controller.cron === 'late-failure') { ctx.waitUntil(Promise.reject(new Error('background failed'))); return; }
    ctx.waitUntil(Promise.resolve().then(() => seen.push(`${controller.cron}@${controller.scheduledTime}:${env.NAME}:${controller instanceof ScheduledController}`)));
  },
  async fetch() { return new Response(seen.join(',')); },
};
"#;

#[tokio::test]
async fn a_tick_runs_the_scheduled_handler() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "cron/recorder",
        RECORDER,
        isolane_engine::Limits::default(),
        &[("NAME", "rec")],
    ));
    assert_eq!(
        fire(&engine, &worker, "*/5 * * * *", 1_700_000_000_000)
            .await
            .unwrap(),
        200
    );
    assert_eq!(
        fire(&engine, &worker, "0 * * * *", 1_700_000_300_000)
            .await
            .unwrap(),
        200
    );
    let (_, seen) = run(&engine, 0, &worker, "/").await;
    assert_eq!(
        seen,
        "*/5 * * * *@1700000000000:rec:true,0 * * * *@1700000300000:rec:true"
    );
    // A failing handler, or failing waitUntil work, fails the tick; the
    // next one runs.
    let error = fire(&engine, &worker, "throw", 1).await.unwrap_err();
    assert!(
        matches!(&error, ExecuteError::Exception { message } if message.contains("tick failed on purpose")),
        "{error:?}"
    );
    let error = fire(&engine, &worker, "late-failure", 2).await.unwrap_err();
    assert!(
        matches!(&error, ExecuteError::Exception { message } if message.contains("background failed")),
        "{error:?}"
    );
    assert_eq!(fire(&engine, &worker, "*/5 * * * *", 3).await.unwrap(), 200);
}

#[tokio::test]
async fn service_workers_get_a_scheduled_event() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle(
        "cron/sw",
        r#"
let last = 'none';
addEventListener('scheduled', (event) => {
  event.waitUntil(Promise.resolve().then(() => { last = `${event.cron}@${event.scheduledTime}:${event instanceof ScheduledEvent}`; }));
});
addEventListener('fetch', (event) => event.respondWith(new Response(last)));
"#,
    );
    assert_eq!(fire(&engine, &worker, "1 2 3 4 5", 42).await.unwrap(), 200);
    assert_eq!(run(&engine, 0, &worker, "/").await.1, "1 2 3 4 5@42:true");
}

#[tokio::test]
async fn a_worker_with_only_one_kind_of_handler() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    // Only `scheduled`: it loads, its ticks run, and an HTTP request is a 500.
    let cron_only = bundle("cron/only", "export default { scheduled() {} };");
    assert_eq!(
        fire(&engine, &cron_only, "* * * * *", 0).await.unwrap(),
        200
    );
    let error = engine
        .execute(0, cron_only.clone(), get("/"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ExecuteError::Exception { message } if message.contains("no fetch handler")),
        "{error:?}"
    );
    // Only `fetch`: a tick fails with a clear message.
    let fetch_only = bundle("cron/fetch-only", HELLO);
    let error = fire(&engine, &fetch_only, "* * * * *", 0)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ExecuteError::Exception { message } if message.contains("no scheduled handler")),
        "{error:?}"
    );
}

/// A tick is held to the worker's CPU limit like a request, and a neighbour
/// on the same thread answers before and after.
#[tokio::test]
async fn a_runaway_tick_hits_the_cpu_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("cron/neighbour", HELLO);
    let spinner = Arc::new(bundle_with(
        "cron/spinner",
        "export default { scheduled() { for (;;) {} } };",
        isolane_engine::Limits {
            cpu_ms: 50,
            ..isolane_engine::Limits::default()
        },
        &[],
    ));
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
    let error = fire(&engine, &spinner, "* * * * *", 0).await.unwrap_err();
    assert!(matches!(error, ExecuteError::CpuLimit { .. }), "{error:?}");
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
}
