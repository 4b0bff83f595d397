//! Delivers Durable Object alarms: a loop that claims the store's due
//! alarms (`isolane_storage::Store::claim_due_alarms`) and runs each as an
//! [`crate::AlarmEvent`] on the engine, on the thread its Worker runs on.
//!
//! workerd's semantics: at least once (a delivery whose process dies is
//! claimed again once its claim runs out), a failed delivery retried with
//! exponential backoff (`backoff`, doubling) up to
//! [`isolane_storage::MAX_ALARM_RETRIES`] times with `alarmInfo.retryCount`,
//! an alarm set in the past delivered at the next look. Alarms live in the
//! store, so they outlive the process; the claim makes one process at a
//! time deliver a given alarm however many run this loop on one store.
//! Kubernetes namespaces share the deliveries under way: each has at most
//! its share (`per_namespace`) claimed at a look, and a namespace with
//! its share under way is not claimed from until one ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use isolane_storage::{AlarmClaim, DueAlarm, Store};
use tokio::task::JoinSet;

use crate::{AlarmEvent, Engine, Work, WorkerBundle};

/// Which Workers this process delivers alarms for.
pub trait AlarmHost: Send + Sync + 'static {
    /// Worker `worker_id`'s (`<namespace>/<name>`) bundle and the engine
    /// thread it runs on, when this process runs it.
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)>;

    /// Whether this process delivers the alarms of the object with
    /// placement key `key` ([`crate::object_key`]): on a node, when it owns
    /// the object; by default, always.
    fn owns(&self, key: &str) -> bool {
        let _ = key;
        true
    }
}

/// The alarm loop of one process.
pub struct AlarmRunner {
    engine: Engine,
    store: Store,
    host: Arc<dyn AlarmHost>,
    /// The shortest wait between two looks at the store.
    poll: Duration,
    /// The longest wait between two looks when no alarm is due sooner.
    idle: Duration,
    /// How long a claim holds: longer than a handler may run, and how late
    /// an alarm whose process died is delivered at worst.
    lease: Duration,
    /// The first retry's delay; each next one doubles it (workerd: 2 s).
    backoff: Duration,
    /// Deliveries under way at once, at most.
    in_flight: u32,
    /// Deliveries of one Kubernetes namespace under way at once, at most:
    /// a namespace with a backlog of overdue alarms leaves the other
    /// places to other namespaces' alarms.
    per_namespace: u32,
}

impl AlarmRunner {
    pub fn new(engine: Engine, store: Store, host: Arc<dyn AlarmHost>) -> Self {
        Self {
            engine,
            store,
            host,
            poll: Duration::from_millis(20),
            idle: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            backoff: Duration::from_secs(2),
            in_flight: 64,
            per_namespace: 8,
        }
    }

    /// Sets how often the store is looked at, how long a claim holds and
    /// the first retry's delay.
    #[must_use]
    pub fn with_timing(mut self, poll: Duration, lease: Duration, backoff: Duration) -> Self {
        self.poll = poll;
        self.lease = lease;
        self.backoff = backoff;
        self
    }

    /// Delivers due alarms until the task running it is dropped.
    pub async fn run(self) {
        let this = Arc::new(self);
        let mut deliveries = JoinSet::new();
        // Deliveries under way, by namespace, and each task's namespace.
        let mut running: HashMap<String, u32> = HashMap::new();
        let mut tasks: HashMap<tokio::task::Id, String> = HashMap::new();
        loop {
            while let Some(done) = deliveries.try_join_next_with_id() {
                let id = done.map_or_else(|error| error.id(), |(id, ())| id);
                if let Some(namespace) = tasks.remove(&id) {
                    settle(&mut running, &namespace);
                }
            }
            let room = this.in_flight.saturating_sub(deliveries.len() as u32);
            if room > 0 {
                let now = now_ms();
                let until = now.saturating_add(millis(this.lease));
                match this
                    .store
                    .claim_due_alarms(now, until, this.claim(room, &running))
                    .await
                {
                    Ok(due) => {
                        for alarm in due {
                            let namespace = alarm.scope.namespace.clone();
                            *running.entry(namespace.clone()).or_insert(0) += 1;
                            let task = deliveries.spawn(Arc::clone(&this).deliver(alarm));
                            tasks.insert(task.id(), namespace);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "alarms: the store did not answer"),
                }
            }
            let wait = this.until_next(deliveries.len() as u32).await;
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = this.store.alarm_changed() => {}
            }
        }
    }

