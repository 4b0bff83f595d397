//! A wrangler project's environment as the Worker it stands for: its
//! `spec` without the code (which `isolane deploy` places in a ConfigMap or
//! a pushed bundle, and `isolane dev` reads from disk), the module rules
//! the code is read with, and the keys not honoured. docs/wrangler.md maps
//! each key.

use std::path::PathBuf;

use isolane_crds::WorkerSpec;
use isolane_worker::{Binding, Limits, Route};
use serde_json::{Value, json};

use super::build::{self, Build};
use super::{Config, ConfigError, Problem, Project, RouteConfig};
use crate::rules::{RuleError, Rules};

/// Why a project's values cannot make a Worker.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: {source}")]
    Rules {
        path: String,
        #[source]
        source: RuleError,
    },
    #[error("{path}: {key}: {message}")]
    Value {
        path: String,
        key: String,
        message: String,
    },
}

/// The Worker of one environment of a project.
#[derive(Debug, Clone)]
pub struct ProjectWorker {
    /// `metadata.name`.
    pub name: String,
    /// The spec, without code.
    pub spec: WorkerSpec,
    /// The main module; none for an assets-only project (`assets` and no
    /// `main`, as wrangler allows), whose code is one fixed module
    /// ([`ProjectWorker::code`]).
    pub main: Option<PathBuf>,
    /// `[[rules]]` before wrangler's defaults.
    pub rules: Rules,
    /// The build by the project's own wrangler (`build.rs`), when it has
    /// one installed and `no_bundle` is not set: `main` is then built, and
    /// the Worker's code is the build's output.
    pub build: Option<Build>,
    /// The project's keys not honoured, then the values within mapped keys.
    pub problems: Vec<Problem>,
}

/// The Worker `project` stands for.
pub fn worker(project: &Project) -> Result<ProjectWorker, SpecError> {
    let config = &project.config;
    let path = project.path();
    let value_error = |key: String, message: String| SpecError::Value {
        path: path.clone(),
        key,
        message,
    };
    let mut problems = project.problems.clone();
    let mut spec = json!({});
    spec["env"] = vars(&config.vars).map_err(|(key, m)| value_error(key, m))?;
    spec["bindings"] = json!(bindings(project, &mut problems).map_err(|(k, m)| value_error(k, m))?);
    migrations(project, &mut problems);
    spec["queueConsumers"] = json!(super::queues::consumers(config, &mut problems));
    spec["routes"] = json!(routes(config).map_err(|(key, m)| value_error(key, m))?);
    if !config.triggers.crons.is_empty() {
        spec["triggers"] = json!({ "crons": config.triggers.crons });
    }
    if let Some(cpu_ms) = config.limits.cpu_ms {
        let limits = Limits {
            cpu_ms,
            ..Limits::default()
        };
        limits
            .validate()
            .map_err(|e| value_error("limits.cpu_ms".into(), e.to_string()))?;
        spec["limits"] = json!({ "cpuMs": cpu_ms });
    }
    if let Some(date) = &config.compatibility_date {
        spec["compatibilityDate"] = json!(date);
    }
    if !config.compatibility_flags.is_empty() {
        spec["compatibilityFlags"] = json!(config.compatibility_flags);
    }
    let spec: WorkerSpec = serde_json::from_value(spec)
        .map_err(|e| value_error("(the Worker)".into(), e.to_string()))?;
    let rules = Rules::new(&config.rules).map_err(|source| SpecError::Rules {
        path: path.clone(),
        source,
    })?;
    let main = match project.main() {
        Ok(main) => Some(main),
        Err(ConfigError::NoMain { .. }) if config.assets.is_some() => None,
        Err(error) => return Err(error.into()),
    };
    let build = build_of(project, main.as_deref(), &mut problems)
        .map_err(|m| value_error("main".into(), m))?;
    Ok(ProjectWorker {
        name: worker_name(project)?,
        spec,
        main,
        rules,
        build,
        problems,
    })
}

/// The Worker's routes: wrangler's `route`, then its `routes`; an error
/// names the key of the route it is about.
fn routes(config: &Config) -> Result<Vec<Value>, (String, String)> {
    let mut routes = Vec::new();
    for (i, route) in config.route.iter().chain(&config.routes).enumerate() {
        let key = if config.route.is_some() && i == 0 {
            "route".to_owned()
        } else {
            format!("routes[{}]", i - usize::from(config.route.is_some()))
        };
        routes.push(json!(route_of(route).map_err(|m| (key, m))?));
    }
    Ok(routes)
}

