//! Cron ticks in `isolane dev`: on demand, `GET /__scheduled?cron=<schedule>`
//! runs the routed worker's `scheduled` handler once (as `wrangler dev`'s
//! test URL does; the schedule defaults to `* * * * *`), and `--cron
//! <schedule>` runs it on that schedule while `isolane dev` runs.

use std::sync::Arc;
use std::time::SystemTime;

use isolane_crds::cron::Schedule;
use isolane_engine::{Body, Engine, ScheduledEvent, WorkerBundle};

/// The path that fires a tick on demand.
pub const PATH: &str = "/__scheduled";

/// Runs one tick of `cron` due `at` on the worker's thread.
pub async fn fire(
    engine: &Engine,
    bundle: &Arc<WorkerBundle>,
    cron: &str,
    at: SystemTime,
) -> Result<(), isolane_engine::ExecuteError> {
    let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
    let thread = isolane_placement::thread_for(&bundle.id, threads) as usize;
    let mut request = http::Request::new(Body::empty());
    *request.uri_mut() = http::Uri::from_static("http://localhost/__scheduled");
    request.extensions_mut().insert(ScheduledEvent {
        cron: cron.to_owned(),
        scheduled_time_ms: isolane_crds::cron::unix_millis(at),
    });
    engine
        .execute(thread, bundle.clone(), request)
        .await
        .map(drop)
}

/// `GET /__scheduled?cron=…`: the tick's outcome as the answer.
pub async fn on_demand(
    engine: &Engine,
    bundle: &Arc<WorkerBundle>,
    query: Option<&str>,
) -> http::Response<Body> {
    let cron = query
        .into_iter()
        .flat_map(|q| url::form_urlencoded::parse(q.as_bytes()))
        .find(|(name, _)| name == "cron")
        .map_or_else(|| "* * * * *".to_owned(), |(_, value)| value.into_owned());
    match fire(engine, bundle, &cron, SystemTime::now()).await {
        Ok(()) => {
            tracing::info!(worker.id = %bundle.id, %cron, "ran scheduled event");
            http::Response::new(Body::from("Ran scheduled event\n"))
        }
        Err(error) => {
            tracing::info!(worker.id = %bundle.id, %cron, reason = error.reason(), %error, "scheduled event failed");
            error.to_response()
        }
    }
}

/// Runs `bundle`'s tick of `schedule` at each of its times, until the task
/// is dropped.
pub async fn run_schedule(engine: Engine, bundle: Arc<WorkerBundle>, schedule: Schedule) {
    let mut after = SystemTime::now();
    while let Some(next) = schedule.next_after(after) {
        let wait = next.duration_since(SystemTime::now()).unwrap_or_default();
        tokio::time::sleep(wait).await;
        after = next;
        match fire(&engine, &bundle, schedule.expr(), next).await {
            Ok(()) => {
                tracing::info!(worker.id = %bundle.id, cron = schedule.expr(), "ran scheduled event")
            }
            Err(error) => {
                tracing::warn!(worker.id = %bundle.id, cron = schedule.expr(), reason = error.reason(), %error, "scheduled event failed")
            }
        }
    }
}
