//! The leader's loop: which tick of which schedule is due next, and firing it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use isolane_leader::{LeaderConfig, LeaderElector, Role};
use isolane_proto::runtime::v1::ScheduledTick;
use isolane_worker::WorkerKey;
use kube::Client;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{CronTable, CronWorker, Reporter};
use crate::Proxy;
use crate::routes::RoutableWorker;

/// A tick found later than this is skipped (counted `missed`), not run.
pub const MAX_LATE: Duration = Duration::from_secs(60);

/// The longest the loop sleeps before looking at the Workers again.
const RECHECK: Duration = Duration::from_secs(1);

/// How the router takes part in running schedules.
#[derive(Clone, Debug)]
pub struct CronConfig {
    /// The cron Lease and this router's identity in it.
    pub leader: LeaderConfig,
    /// Where the Lease lives (Isolane's namespace).
    pub namespace: String,
}

/// Takes part in the cron election until `stop`, and runs the schedules
/// while leader.
pub async fn run(client: Client, proxy: Proxy, config: CronConfig, stop: CancellationToken) {
    let (role_tx, mut role) = watch::channel(Role::Unknown);
    let elector = LeaderElector::new(client.clone(), &config.namespace, config.leader);
    tokio::spawn(elector.run(role_tx, stop.clone()));
    let reporter = Reporter::new(client, proxy.metrics().clone());
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = role.wait_for(|r| *r == Role::Leader) => if changed.is_err() { return },
        }
        let since = SystemTime::now();
        info!("cron: this router holds the cron Lease; it runs every Worker's schedules");
        proxy.metrics().cron_leader.set(1);
        lead(&proxy, &reporter, &mut role, since, &stop).await;
        proxy.metrics().cron_leader.set(0);
        info!("cron: stepped down; another router runs the schedules");
    }
}

/// Runs the schedules of the proxy's Workers until `stop`, with no Lease:
/// for a proxy that is the only one (`isolane dev`). Runs are counted and
/// logged by `reporter`.
pub async fn run_alone(proxy: Proxy, reporter: Reporter, stop: CancellationToken) {
    // Always the leader: the sender lives as long as the loop.
    let (_leader, mut role) = watch::channel(Role::Leader);
    lead(&proxy, &reporter, &mut role, SystemTime::now(), &stop).await;
}

/// Runs ticks due after `since` while this router is the leader.
async fn lead(
    proxy: &Proxy,
    reporter: &Reporter,
    role: &mut watch::Receiver<Role>,
    since: SystemTime,
    stop: &CancellationToken,
) {
    // Per (worker, schedule): the last tick run, or when leadership began.
    let mut cursors: HashMap<(WorkerKey, String), SystemTime> = HashMap::new();
    // The schedules, parsed again only when the published Workers change.
    let mut parsed: Option<(Arc<Vec<RoutableWorker>>, CronTable)> = None;
    loop {
        if stop.is_cancelled() || *role.borrow() != Role::Leader {
            return;
        }
        let published = proxy.published();
        let table = match &parsed {
            Some((workers, table)) if Arc::ptr_eq(workers, &published) => table,
            _ => {
                let table = CronTable::build(&published);
                &parsed.insert((published, table)).1
            }
        };
        let now = SystemTime::now();
        let (due, earliest) = due_ticks(table, &mut cursors, since, now, proxy);
        let fired = !due.is_empty();
        for (worker, cron, at) in due {
            let (proxy, reporter) = (proxy.clone(), reporter.clone());
            tokio::spawn(async move { fire(&proxy, &reporter, &worker, cron, at).await });
        }
        if fired {
            // Look again at once: the same schedules' next ticks, and any
            // more that came due meanwhile.
            continue;
        }
        let wait = earliest
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .min(RECHECK);
        tokio::select! {
            () = stop.cancelled() => return,
            _ = role.changed() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The ticks of `table` due by `now` (each schedule's cursor moved to its
/// tick; one found later than [`MAX_LATE`] is skipped and counted), and
/// when the next one comes due (at most [`RECHECK`] away). A schedule
/// seen for the first time counts from `since`; cursors of schedules that
/// are gone are dropped, so they start afresh if they return.
fn due_ticks(
    table: &CronTable,
    cursors: &mut HashMap<(WorkerKey, String), SystemTime>,
    since: SystemTime,
    now: SystemTime,
    proxy: &Proxy,
) -> (Vec<(CronWorker, String, SystemTime)>, SystemTime) {
    let mut earliest = now + RECHECK;
    let mut due = Vec::new();
    let mut seen = HashSet::new();
    for worker in table.workers() {
        for schedule in &worker.schedules {
            let key = (worker.key.clone(), schedule.expr().to_owned());
            let cursor = *cursors.entry(key.clone()).or_insert(since);
            seen.insert(key.clone());
            let Some(next) = schedule.next_after(cursor) else {
                continue;
            };
            if next > now {
                earliest = earliest.min(next);
                continue;
            }
            cursors.insert(key, next);
            if now.duration_since(next).unwrap_or_default() > MAX_LATE {
                warn!(worker.id = %worker.key, cron = schedule.expr(), "cron tick skipped: found too late");
                proxy.metrics().cron_run("missed");
                continue;
            }
            due.push((worker.clone(), schedule.expr().to_owned(), next));
        }
    }
    cursors.retain(|key, _| seen.contains(key));
    (due, earliest)
}

/// Runs one tick and records it.
async fn fire(
    proxy: &Proxy,
    reporter: &Reporter,
    worker: &CronWorker,
    cron: String,
    at: SystemTime,
) {
    let scheduled_time_ms = isolane_worker::cron::unix_millis(at);
    debug!(worker.id = %worker.key, %cron, scheduled_time_ms, "cron tick");
    let tick = ScheduledTick {
        cron: cron.clone(),
        scheduled_time_ms,
    };
    let result = super::run_tick(proxy, worker, tick).await;
    reporter.record(worker, &cron, at, result).await;
}
