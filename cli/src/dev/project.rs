//! What `isolane dev` serves: one script on every host and path, or every
//! Worker YAML in a folder. Each Worker becomes the bundle the operator would
//! write for it (same revision, limits and egress hosts) and the routes the
//! router would read from it; the router's own route table then matches
//! requests (the exact host before its wildcard, whole path segments).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use super::dev_worker::{Compatibility, DevWorker};
use crate::bundle::Code;
use anyhow::Context as _;
use isolane_crds::ObjectKind;
use isolane_router::routes::RoutableWorker;
use isolane_router::split::Split;
use isolane_worker::cron::Schedule;
use isolane_worker::{ANY_HOST, Claim, Route, WorkerKey};
use isolane_worker::{Bundle, Limits, Triggers};
use serde::Deserialize as _;

/// Where the Workers come from; read again on every reload.
#[derive(Debug, Clone)]
pub enum Source {
    /// One script and the modules it imports, or wrangler's output folder
    /// (`crate::bundle`), served on every host and path as `dev/<stem>`.
    Script {
        path: PathBuf,
        env: BTreeMap<String, String>,
        /// `--kv`: KV namespace bindings.
        kv: Vec<isolane_worker::Binding>,
        limits: Limits,
        /// `--cron`, in UTC.
        crons: Vec<String>,
        /// `--compatibility-date` and `--compatibility-flags`, checked.
        compatibility: Compatibility,
    },
    /// Every `kind: Worker` in the folder's `.yaml`/`.yml` files.
    Folder(PathBuf),
    /// A wrangler project: its config file and the environment selected
    /// (`--env`), served on every host and path as `dev/<name>`.
    Wrangler { file: PathBuf, env: Option<String> },
}

/// Everything `isolane dev` serves, read once.
#[derive(Debug, Clone)]
pub struct Project {
    pub workers: Vec<DevWorker>,
}

/// Why a Worker YAML cannot be served by `isolane dev`.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFileError {
    #[error(
        "{file}: Worker {name}: {reference} is not in the folder (a ConfigMap's data or a Secret's stringData)"
    )]
    Missing {
        file: String,
        name: String,
        reference: String,
    },
    #[error("{file}: Worker {name}: neither spec.script nor spec.scriptFrom is set")]
    NoScript { file: String, name: String },
    #[error("{file}: Worker {name}: {error}")]
    Cron {
        file: String,
        name: String,
        error: isolane_worker::cron::ScheduleError,
    },
    #[error("{file}: Worker {name}: {error}")]
    Compatibility {
        file: String,
        name: String,
        error: isolane_worker::CompatError,
    },
    #[error("{file}: Worker {name}: spec.bindings: {error}")]
    Bindings {
        file: String,
        name: String,
        error: isolane_worker::BindingError,
    },
    #[error("{file}: Worker {name}: spec.queueConsumers: {error}")]
    Queues {
        file: String,
        name: String,
        error: isolane_worker::QueueError,
    },
    #[error("{dir}: no Worker YAML found")]
    Empty { dir: String },
}

impl Source {
    /// The file or folder to watch for changes.
    pub fn path(&self) -> &Path {
        match self {
            Source::Script { path, .. } | Source::Folder(path) => path,
            Source::Wrangler { file, .. } => file,
        }
    }

    /// Reads the Workers.
    pub fn load(&self) -> anyhow::Result<Project> {
        let workers = match self {
            Source::Script {
                path,
                env,
                kv,
                limits,
                crons,
                compatibility,
            } => vec![script_worker(
                path,
                (env, kv),
                limits,
                crons,
                compatibility,
            )?],
            Source::Folder(dir) => folder_workers(dir)?,
            Source::Wrangler { file, env } => vec![super::wrangler::worker(file, env.as_deref())?],
        };
        Ok(Project { workers })
    }
}

impl Project {
    /// The Workers as the router's route table reads them. A host and prefix
    /// claimed twice keeps the first Worker's (files in name order), as the
    /// router keeps the older Worker's.
    pub fn routable(&self) -> Vec<RoutableWorker> {
        self.workers
            .iter()
            .enumerate()
            .map(|(order, worker)| RoutableWorker {
                claim: Claim {
                    worker: worker.key.clone(),
                    // Files in name order: the first is the oldest.
                    since: i128::try_from(order).ok(),
                    routes: worker.routes.clone(),
                },
                split: Split::single(&worker.bundle.revision),
                triggers: worker.triggers.clone(),
            })
            .collect()
    }
}