    /// What the next look may claim: `room` alarms, `per_namespace` of a
    /// namespace, none of a namespace with that many under way already (so
    /// one has fewer than twice its share under way).
    fn claim(&self, room: u32, running: &HashMap<String, u32>) -> AlarmClaim {
        AlarmClaim {
            limit: room,
            per_namespace: self.per_namespace,
            skip: running
                .iter()
                .filter(|(_, n)| **n >= self.per_namespace)
                .map(|(namespace, _)| namespace.clone())
                .collect(),
        }
    }

    /// How long to sleep before looking again: until the next alarm can be
    /// claimed, at least `poll` and at most `idle` (an alarm another process
    /// set is seen within `idle`; one this process sets wakes the loop). With
    /// deliveries filling every place, `poll` (one of them ends soon).
    async fn until_next(&self, running: u32) -> Duration {
        if running >= self.in_flight {
            return self.poll;
        }
        let next = match self.store.next_alarm_at().await {
            Ok(next) => next,
            Err(error) => {
                tracing::warn!(%error, "alarms: the store did not answer");
                return self.poll;
            }
        };
        let Some(next) = next else {
            return self.idle;
        };
        let ahead = u64::try_from(next.saturating_sub(now_ms())).unwrap_or(0);
        Duration::from_millis(ahead).clamp(self.poll, self.idle)
    }

    /// Runs `alarm` and settles it in the store.
    async fn deliver(self: Arc<Self>, alarm: DueAlarm) {
        let scope = &alarm.scope;
        let Some((worker, class)) = scope.class.split_once('/') else {
            tracing::warn!(class = %scope.class, "alarms: a stored class names no Worker");
            return;
        };
        let worker_id = format!("{}/{worker}", scope.namespace);
        // Not delivered here: given back at once for the process that
        // delivers it (holding it would delay the alarm by the claim).
        let owned = self.host.owns(&crate::object_call::object_key(
            &worker_id, class, &scope.id,
        ));
        let Some((bundle, thread)) = self.host.worker(&worker_id).filter(|_| owned) else {
            tracing::debug!(worker.id = %worker_id, "alarms: a due alarm's Worker is not run here");
            if let Err(error) = self.store.release_alarm(alarm).await {
                tracing::warn!(%error, "alarms: could not give back an alarm");
            }
            return;
        };
        let work = Work::Alarm(AlarmEvent {
            class: class.to_owned(),
            id: scope.id.clone(),
            retry_count: alarm.retries,
        });
        let outcome = match self.engine.run(thread, bundle, work).await {
            Ok(response) if response.status() == http::StatusCode::OK => Ok(()),
            Ok(response) => Err(format!("the handler answered {}", response.status())),
            Err(error) => Err(error.to_string()),
        };
        let settled = match outcome {
            Ok(()) => self.store.alarm_done(alarm.clone()).await.map(|()| false),
            Err(error) => {
                let delay = self.backoff.saturating_mul(1 << alarm.retries.min(16));
                let retry_at = now_ms().saturating_add(millis(delay));
                tracing::info!(worker.id = %worker_id, object = %scope.id, retries = alarm.retries, %error, "alarms: alarm() failed");
                self.store.alarm_failed(alarm.clone(), retry_at).await
            }
        };
        match settled {
            Ok(true) => {
                tracing::warn!(worker.id = %worker_id, object = %scope.id, "alarms: alarm() failed after every retry; the alarm is dropped");
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "alarms: could not settle an alarm"),
        }
    }
}

/// One delivery of `namespace` ended.
fn settle(running: &mut HashMap<String, u32>, namespace: &str) {
    if let Some(n) = running.get_mut(namespace) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            running.remove(namespace);
        }
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