/// The build of `main` by the project's own wrangler, if it has one and
/// `no_bundle` is not set: wrangler then honours the build keys, which
/// are no longer problems. Without one, a `main` that needs a build is
/// refused.
fn build_of(
    project: &Project,
    main: Option<&std::path::Path>,
    problems: &mut Vec<Problem>,
) -> Result<Option<Build>, String> {
    let Some(main) = main else {
        return Ok(None);
    };
    let build = match project.config.no_bundle {
        true => None,
        false => build::find(&project.dir)
            .and_then(|builder| builder.plan(&project.file, project.env.as_deref(), main)),
    };
    match &build {
        Some(_) => problems.retain(|problem| !problem.is_build_key()),
        None => unbuilt(main)?,
    }
    Ok(build)
}

/// Refuses a `main` that needs a build step (TypeScript, JSX) when the
/// project has no wrangler to build it (or `no_bundle` is set), saying how
/// to get one.
fn unbuilt(main: &std::path::Path) -> Result<(), String> {
    match main.extension().and_then(|e| e.to_str()) {
        Some(ext) if ["ts", "mts", "cts", "tsx", "jsx"].contains(&ext) => Err(format!(
            "{} needs a build (.{ext}): isolane builds with the project's own wrangler, and none is installed here (`npm install --save-dev wrangler`), or no_bundle is set; or build first (`wrangler deploy --dry-run --outdir dist`) and set main = \"dist/index.js\"",
            main.display()
        )),
        _ => Ok(()),
    }
}

/// The Worker's name, checked to be a Kubernetes object name.
fn worker_name(project: &Project) -> Result<String, SpecError> {
    let name = project.name()?;
    if !isolane_worker::is_worker_name(&name) || name.len() > 63 {
        return Err(SpecError::Value {
            path: project.path(),
            key: "name".into(),
            message: format!(
                "{name:?} is not a Worker name (lower-case letters, digits and -, at most 63)"
            ),
        });
    }
    Ok(name)
}

/// `vars`: a string is a `value`, anything else a `json` binding.
fn vars(vars: &std::collections::BTreeMap<String, Value>) -> Result<Value, (String, String)> {
    let mut env = Vec::new();
    for (name, value) in vars {
        if !isolane_worker::is_identifier(name) {
            return Err((
                format!("vars.{name}"),
                "not a binding name (letters, digits and _, not starting with a digit)".into(),
            ));
        }
        env.push(match value {
            Value::String(text) => json!({ "name": name, "value": text }),
            other => json!({ "name": name, "json": other }),
        });
    }
    Ok(Value::Array(env))
}

/// `kv_namespaces` (the namespace named by `id`, else by the binding),
/// `durable_objects.bindings` (`script_name`: the Worker of the same
/// namespace that hosts the class), `services` (a Worker of the same
/// namespace, its `entrypoint` and `props`), `dispatch_namespaces` (a
/// Kubernetes namespace whose Workers are called by name; `outbound`'s
/// `service` a Worker of this namespace, its `parameters` the params),
/// `queues.producers`, `images` and `worker_loaders`.
fn bindings(
    project: &Project,
    problems: &mut Vec<Problem>,
) -> Result<Vec<Binding>, (String, String)> {
    let config = &project.config;
    let mut bindings = Vec::new();
    for (i, kv) in config.kv_namespaces.iter().enumerate() {
        let namespace = kv.id.as_deref().unwrap_or(&kv.binding);
        if !isolane_worker::is_kv_namespace(namespace) {
            return Err((
                format!("kv_namespaces[{i}].id"),
                format!(
                    "{namespace:?} is not a KV namespace name (1 to 63 letters, digits, -, _, .)"
                ),
            ));
        }
        bindings.push(Binding::kv(&kv.binding, namespace));
    }
    object_bindings(config, problems, &mut bindings);
    for (i, service) in config.services.iter().enumerate() {
        if service.environment.is_some() {
            problems.push(Problem {
                key: format!("services[{i}].environment"),
                reason: "a binding calls the Worker of that name, in this namespace".into(),
            });
        }
        let mut binding = Binding::service(
            &service.binding,
            &service.service,
            service.entrypoint.as_deref(),
        );
        if let Some(target) = &mut binding.service {
            target.props.clone_from(&service.props);
        }
        bindings.push(binding);
    }
    dispatch_bindings(config, problems, &mut bindings);
    super::queues::producers(config, problems, &mut bindings);
    super::d1::bindings(config, problems, &mut bindings);
    super::r2::bindings(config, problems, &mut bindings);
    super::workflows::bindings(config, problems, &mut bindings);
    bindings.extend(config.images.iter().map(|i| Binding::images(&i.binding)));
    let loaders = config.worker_loaders.iter();
    bindings.extend(loaders.map(|l| Binding::worker_loader(&l.binding)));
    let env = config.vars.keys().map(String::as_str);
    isolane_worker::check_bindings(env, &bindings)
        .map_err(|e| ("bindings".to_owned(), e.to_string()))?;
    Ok(bindings)
}

