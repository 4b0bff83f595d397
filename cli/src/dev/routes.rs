//! Which worker answers a request: one file for every path, or Worker YAML
//! routed by host and path prefix exactly as the router routes them
//! (`isolane_hosts::RouteIndex`: the exact host before its wildcard, the
//! longest whole-segment prefix first).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use isolane_crds::cron::Schedule;

use anyhow::Context as _;
use isolane_engine::{Limits, WorkerBundle};
use isolane_hosts::RouteIndex;
use serde::Deserialize as _;

/// One routable worker.
#[derive(Debug)]
struct Route {
    /// Lower-case host, or `*.example.com`.
    host: String,
    path_prefix: String,
    bundle: Arc<WorkerBundle>,
}

/// The routing table of `isolane dev`.
#[derive(Debug)]
pub struct Routes {
    single: Option<Arc<WorkerBundle>>,
    routes: RouteIndex<Arc<WorkerBundle>>,
    /// Cron schedules (`--cron`, or the Workers' `spec.triggers`).
    schedules: Vec<Scheduled>,
}

/// A worker and one of its cron schedules.
pub type Scheduled = (Arc<WorkerBundle>, Schedule);

/// Why a Worker YAML cannot be served by `isolane dev`.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFileError {
    #[error("{file}: Worker {name}: scriptFrom names a ConfigMap key not found in the folder")]
    ScriptFrom { file: String, name: String },
    #[error(
        "{file}: Worker {name}: binding {binding} names a ConfigMap key or Secret stringData key not found in the folder"
    )]
    ValueFrom {
        file: String,
        name: String,
        binding: String,
    },
    #[error("{file}: Worker {name}: {error}")]
    Cron {
        file: String,
        name: String,
        error: isolane_crds::cron::ScheduleError,
    },
    #[error("{file}: Worker {name} has no routes")]
    NoRoutes { file: String, name: String },
    #[error("{dir}: no Worker YAML found")]
    Empty { dir: String },
}

impl Routes {
    pub fn single(bundle: WorkerBundle, schedules: Vec<Schedule>) -> Self {
        let bundle = Arc::new(bundle);
        Self {
            single: Some(bundle.clone()),
            routes: RouteIndex::default(),
            schedules: schedules.into_iter().map(|s| (bundle.clone(), s)).collect(),
        }
    }

    /// Every worker's cron schedules.
    pub fn schedules(&self) -> &[Scheduled] {
        &self.schedules
    }

    /// Every `kind: Worker` document in the folder's `.yaml`/`.yml` files.
    /// `scriptFrom` and `valueFrom` resolve against the ConfigMaps (`data`) and
    /// Secrets (`stringData`) in the same folder, as the operator would.
    pub fn from_dir(dir: &Path) -> anyhow::Result<Self> {
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
        let mut routes = Vec::new();
        let mut schedules = Vec::new();
        for (file, value) in documents {
            if value.get("kind").and_then(|k| k.as_str()) != Some("Worker") {
                continue;
            }
            let worker: isolane_crds::Worker = serde_yaml::from_value(value)
                .with_context(|| format!("{}: not a valid Worker", file.display()))?;
            let (worker_routes, worker_schedules) = worker_routes(&file, worker, &sources)?;
            routes.extend(worker_routes);
            schedules.extend(worker_schedules);
        }
        if routes.is_empty() {
            return Err(WorkerFileError::Empty {
                dir: dir.display().to_string(),
            }
            .into());
        }
        Ok(Self {
            single: None,
            routes: index(routes),
            schedules,
        })
    }

    /// The worker for a request's host (port allowed) and path.
    pub fn resolve(&self, host: &str, path: &str) -> Option<&Arc<WorkerBundle>> {
        if let Some(single) = &self.single {
            return Some(single);
        }
        self.routes.lookup(host, path)
    }
}

