//! The Workers with cron schedules, as the Worker watch last saw them.

use isolane_worker::WorkerKey;
use isolane_worker::cron::Schedule;
use tracing::warn;

use crate::routes::RoutableWorker;

/// One Worker's schedules.
#[derive(Debug, Clone)]
pub struct CronWorker {
    /// The Worker.
    pub key: WorkerKey,
    /// The revision a tick runs: the one with the largest share of traffic.
    pub revision: String,
    /// The host its ticks are addressed to (its first route's, for logs).
    pub host: String,
    /// Its parsed schedules (ones that do not parse are left out, with a
    /// warning: the webhook refuses them at `kubectl apply`).
    pub schedules: Vec<Schedule>,
}

/// Every ready Worker that has schedules.
#[derive(Debug, Clone, Default)]
pub struct CronTable {
    workers: Vec<CronWorker>,
}

impl CronTable {
    /// The table for `workers`.
    pub fn build(workers: &[RoutableWorker]) -> Self {
        let workers = workers
            .iter()
            .filter_map(|w| {
                let triggers = w.triggers.as_ref()?;
                let schedules: Vec<Schedule> = triggers
                    .crons
                    .iter()
                    .filter_map(|expr| {
                        Schedule::parse(expr, triggers.time_zone.as_deref())
                            .inspect_err(|error| {
                                warn!(worker.id = %w.key(), %error, "cron schedule ignored");
                            })
                            .ok()
                    })
                    .collect();
                let host = w
                    .claim
                    .routes
                    .first()
                    .map(|route| route.host.replace('*', "cron"))
                    .unwrap_or_else(|| "scheduled.invalid".to_owned());
                (!schedules.is_empty()).then(|| CronWorker {
                    key: w.key().clone(),
                    revision: w.split.main_revision().to_owned(),
                    host,
                    schedules,
                })
            })
            .collect();
        Self { workers }
    }

    /// The Workers with schedules.
    pub fn workers(&self) -> &[CronWorker] {
        &self.workers
    }
}