/// `dispatch_namespaces`: a Kubernetes namespace whose Workers are called
/// by name; `outbound`'s `service` a Worker of this namespace, its
/// `parameters` the params (docs/dispatch.md).
fn dispatch_bindings(config: &Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, dispatch) in config.dispatch_namespaces.iter().enumerate() {
        let mut binding = Binding::dispatch_namespace(&dispatch.binding, &dispatch.namespace);
        if let (Some(target), Some(outbound)) =
            (&mut binding.dispatch_namespace, &dispatch.outbound)
        {
            if outbound.environment.is_some() {
                problems.push(Problem {
                    key: format!("dispatch_namespaces[{i}].outbound.environment"),
                    reason: "the outbound Worker is the Worker of that name, in this namespace"
                        .into(),
                });
            }
            target.outbound = Some(isolane_worker::dispatch::OutboundWorker {
                worker: outbound.service.clone(),
                params: outbound.parameters.clone(),
            });
        }
        bindings.push(binding);
    }
}

/// `durable_objects.bindings`: a class of this Worker (SQLite-backed when
/// a migration declares it in `new_sqlite_classes`), or one another Worker
/// hosts (`script_name`, taken as that Worker binds it).
fn object_bindings(config: &Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, object) in config.durable_objects.bindings.iter().enumerate() {
        if object.environment.is_some() {
            problems.push(Problem {
                key: format!("durable_objects.bindings[{i}].environment"),
                reason: "a binding names the hosting Worker by its name (script_name)".into(),
            });
        }
        let sqlite = config
            .migrations
            .iter()
            .any(|m| m.new_sqlite_classes.contains(&object.class_name));
        bindings.push(match &object.script_name {
            Some(worker) => {
                Binding::hosted_durable_object(&object.name, &object.class_name, worker)
            }
            None if sqlite => Binding::sqlite_durable_object(&object.name, &object.class_name),
            None => Binding::durable_object(&object.name, &object.class_name),
        });
    }
}

/// `migrations`: classes declared new are served as they are (a class's
/// storage is made on first use; `new_sqlite_classes` makes its binding
/// `sqlite`, in `bindings`); the other steps are problems.
fn migrations(project: &Project, problems: &mut Vec<Problem>) {
    for (i, migration) in project.config.migrations.iter().enumerate() {
        let mut refuse = |field: &str, reason: &str| {
            problems.push(Problem {
                key: format!("migrations[{i}].{field}"),
                reason: reason.to_owned(),
            });
        };
        if !migration.renamed_classes.is_empty() {
            refuse("renamed_classes", "a class's objects cannot be renamed yet");
        }
        if !migration.deleted_classes.is_empty() {
            refuse(
                "deleted_classes",
                "a class's objects cannot be deleted by a migration yet",
            );
        }
        if !migration.transferred_classes.is_empty() {
            refuse(
                "transferred_classes",
                "objects cannot move between Workers yet",
            );
        }
    }
}

/// A route pattern as a host and a whole-segment path prefix:
/// `example.com/*`, `*.example.com/api/*`, or a custom domain's host.
fn route_of(route: &RouteConfig) -> Result<Route, String> {
    let pattern = route.pattern();
    let custom = matches!(
        route,
        RouteConfig::Table {
            custom_domain: true,
            ..
        }
    );
    let (host, path) = match pattern.split_once('/') {
        Some((host, path)) => (host, format!("/{path}")),
        None => (pattern, "/".to_owned()),
    };
    if custom && path != "/" {
        return Err(format!("{pattern:?}: a custom domain has no path"));
    }
    let prefix = path.strip_suffix('*').unwrap_or(&path);
    let prefix = match prefix.strip_suffix('/') {
        Some("") | None => prefix,
        Some(trimmed) => trimmed,
    };
    let wildcard_host = host.strip_prefix("*.").unwrap_or(host);
    if host.is_empty() || wildcard_host.contains('*') || prefix.contains('*') {
        return Err(format!(
            "{pattern:?}: Isolane routes a host (or *.domain) and a path prefix ending at a segment, as example.com/api/*"
        ));
    }
    if prefix.len() > 1 && !path.ends_with("/*") && path.ends_with('*') {
        return Err(format!(
            "{pattern:?}: a prefix matches whole path segments here: write {host}{prefix}/*"
        ));
    }
    Ok(Route::new(
        host.to_ascii_lowercase(),
        if prefix.is_empty() { "/" } else { prefix },
    ))
}
