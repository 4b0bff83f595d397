//! Recorded host owners (`isolane_worker::HostOwner`): the memory that keeps
//! a host its namespace's while it redeploys (issue 28). Kept as ConfigMaps
//! labelled `isolane.dev/host-owner=true` in the operator's namespace
//! (`isolane_crds::host_owner_config_map`).
//!
//! - [`watch`] reads them into a [`WorkerIndex`], so every decision the
//!   index makes (status, webhook) takes them as input, as the router's does.
//!   The caches (`caches.rs`) and the webhook each run one.
//! - [`Recorder`] (the leader's controller only) writes them: after each
//!   change to the claims, and periodically for grace periods that end, it
//!   applies `isolane_worker::next_owners` — a host admitted to a namespace
//!   is recorded; a record whose namespace no longer claims the host is
//!   marked released, and deleted once released for `--host-release-grace`.
//!
//! Expected flow: the caches list the records before they start the Worker
//! watch, and the recorder starts only once every cache has listed, so a
//! partial view never records a host for the wrong namespace. Caveats: a
//! host admitted while the operator is down is recorded only when it comes
//! back; until then the age rule alone decides it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use isolane_crds::{HOST_OWNER_LABEL, host_owner_config_map, host_owner_from, host_owner_name};
use isolane_worker::{HostOwner, next_owners};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::{Notify, watch as signal};
use tracing::{info, warn};

use crate::index::WorkerIndex;
use crate::routes::WorkerKey;
use crate::{FIELD_MANAGER, lock};

/// The longest the recorder goes without looking for grace periods that
/// ended.
pub const MAX_RECHECK: Duration = Duration::from_secs(30);

/// How long the recorder waits after a failed write before trying again.
const RETRY: Duration = Duration::from_secs(1);

/// Watches the host-owner ConfigMaps of `api` (the operator's namespace)
/// into `index`; calls `wake` with the Workers whose route ownership a
/// change may have moved, and `listed` after each complete list. `synced`
/// turns true after the first list. Runs until the watch ends.
pub async fn watch(
    api: Api<ConfigMap>,
    index: Arc<Mutex<WorkerIndex>>,
    wake: impl Fn(Vec<WorkerKey>),
    listed: impl Fn(),
    synced: signal::Sender<bool>,
) {
    let config = watcher::Config::default().labels(&format!("{HOST_OWNER_LABEL}=true"));
    let mut events = watcher(api, config).default_backoff().boxed();
    let mut owners: HashMap<String, HostOwner> = HashMap::new();
    let mut relist: Option<HashMap<String, HostOwner>> = None;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                warn!(%error, "host-owner watch failed; retrying");
                continue;
            }
        };
        match event {
            watcher::Event::Init => relist = Some(HashMap::new()),
            watcher::Event::InitApply(config_map) => {
                if let Some(owner) = read(&config_map) {
                    relist
                        .get_or_insert_with(HashMap::new)
                        .insert(config_map.name_any(), owner);
                }
                continue;
            }
            watcher::Event::InitDone => {
                owners = relist.take().unwrap_or_default();
                listed();
                let affected = lock(&index).set_owners(owners.values().cloned().collect());
                wake(affected);
            }
            watcher::Event::Apply(config_map) => {
                let name = config_map.name_any();
                let after = read(&config_map);
                let before = match &after {
                    Some(owner) => owners.insert(name, owner.clone()),
                    None => owners.remove(&name),
                };
                wake(lock(&index).replace_owner(before.as_ref(), after));
            }
            watcher::Event::Delete(config_map) => {
                let before = owners.remove(&config_map.name_any());
                wake(lock(&index).replace_owner(before.as_ref(), None));
            }
        }
        if relist.is_some() {
            continue;
        }
        synced.send_replace(true);
    }
}

/// The owner `config_map` records; `None` (logged) when it is malformed.
fn read(config_map: &ConfigMap) -> Option<HostOwner> {
    host_owner_from(config_map)
        .inspect_err(|error| warn!(%error, kind = error.kind(), "ignoring a host-owner record"))
        .ok()
}

/// Writes the host-owner records (the leader only).
pub struct Recorder {
    /// ConfigMaps in the operator's namespace.
    pub api: Api<ConfigMap>,
    /// The operator's namespace.
    pub namespace: String,
    /// The claims and records the decision is made over.
    pub index: Arc<Mutex<WorkerIndex>>,
    /// How long a released host stays held.
    pub grace: Duration,
}

impl Recorder {
    /// Records owners whenever `changed` is notified (the claims changed),
    /// and at least every [`MAX_RECHECK`] (or the grace period, if
    /// shorter); `wake` gets the Workers a recorded change may affect.
    /// Runs until dropped.
    pub async fn run(self, changed: Arc<Notify>, wake: impl Fn(Vec<WorkerKey>)) {
        let recheck = MAX_RECHECK.min(self.grace);
        loop {
            let wait = match self.record().await {
                Ok(affected) => {
                    wake(affected);
                    recheck
                }
                Err(error) => {
                    warn!(%error, "recording host owners failed; retrying");
                    RETRY
                }
            };
            tokio::select! {
                () = changed.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One pass: writes what changed; returns the Workers the new records
    /// may affect.
    async fn record(&self) -> Result<Vec<WorkerKey>, kube::Error> {
        let now = Timestamp::now().as_nanosecond();
        let grace = i128::try_from(self.grace.as_nanos()).unwrap_or(i128::MAX);
        let (current, next) = {
            let index = lock(&self.index);
            let routes = index.routes();
            let current = routes.owners().to_vec();
            let next = next_owners(routes.ownership(), &current, now, grace);
            (current, next)
        };
        if next == current {
            return Ok(Vec::new());
        }
        let before: BTreeMap<&str, &HostOwner> =
            current.iter().map(|o| (o.host.as_str(), o)).collect();
        for owner in &next {
            if before.get(owner.host.as_str()) != Some(&owner) {
                self.write(owner, before.get(owner.host.as_str()).copied())
                    .await?;
            }
        }
        let kept: HashSet<&str> = next.iter().map(|owner| owner.host.as_str()).collect();
        for gone in current
            .iter()
            .filter(|owner| !kept.contains(owner.host.as_str()))
        {
            let name = host_owner_name(&gone.host);
            match self.api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
            info!(host = %gone.host, owner = %gone.namespace, "host released: grace period over");
        }
        Ok(lock(&self.index).set_owners(next))
    }

    /// Applies `owner`'s record (`before`: the one it replaces).
    async fn write(
        &self,
        owner: &HostOwner,
        before: Option<&HostOwner>,
    ) -> Result<(), kube::Error> {
        let config_map = host_owner_config_map(owner, &self.namespace);
        let name = host_owner_name(&owner.host);
        self.api
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&config_map),
            )
            .await?;
        let (host, namespace) = (&owner.host, &owner.namespace);
        match (before, owner.released) {
            (None, _) => info!(%host, owner = %namespace, "host recorded as its namespace's"),
            (Some(_), Some(_)) => {
                info!(%host, owner = %namespace, "host no longer claimed: held for its namespace")
            }
            (Some(_), None) => info!(%host, owner = %namespace, "host claimed again"),
        }
        Ok(())
    }
}
