//! `status.queues` and `status.workflows`: what the queues a Worker consumes
//! hold, and the instances of the workflows whose class it runs by status,
//! read from the durable store by the leader every `--backlog-interval` and
//! written under a server-side-apply field manager of their own
//! ([`FIELD_MANAGER`]), so the reconcile's status writes never touch them
//! (and, status writes triggering no reconcile, they start none).
//!
//! Each interval looks at up to [`PER_TICK`] of the Workers concerned (those
//! that consume a queue or run a workflow, and those whose status still shows
//! one), in turn, and writes the status of those whose figures changed: the
//! store's reads and the API server's writes stay bounded whatever the number
//! of Workers (10,000 consumers: each refreshed every 50 intervals). The
//! nodes' metrics (`isolane_node_queue_backlog_messages`, …) are the live
//! figures to scale on; these are for `kubectl get -o yaml` and GitOps tools.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use isolane_crds::{QueueBacklog, Worker, WorkflowInstances};
use isolane_storage::{QueueDepth, QueueScope, Store, StoreError, WorkflowCounts, WorkflowScope};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector;
use kube::{Api, Client, ResourceExt};
use tracing::{debug, warn};

/// The field manager of `status.queues` and `status.workflows`.
pub const FIELD_MANAGER: &str = "isolane-operator-backlog";

/// Workers looked at in one interval, at most.
pub const PER_TICK: usize = 200;

/// A Worker, by namespace and name.
type Key = (String, String);

/// The queues a Worker consumes and the workflows whose class it runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Concerns {
    pub queues: BTreeSet<String>,
    pub workflows: BTreeSet<String>,
}

/// Each Worker's [`Concerns`]: the queues of its `spec.queueConsumers`, and
/// the workflows of every binding of its namespace that names it as the
/// Worker running the class (or of its own bindings naming none). A Worker
/// concerned by nothing is left out.
pub fn concerns(workers: &[Arc<Worker>]) -> BTreeMap<Key, Concerns> {
    let mut out: BTreeMap<Key, Concerns> = BTreeMap::new();
    for worker in workers {
        let Some(namespace) = worker.namespace() else {
            continue;
        };
        let name = worker.name_any();
        if !worker.spec.queue_consumers.is_empty() {
            let entry = out.entry((namespace.clone(), name.clone())).or_default();
            let queues = worker.spec.queue_consumers.iter();
            entry.queues.extend(queues.map(|c| c.queue.clone()));
        }
        for flow in worker
            .spec
            .bindings
            .iter()
            .filter_map(|b| b.workflow.as_ref())
        {
            let host = flow.worker.clone().unwrap_or_else(|| name.clone());
            let entry = out.entry((namespace.clone(), host)).or_default();
            entry.workflows.insert(flow.workflow_name().to_owned());
        }
    }
    out
}

/// What the store holds for one window of Workers.
#[derive(Debug, Default)]
pub struct Figures {
    /// What each queue holds.
    pub queues: HashMap<Key, QueueDepth>,
    /// Each workflow's instances by status (absent: none).
    pub workflows: HashMap<Key, WorkflowCounts>,
}

/// The status a Worker's [`Concerns`] show with `figures`.
pub fn shown(
    namespace: &str,
    concerns: &Concerns,
    figures: &Figures,
) -> (Vec<QueueBacklog>, Vec<WorkflowInstances>) {
    let key = |name: &str| (namespace.to_owned(), name.to_owned());
    let queues = concerns.queues.iter().map(|queue| {
        let depth = figures.queues.get(&key(queue)).copied().unwrap_or_default();
        QueueBacklog {
            queue: queue.clone(),
            backlog: depth.messages,
            oldest_message_time: depth
                .oldest_ms
                .and_then(|ms| Timestamp::from_millisecond(ms).ok())
                .map(|t| t.to_string()),
        }
    });
    let workflows = concerns.workflows.iter().map(|workflow| {
        let c = figures
            .workflows
            .get(&key(workflow))
            .cloned()
            .unwrap_or_default();
        WorkflowInstances {
            workflow: workflow.clone(),
            queued: c.queued,
            running: c.running,
            waiting: c.waiting,
            paused: c.paused,
            errored: c.errored,
            complete: c.complete,
            terminated: c.terminated,
        }
    });
    (queues.collect(), workflows.collect())
}

