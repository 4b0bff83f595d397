//! What the operator comparison measures besides time: the apiserver's
//! writes by resource (its own `apiserver_request_total`), the CPU seconds
//! of each process (`/proc/<pid>/stat`), how many reconciles an operator
//! has run (its `isolane_operator_reconciles_total`), and a watch that
//! counts the Workers Ready for their generation.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt as _;
use isolane_crds::Worker;
use isolane_testenv::workers::has_condition;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt as _};
use tokio::sync::watch;

/// The verbs that write.
const WRITES: [&str; 5] = ["POST", "PUT", "PATCH", "APPLY", "DELETE"];

/// Writes the apiserver has served, by `resource[/subresource]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes(pub BTreeMap<String, u64>);

impl Writes {
    /// Read from the apiserver's `/metrics`.
    pub async fn read(client: &Client) -> anyhow::Result<Self> {
        let request = http::Request::get("/metrics").body(Vec::new())?;
        let text = client.request_text(request).await?;
        let mut writes = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let label = |name: &str| label(labels, name).unwrap_or_default();
            if !WRITES.contains(&label("verb").as_str()) {
                continue;
            }
            let (resource, subresource) = (label("resource"), label("subresource"));
            let key = if subresource.is_empty() {
                resource
            } else {
                format!("{resource}/{subresource}")
            };
            let count = value.trim().parse::<f64>().unwrap_or(0.0) as u64;
            *writes.entry(key).or_insert(0) += count;
        }
        Ok(Self(writes))
    }

    /// The writes served since `before`.
    pub fn since(&self, before: &Writes) -> Writes {
        Writes(
            self.0
                .iter()
                .map(|(key, count)| {
                    let earlier = before.0.get(key).copied().unwrap_or(0);
                    (key.clone(), count.saturating_sub(earlier))
                })
                .filter(|(_, count)| *count > 0)
                .collect(),
        )
    }

    /// Writes to what a reconcile writes: Workers (and their status) and
    /// Secrets (bundles). Host-owner ConfigMaps are left out: the recorder
    /// writes them one at a time behind the reconciles, so a restart goes
    /// on writing those the stopped operator had not reached.
    pub fn of_workers_and_bundles(&self) -> u64 {
        self.0
            .iter()
            .filter(|(key, _)| {
                ["workers", "secrets"]
                    .iter()
                    .any(|resource| key.split('/').next() == Some(resource))
            })
            .map(|(_, count)| count)
            .sum()
    }

    /// `resource: count, …`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(key, count)| format!("{key} {count}"))
            .collect();
        parts.join(", ")
    }
}

/// The value of label `name` in `a="x",b="y"`.
fn label(labels: &str, name: &str) -> Option<String> {
    let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
    let end = labels[start..].find('"')?;
    Some(labels[start..start + end].to_owned())
}

/// User + system CPU seconds of process `pid` (its threads included).
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command (which may hold spaces): state is the 3rd
    // field overall, utime the 14th and stime the 15th.
    let Some((_, after)) = stat.rsplit_once(") ") else {
        return 0.0;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |index: usize| fields.get(index).and_then(|v| v.parse::<u64>().ok());
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return 0.0;
    };
    // Linux reports clock ticks of USER_HZ, 100 on every supported target.
    (user + system) as f64 / 100.0
}

/// The reconciles an operator has run (every outcome), from its `/metrics`.
pub async fn reconciles(admin: SocketAddr) -> Option<u64> {
    let response = isolane_testenv::http_probe::get(admin, "/metrics").await?;
    let total = response
        .body
        .lines()
        .filter(|line| line.starts_with("isolane_operator_reconciles_total"))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>();
    Some(total as u64)
}

/// The count of Ready Workers, while the watch runs (it stops when this
/// is dropped).
pub struct ReadyCount {
    pub count: watch::Receiver<usize>,
    watch: tokio::task::JoinHandle<()>,
}

impl Drop for ReadyCount {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Counts the Workers of `api` that are Ready for their generation, from a
/// watch (a list every half second of 10,000 Workers cost the apiserver
/// more than the operator's writes did).
pub fn ready_count(api: Api<Worker>) -> ReadyCount {
    let (count, receiver) = watch::channel(0);
    let watch = tokio::spawn(async move {
        let mut ready = HashSet::new();
        let mut relisted: Option<HashSet<String>> = None;
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let Ok(event) = event else {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            };
            match event {
                watcher::Event::Init => relisted = Some(HashSet::new()),
                watcher::Event::InitApply(worker) => {
                    if has_condition(&worker, "Ready", "True", None) {
                        relisted
                            .get_or_insert_with(HashSet::new)
                            .insert(worker.name_any());
                    }
                    continue;
                }
                watcher::Event::InitDone => ready = relisted.take().unwrap_or_default(),
                watcher::Event::Apply(worker) => {
                    if has_condition(&worker, "Ready", "True", None) {
                        ready.insert(worker.name_any());
                    } else {
                        ready.remove(&worker.name_any());
                    }
                }
                watcher::Event::Delete(worker) => {
                    ready.remove(&worker.name_any());
                }
            }
            if count.send(ready.len()).is_err() {
                return;
            }
        }
    });
    ReadyCount {
        count: receiver,
        watch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_by_name() {
        let labels = r#"code="201",component="apiserver",resource="workers",subresource="status",verb="APPLY""#;
        assert_eq!(label(labels, "resource").as_deref(), Some("workers"));
        assert_eq!(label(labels, "subresource").as_deref(), Some("status"));
        assert_eq!(label(labels, "verb").as_deref(), Some("APPLY"));
        assert_eq!(label(labels, "group"), None);
    }

    #[test]
    fn writes_since_keep_what_grew() {
        let before = Writes(BTreeMap::from([
            ("secrets".into(), 5),
            ("workers".into(), 2),
        ]));
        let after = Writes(BTreeMap::from([
            ("secrets".into(), 5),
            ("workers".into(), 4),
            ("configmaps".into(), 1),
            ("leases".into(), 9),
        ]));
        let delta = after.since(&before);
        assert_eq!(delta.describe(), "configmaps 1, leases 9, workers 2");
        assert_eq!(delta.of_workers_and_bundles(), 2);
    }
}
