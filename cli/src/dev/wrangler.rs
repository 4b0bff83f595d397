//! `isolane dev` in a wrangler project: the Worker `isolane deploy` would
//! write for the selected environment ([`crate::wrangler::spec`]), served
//! on every host and path as `dev/<name>` (as `wrangler dev` serves one
//! Worker whatever its routes), with its code read from disk by the
//! project's module rules and `.dev.vars` as secrets. Keys the platform
//! does not honour are warned about, one line each, and left out.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use isolane_worker::cron::Schedule;
use isolane_worker::{ANY_HOST, Bundle, Route, Triggers, WorkerKey};

use super::dev_worker::{Compatibility, DevWorker};
use crate::bundle::Code;
use crate::wrangler::{Project, spec};
use isolane_assets::Site;

/// The project's text and JSON vars, `.dev.vars` (secrets) over vars of
/// the same name; a JSON var past the webhook's bound is refused, so that
/// dev serves no Worker the cluster would refuse.
fn vars(
    project: &Project,
    spec: &isolane_crds::WorkerSpec,
) -> anyhow::Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    for var in &spec.env {
        var.check_json_size()
            .map_err(|error| anyhow::anyhow!("{}: vars: {error}", project.path()))?;
    }
    let resolved = isolane_crds::resolve(spec, |reference| {
        Err(anyhow::anyhow!("{} is not in the project", reference.name))
    })?;
    let secrets = project.dev_vars()?;
    let mut json = resolved.json;
    json.retain(|name, _| !secrets.contains_key(name));
    let mut env: BTreeMap<String, String> = resolved.env;
    env.extend(secrets);
    Ok((env, json))
}

/// The project's static assets (`assets`), read now.
fn assets(project: &Project, compatibility: &Compatibility) -> anyhow::Result<Option<Arc<Site>>> {
    let Some(config) = &project.config.assets else {
        return Ok(None);
    };
    let settings = (
        compatibility.date.as_deref(),
        compatibility.flags.as_slice(),
    );
    let has_worker = project.config.main.is_some();
    crate::assets::site(&project.dir, config, has_worker, settings)
        .map(Some)
        .with_context(|| format!("{}: assets", project.path()))
}

/// The Worker of `file`'s environment `env`.
pub fn worker(file: &Path, env: Option<&str>) -> anyhow::Result<DevWorker> {
    let project = Project::read(file, env)?;
    let worker = spec::worker(&project)?;
    for problem in &worker.problems {
        tracing::warn!(
            config = %project.path(),
            key = %problem.key,
            reason = %problem.reason,
            "wrangler key not supported; left out"
        );
    }
    let code = worker.code(&project.config)?;
    let spec = worker.spec;
    let (env, json) = vars(&project, &spec)?;
    let names = env.keys().chain(json.keys()).map(String::as_str);
    isolane_worker::check_bindings(names, &spec.bindings)
        .with_context(|| format!("{}: bindings", project.path()))?;
    isolane_worker::queue::check_consumers(&spec.queue_consumers)
        .with_context(|| format!("{}: queues.consumers", project.path()))?;
    let compatibility = Compatibility {
        date: spec.compatibility_date.clone(),
        flags: spec.compatibility_flags.clone(),
    };
    compatibility
        .check()
        .with_context(|| format!("{}: compatibility settings", project.path()))?;
    let crons = spec.triggers.map(|t| t.crons).unwrap_or_default();
    for expr in &crons {
        Schedule::parse(expr, None)
            .with_context(|| format!("{}: triggers.crons", project.path()))?;
    }
    let key = WorkerKey::new("dev", &worker.name);
    let (script, modules) = match code {
        Code::Script(script) => (script, None),
        Code::Modules(modules) => (String::new(), Some(modules)),
    };
    let mut bundle = Bundle::new(key.to_string(), script, env, spec.limits, Vec::new());
    if let Some(modules) = modules {
        bundle = bundle.with_modules(modules);
    }
    let assets = assets(&project, &compatibility)?;
    let digest = assets.as_ref().map(|site| site.digest().to_owned());
    Ok(DevWorker {
        assets,
        bundle: bundle
            .with_compatibility(compatibility.date, compatibility.flags)
            .with_bindings(spec.bindings)
            .with_queue_consumers(spec.queue_consumers)
            .with_json_env(json)
            .with_assets_digest(digest),
        key,
        routes: vec![Route::new(ANY_HOST, "/")],
        triggers: (!crons.is_empty()).then_some(Triggers {
            crons,
            time_zone: None,
        }),
    })
}