/// The status patch showing `queues` and `workflows` (an empty one leaves
/// the field out: applied, the field manager gives it up and it goes).
pub fn patch(queues: &[QueueBacklog], workflows: &[WorkflowInstances]) -> serde_json::Value {
    let mut status = serde_json::Map::new();
    if !queues.is_empty() {
        status.insert("queues".into(), serde_json::json!(queues));
    }
    if !workflows.is_empty() {
        status.insert("workflows".into(), serde_json::json!(workflows));
    }
    serde_json::json!({
        "apiVersion": format!("{}/{}", isolane_crds::GROUP, isolane_crds::VERSION),
        "kind": "Worker",
        "status": status,
    })
}

/// The leader's writer of backlogs into status.
pub struct BacklogStatus {
    pub client: Client,
    pub store: Store,
    pub workers: reflector::Store<Worker>,
    pub interval: Duration,
}

impl BacklogStatus {
    /// Refreshes a window of Workers every interval, for ever.
    pub async fn run(self) {
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut turn = 0;
        loop {
            ticks.tick().await;
            turn = self.once(turn).await;
        }
    }

    /// Looks at the window of concerned Workers starting at `turn` (in key
    /// order); the next turn.
    async fn once(&self, turn: usize) -> usize {
        let workers = self.workers.state();
        let mut all = concerns(&workers);
        let mut window: Vec<(Arc<Worker>, Concerns)> = Vec::new();
        let mut candidates: Vec<Arc<Worker>> = workers
            .into_iter()
            .filter(|w| {
                let shows = w
                    .status
                    .as_ref()
                    .is_some_and(|s| !s.queues.is_empty() || !s.workflows.is_empty());
                shows || all.contains_key(&key_of(w))
            })
            .collect();
        candidates.sort_by_key(|w| key_of(w));
        let total = candidates.len();
        let start = if total == 0 { 0 } else { turn % total };
        for worker in candidates
            .into_iter()
            .cycle()
            .skip(start)
            .take(total.min(PER_TICK))
        {
            let of = all.remove(&key_of(&worker)).unwrap_or_default();
            window.push((worker, of));
        }
        match self.figures(&window).await {
            Ok(figures) => self.write(&window, &figures).await,
            Err(error) => {
                warn!(%error, "cannot read the queues' backlogs and the workflows' instances")
            }
        }
        start + window.len()
    }

    /// What the store holds for the queues and workflows of `window`.
    async fn figures(&self, window: &[(Arc<Worker>, Concerns)]) -> Result<Figures, StoreError> {
        let mut figures = Figures::default();
        let mut flows = Vec::new();
        for (worker, concerns) in window {
            let namespace = worker.namespace().unwrap_or_default();
            for queue in &concerns.queues {
                let scope = QueueScope::new(namespace.clone(), queue.clone());
                let depth = self.store.queue_depth(scope).await?;
                figures
                    .queues
                    .insert((namespace.clone(), queue.clone()), depth);
            }
            let scopes = concerns.workflows.iter();
            flows.extend(scopes.map(|w| WorkflowScope::new(namespace.clone(), w.clone())));
        }
        if !flows.is_empty() {
            for counts in self.store.workflow_counts(flows).await? {
                let key = (
                    counts.scope.namespace.clone(),
                    counts.scope.workflow.clone(),
                );
                figures.workflows.insert(key, counts);
            }
        }
        Ok(figures)
    }

    /// Writes the status of each Worker of `window` whose figures changed.
    async fn write(&self, window: &[(Arc<Worker>, Concerns)], figures: &Figures) {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for (worker, concerns) in window {
            let namespace = worker.namespace().unwrap_or_default();
            let (queues, workflows) = shown(&namespace, concerns, figures);
            let status = worker.status.as_ref();
            let current = (
                status.map_or(&[][..], |s| s.queues.as_slice()),
                status.map_or(&[][..], |s| s.workflows.as_slice()),
            );
            if current == (queues.as_slice(), workflows.as_slice()) {
                continue;
            }
            let api: Api<Worker> = Api::namespaced(self.client.clone(), &namespace);
            let body = patch(&queues, &workflows);
            let name = worker.name_any();
            match api.patch_status(&name, &params, &Patch::Apply(&body)).await {
                Ok(_) => {
                    debug!(%namespace, worker = %name, "wrote status.queues and status.workflows")
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => {
                    warn!(%namespace, worker = %name, %error, "cannot write the Worker's backlog status")
                }
            }
        }
    }
}

fn key_of(worker: &Worker) -> Key {
    (worker.namespace().unwrap_or_default(), worker.name_any())
}

#[cfg(test)]
mod tests;