/// `isolane dev <file>`: the script on every host and path, with its
/// `--env` and `--kv` bindings.
fn script_worker(
    path: &Path,
    (env, kv): (&BTreeMap<String, String>, &Vec<isolane_worker::Binding>),
    limits: &Limits,
    crons: &[String],
    compatibility: &Compatibility,
) -> anyhow::Result<DevWorker> {
    compatibility.check()?;
    isolane_worker::check_bindings(env.keys().map(String::as_str), kv)?;
    let code = crate::bundle::load(path, &crate::rules::Rules::default())?;
    for expr in crons {
        Schedule::parse(expr, None)?;
    }
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("worker");
    let key = WorkerKey::new("dev", stem);
    Ok(DevWorker {
        bundle: match code {
            Code::Script(script) => {
                Bundle::new(key.to_string(), script, env.clone(), *limits, Vec::new())
            }
            Code::Modules(modules) => Bundle::new(
                key.to_string(),
                String::new(),
                env.clone(),
                *limits,
                Vec::new(),
            )
            .with_modules(modules),
        }
        .with_compatibility(compatibility.date.clone(), compatibility.flags.clone())
        .with_bindings(kv.clone()),
        key,
        routes: vec![Route::new(ANY_HOST, "/")],
        triggers: (!crons.is_empty()).then(|| Triggers {
            crons: crons.to_vec(),
            time_zone: None,
        }),
        assets: None,
    })
}

/// Every `kind: Worker` document in the folder's `.yaml`/`.yml` files.
/// `scriptFrom` and `valueFrom` resolve against the ConfigMaps (`data`) and
/// Secrets (`stringData`) in the same folder, as the operator would.
fn folder_workers(dir: &Path) -> anyhow::Result<Vec<DevWorker>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut documents = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_yaml::Value::deserialize(document)
                .with_context(|| format!("{}: invalid YAML", file.display()))?;
            documents.push((file.clone(), value));
        }
    }
    let sources = Sources::collect(&documents);
    let namespaces = namespace_labels(&documents);
    let mut workers = Vec::new();
    for (file, value) in documents {
        if value.get("kind").and_then(|k| k.as_str()) != Some("Worker") {
            continue;
        }
        let worker: isolane_crds::Worker = serde_yaml::from_value(value)
            .with_context(|| format!("{}: not a valid Worker", file.display()))?;
        let mut worker = dev_worker(&file, worker, &sources)?;
        worker.bundle = with_consent(worker.bundle, &worker.key, &namespaces);
        check_queue_consumers(&file, &worker, &workers)?;
        workers.push(worker);
    }
    if workers.is_empty() {
        return Err(WorkerFileError::Empty {
            dir: dir.display().to_string(),
        }
        .into());
    }
    Ok(workers)
}

/// The labels of each `kind: Namespace` document of the folder, by name:
/// what `isolane dev` knows of Namespaces (their dispatch consent).
fn namespace_labels(
    documents: &[(PathBuf, serde_yaml::Value)],
) -> BTreeMap<String, BTreeMap<String, String>> {
    documents
        .iter()
        .filter(|(_, doc)| doc.get("kind").and_then(|k| k.as_str()) == Some("Namespace"))
        .filter_map(|(_, doc)| {
            let metadata = doc.get("metadata")?;
            let name = metadata.get("name")?.as_str()?;
            let labels: BTreeMap<String, String> = metadata
                .get("labels")
                .and_then(|l| serde_yaml::from_value(l.clone()).ok())
                .unwrap_or_default();
            Some((name.to_owned(), labels))
        })
        .collect()
}