/// The routes indexed; a host and prefix claimed twice keeps the first
/// (files in name order), as the router keeps the older Worker's.
fn index(routes: Vec<Route>) -> RouteIndex<Arc<WorkerBundle>> {
    let mut index = RouteIndex::default();
    for route in routes {
        if index.insert(&route.host, &route.path_prefix, route.bundle.clone()) {
            tracing::info!(worker.id = %route.bundle.id, revision = %route.bundle.revision, host = %route.host, path_prefix = %route.path_prefix, "route");
        } else {
            tracing::warn!(worker.id = %route.bundle.id, host = %route.host, path_prefix = %route.path_prefix, "route claimed by an earlier Worker; ignored");
        }
    }
    index
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

fn worker_routes(
    file: &Path,
    worker: isolane_crds::Worker,
    sources: &Sources,
) -> Result<(Vec<Route>, Vec<Scheduled>), WorkerFileError> {
    let file = file.display().to_string();
    let name = worker.metadata.name.clone().unwrap_or_default();
    let namespace = worker
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let spec = worker.spec;
    let script = spec.script.or_else(|| {
        let r = &spec.script_from.as_ref()?.config_map_key_ref;
        sources.get("ConfigMap", &r.name, &r.key)
    });
    let Some(script) = script else {
        return Err(WorkerFileError::ScriptFrom { file, name });
    };
    let mut env = std::collections::BTreeMap::new();
    for var in spec.env {
        let from = var.value_from.as_ref();
        let value = var.value.clone().or_else(|| {
            let from = from?;
            match (&from.secret_key_ref, &from.config_map_key_ref) {
                (Some(r), _) => sources.get("Secret", &r.name, &r.key),
                (_, Some(r)) => sources.get("ConfigMap", &r.name, &r.key),
                _ => None,
            }
        });
        let Some(value) = value else {
            return Err(WorkerFileError::ValueFrom {
                file,
                name,
                binding: var.name,
            });
        };
        env.insert(var.name, value);
    }
    if spec.routes.is_empty() {
        return Err(WorkerFileError::NoRoutes { file, name });
    }
    let mut schedules = Vec::new();
    if let Some(triggers) = &spec.triggers {
        for expr in &triggers.crons {
            match Schedule::parse(expr, triggers.time_zone.as_deref()) {
                Ok(schedule) => schedules.push(schedule),
                Err(error) => return Err(WorkerFileError::Cron { file, name, error }),
            }
        }
    }
    let limits = Limits {
        cpu_ms: u64::from(spec.limits.cpu_ms),
        wall_ms: u64::from(spec.limits.wall_ms),
        memory_mib: u64::from(spec.limits.memory_mib),
        subrequests: spec.limits.subrequests,
    };
    let allowed_hosts = spec
        .egress
        .as_ref()
        .map(|egress| egress.allowed_hosts.clone())
        .unwrap_or_default();
    let bundle = Arc::new(WorkerBundle {
        id: format!("{namespace}/{name}"),
        // The revision the operator gives the same Worker.
        revision: isolane_crds::Bundle::compute_revision_with(
            &script,
            &env,
            &spec.limits,
            &allowed_hosts,
        ),
        script,
        env,
        limits,
        allowed_hosts,
    });
    let routes = spec
        .routes
        .into_iter()
        .map(|r| Route {
            host: r.host.to_ascii_lowercase(),
            path_prefix: r.path_prefix,
            bundle: bundle.clone(),
        })
        .collect();
    let schedules = schedules.into_iter().map(|s| (bundle.clone(), s)).collect();
    Ok((routes, schedules))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(id: &str) -> Arc<WorkerBundle> {
        Arc::new(WorkerBundle::new(id, "r", ""))
    }

    fn route(host: &str, prefix: &str, id: &str) -> Route {
        Route {
            host: host.to_owned(),
            path_prefix: prefix.to_owned(),
            bundle: bundle(id),
        }
    }

    #[test]
    fn a_worker_gets_the_revision_the_operator_gives_it() {
        let worker: isolane_crds::Worker = serde_yaml::from_str(
            "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {name: w, namespace: ns}\nspec:\n  script: 'export default {}'\n  env: [{name: A, value: '1'}]\n  limits: {cpuMs: 20}\n  egress: {allowedHosts: [api.example.com]}\n  routes: [{host: w.test}]\n",
        )
        .unwrap();
        let operator = isolane_crds::Bundle::new(
            "ns/w".into(),
            "export default {}".into(),
            std::collections::BTreeMap::from([("A".to_owned(), "1".to_owned())]),
            worker.spec.limits.clone(),
            Vec::new(),
        )
        .with_allowed_hosts(vec!["api.example.com".into()]);
        let (routes, _) =
            worker_routes(Path::new("w.yaml"), worker, &Sources::collect(&[])).unwrap();
        assert_eq!(routes[0].bundle.revision, operator.revision);
    }

    #[test]
    fn routes_match_as_the_router_matches_them() {
        let routes = Routes {
            single: None,
            routes: index(vec![
                route("api.example.com", "/", "root"),
                route("api.example.com", "/v2", "v2"),
                route("*.example.com", "/v2/users", "wild"),
                route("api.example.com", "/v2", "late"),
            ]),
            schedules: Vec::new(),
        };
        let id = |host, path| routes.resolve(host, path).map(|b| b.id.clone());
        assert_eq!(id("api.example.com", "/x").as_deref(), Some("root"));
        assert_eq!(id("API.example.com:8787", "/v2/x").as_deref(), Some("v2"));
        // The exact host's routes answer before the wildcard's (this test
        // pinned the opposite before `isolane dev` shared the router's rules).
        assert_eq!(id("api.example.com", "/v2/users/1").as_deref(), Some("v2"));
        // Whole path segments: `/v2` does not match `/v2x`.
        assert_eq!(id("api.example.com", "/v2x").as_deref(), Some("root"));
        assert_eq!(
            id("other.example.com", "/v2/users").as_deref(),
            Some("wild")
        );
        assert_eq!(id("a.b.example.com", "/v2/users"), None);
        assert_eq!(id("example.org", "/"), None);
    }
}