/// `bundle` with the target namespaces of its dispatch bindings that agree
/// to Worker `key`'s namespace dispatching into them: as the operator reads
/// them from the cluster's Namespaces, `isolane dev` reads them from the
/// folder's `kind: Namespace` documents (`namespaces`, their labels); a
/// namespace without one has not agreed.
fn with_consent(
    bundle: isolane_worker::Bundle,
    key: &WorkerKey,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> isolane_worker::Bundle {
    let targets = isolane_worker::Bundle::dispatch_targets(&bundle.bindings);
    if targets.is_empty() {
        return bundle;
    }
    let consent = targets
        .into_iter()
        .filter(|target| {
            namespaces
                .get(target)
                .is_some_and(|labels| isolane_worker::dispatch::consents(labels, &key.namespace))
        })
        .collect();
    bundle.with_dispatch_consent(consent)
}

/// A queue `worker` consumes is consumed by no Worker read before it of
/// its namespace (the webhook's rule).
fn check_queue_consumers(
    file: &Path,
    worker: &DevWorker,
    before: &[DevWorker],
) -> Result<(), WorkerFileError> {
    let others = before
        .iter()
        .filter(|other| other.key.namespace == worker.key.namespace)
        .map(|other| (other.key.name.as_str(), &other.bundle.queue_consumers[..]));
    isolane_worker::queue::check_namespace_consumers(
        &worker.key.name,
        &worker.bundle.queue_consumers,
        others,
    )
    .map_err(|error| WorkerFileError::Queues {
        file: file.display().to_string(),
        name: worker.key.name.clone(),
        error,
    })
}

/// ConfigMap `data` and Secret `stringData` of the folder, by (kind, name, key).
struct Sources(HashMap<(&'static str, String, String), String>);

impl Sources {
    fn collect(documents: &[(std::path::PathBuf, serde_yaml::Value)]) -> Self {
        let mut map = HashMap::new();
        for (_, doc) in documents {
            let (kind, field) = match doc.get("kind").and_then(|k| k.as_str()) {
                Some("ConfigMap") => ("ConfigMap", "data"),
                Some("Secret") => ("Secret", "stringData"),
                _ => continue,
            };
            let name = doc
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or_default();
            let Some(entries) = doc.get(field).and_then(|d| d.as_mapping()) else {
                continue;
            };
            for (key, value) in entries {
                if let (Some(key), Some(value)) = (key.as_str(), value.as_str()) {
                    map.insert((kind, name.to_owned(), key.to_owned()), value.to_owned());
                }
            }
        }
        Self(map)
    }

    fn get(&self, kind: &'static str, name: &str, key: &str) -> Option<String> {
        self.0
            .get(&(kind, name.to_owned(), key.to_owned()))
            .cloned()
    }
}

/// The Worker's script and env ([`isolane_crds::resolve`]) from the
/// folder's ConfigMaps and Secrets; `Err` names the first missing key.
fn resolve(
    spec: &isolane_crds::WorkerSpec,
    sources: &Sources,
) -> Result<isolane_crds::Resolved, String> {
    isolane_crds::resolve(spec, |reference| {
        let kind = match reference.kind {
            ObjectKind::ConfigMap => "ConfigMap",
            ObjectKind::Secret => "Secret",
        };
        let (object, key) = (reference.name, reference.key);
        let missing = || format!("{kind} {object} key {key}");
        sources.get(kind, object, key).ok_or_else(missing)
    })
}

/// Every cron schedule of `triggers` parses in its time zone.
fn check_crons(triggers: &Triggers) -> Result<(), isolane_worker::cron::ScheduleError> {
    for expr in &triggers.crons {
        Schedule::parse(expr, triggers.time_zone.as_deref())?;
    }
    Ok(())
}

/// The rules on a Worker's spec that need more than its schema: bindings,
/// queue consumers, cron schedules.
fn check_spec(
    file: &str,
    name: &str,
    spec: &isolane_crds::WorkerSpec,
) -> Result<(), WorkerFileError> {
    let (file, name) = (file.to_owned(), name.to_owned());
    if let Err(error) =
        isolane_worker::check_bindings(spec.env.iter().map(|var| var.name.as_str()), &spec.bindings)
    {
        return Err(WorkerFileError::Bindings { file, name, error });
    }
    if let Err(error) = isolane_worker::queue::check_consumers(&spec.queue_consumers) {
        return Err(WorkerFileError::Queues { file, name, error });
    }
    // A Worker without routes is valid: it is reached only through other
    // Workers' service bindings (or its cron triggers).
    if let Some(triggers) = &spec.triggers
        && let Err(error) = check_crons(triggers)
    {
        return Err(WorkerFileError::Cron { file, name, error });
    }
    Ok(())
}

fn dev_worker(
    file: &Path,
    worker: isolane_crds::Worker,
    sources: &Sources,
) -> Result<DevWorker, WorkerFileError> {
    let file = file.display().to_string();
    let name = worker.metadata.name.unwrap_or_default();
    let namespace = worker
        .metadata
        .namespace
        .unwrap_or_else(|| "default".into());
    let spec = worker.spec;
    if spec.script.is_none() && spec.script_from.is_none() {
        return Err(WorkerFileError::NoScript { file, name });
    }
    let (script, env) = match resolve(&spec, sources) {
        Ok(resolved) => (resolved.script, resolved.env),
        Err(reference) => {
            return Err(WorkerFileError::Missing {
                file,
                name,
                reference,
            });
        }
    };
    check_spec(&file, &name, &spec)?;
    let compatibility = Compatibility {
        date: spec.compatibility_date,
        flags: spec.compatibility_flags,
    };
    if let Err(error) = compatibility.check() {
        return Err(WorkerFileError::Compatibility { file, name, error });
    }
    let key = WorkerKey::new(namespace, name);
    let egress = spec.egress.map(|egress| egress.allowed_hosts);
    let bundle = Bundle::new(key.to_string(), script, env, spec.limits, Vec::new())
        .with_allowed_hosts(egress.unwrap_or_default())
        .with_compatibility(compatibility.date, compatibility.flags)
        .with_bindings(spec.bindings)
        .with_queue_consumers(spec.queue_consumers);
    Ok(DevWorker {
        key,
        bundle,
        routes: spec.routes,
        triggers: spec.triggers.filter(|t| !t.crons.is_empty()),
        assets: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_gets_the_revision_the_operator_gives_it() {
        let worker: isolane_crds::Worker = serde_yaml::from_str(
            "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {name: w, namespace: ns}\nspec:\n  script: 'export default {}'\n  env: [{name: A, value: '1'}]\n  limits: {cpuMs: 20}\n  egress: {allowedHosts: [api.example.com]}\n  routes: [{host: w.test}]\n",
        )
        .unwrap();
        let operator = Bundle::new(
            "ns/w".into(),
            "export default {}".into(),
            BTreeMap::from([("A".to_owned(), "1".to_owned())]),
            worker.spec.limits,
            Vec::new(),
        )
        .with_allowed_hosts(vec!["api.example.com".into()]);
        let dev = dev_worker(Path::new("w.yaml"), worker, &Sources::collect(&[])).unwrap();
        assert_eq!(dev.bundle.revision, operator.revision);
        assert_eq!(dev.bundle.limits.cpu_ms, 20);
        assert_eq!(dev.key, WorkerKey::new("ns", "w"));
        assert_eq!(dev.routes, [Route::new("w.test", "/")]);
    }

    #[test]
    fn compatibility_fields_reach_the_bundle_and_unknown_flags_are_refused() {
        let yaml = |flags: &str| -> isolane_crds::Worker {
            serde_yaml::from_str(&format!(
                "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{name: w, namespace: ns}}\nspec:\n  script: 'export default {{}}'\n  compatibilityDate: '2026-08-04'\n  compatibilityFlags: [{flags}]\n  routes: [{{host: w.test}}]\n"
            ))
            .unwrap()
        };
        let sources = Sources::collect(&[]);
        let dev = dev_worker(Path::new("w.yaml"), yaml("no_nodejs_compat_v2"), &sources).unwrap();
        assert_eq!(dev.bundle.compatibility_date.as_deref(), Some("2026-08-04"));
        assert_eq!(
            dev.bundle.compat().map(|c| c.node),
            Ok(isolane_worker::NodeCompat::V1)
        );
        let error = dev_worker(Path::new("w.yaml"), yaml("nodejs_compt"), &sources).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("w.yaml: Worker w: unknown compatibility flag \"nodejs_compt\"; known flags: nodejs_compat"),
            "{message}"
        );
    }

    #[test]
    fn bindings_reach_the_bundle_and_bad_ones_are_refused() {
        let yaml = |bindings: &str| -> isolane_crds::Worker {
            serde_yaml::from_str(&format!(
                "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{name: w, namespace: ns}}\nspec:\n  script: 'export default {{}}'\n  env: [{{name: A, value: '1'}}]\n  bindings: [{bindings}]\n  routes: [{{host: w.test}}]\n"
            ))
            .unwrap()
        };
        let sources = Sources::collect(&[]);
        let dev = dev_worker(
            Path::new("w.yaml"),
            yaml("{name: KV, kvNamespace: cache}"),
            &sources,
        )
        .unwrap();
        assert_eq!(
            dev.bundle.bindings,
            [isolane_worker::Binding::kv("KV", "cache")]
        );
        for (bad, says) in [
            (
                "{name: A, kvNamespace: cache}",
                "binding name \"A\" is used twice",
            ),
            (
                "{name: COUNTER, durableObject: {className: C, worker: ns/other}}",
                "durableObject.worker \"ns/other\" is not a Worker name",
            ),
            (
                "{name: KV, kvNamespace: 'a b'}",
                "KV namespace name \"a b\" is invalid",
            ),
        ] {
            let error = dev_worker(Path::new("w.yaml"), yaml(bad), &sources).unwrap_err();
            let message = error.to_string();
            assert!(
                message.starts_with("w.yaml: Worker w: spec.bindings: ") && message.contains(says),
                "{message}"
            );
        }
    }

    #[test]
    fn earlier_files_win_route_conflicts() {
        let worker = |id: &str, host: &str, prefix: &str| DevWorker {
            key: WorkerKey::new(id.split_once('/').unwrap().0, id.split_once('/').unwrap().1),
            bundle: Bundle::new(
                id.into(),
                String::new(),
                BTreeMap::new(),
                Limits::default(),
                Vec::new(),
            ),
            routes: vec![Route::new(host, prefix)],
            triggers: None,
            assets: None,
        };
        // `z/late` sorts after `a/early` by id, but comes first in the folder.
        let project = Project {
            workers: vec![
                worker("z/first", "a.test", "/"),
                worker("a/second", "a.test", "/"),
            ],
        };
        let routable = project.routable();
        assert!(routable[0].claim.since < routable[1].claim.since);
        let (table, _) =
            isolane_router::routes::RouteTable::build(routable, |_| std::sync::Arc::default());
        let served = table.lookup("a.test", "/").map(|b| b.worker_id.as_str());
        assert_eq!(served, Some("z/first"));
    }
}
