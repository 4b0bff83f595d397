//! `isolane push PATH --repository REGISTRY/REPO[:TAG]`: a Worker's code as
//! an OCI artifact (docs/bundles.md), pushed, then the Worker that names it
//! by digest printed as YAML (or applied with `--apply`).
//!
//! PATH is read as `isolane dev` reads it ([`crate::bundle::load`]): a
//! main module and its import graph, or wrangler's `--outdir` folder as it
//! is. The digest goes to stderr as `pushed <reference>`; the YAML to
//! stdout, so `isolane push … | kubectl apply -f -` works too.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use isolane_artifact::{
    AllowedRegistries, ArtifactLimits, BundleRef, Credentials, Registry, RegistryCa,
};
use isolane_crds::Worker;
use isolane_worker::{Module, ModuleKind, Modules};
use kube::api::{Api, Patch, PatchParams};

use crate::bundle::{self, Code};

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The main module (its imports are followed) or wrangler's output folder.
    path: PathBuf,
    /// Where to push: `registry.example/ns/app`, optionally with `:tag`.
    #[arg(long)]
    repository: String,
    /// The Worker's name in the printed YAML (default: the repository's last part).
    #[arg(long)]
    name: Option<String>,
    /// The Worker's namespace in the printed YAML.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// A route host for the printed Worker (repeatable).
    #[arg(long = "route")]
    routes: Vec<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the namespace the
    /// cluster pulls with (`spec.bundlePullSecrets`).
    #[arg(long)]
    pull_secret: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
    /// Apply the Worker with your kubeconfig (server-side apply) rather
    /// than print it.
    #[arg(long)]
    apply: bool,
}

/// How to reach the registry code is pushed to.
#[derive(Debug, Args)]
pub struct RegistryArgs {
    /// The registry user to push as.
    #[arg(long, env = "ISOLANE_REGISTRY_USERNAME")]
    username: Option<String>,
    /// The registry password to push with.
    #[arg(long, env = "ISOLANE_REGISTRY_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Speak plain HTTP to the registry (a registry on loopback).
    #[arg(long)]
    plain_http: bool,
    /// A PEM bundle of CA certificates trusted for the registry's HTTPS
    /// certificate besides the public web PKI roots (a registry whose
    /// certificate a private CA signs; the cluster's `--bundle-registry-ca`).
    #[arg(long)]
    registry_ca: Option<PathBuf>,
}

impl RegistryArgs {
    /// A client for `repository`'s registry, and the credentials to push with.
    pub fn registry(&self, repository: &str) -> anyhow::Result<(Registry, Option<Credentials>)> {
        let host = repository.split('/').next().unwrap_or_default().to_owned();
        let plain_http = if self.plain_http {
            vec![host]
        } else {
            Vec::new()
        };
        // The user's own machine: any registry they name.
        let mut registry = Registry::new(
            plain_http,
            AllowedRegistries::Any,
            ArtifactLimits::default(),
        )?;
        if let Some(path) = &self.registry_ca {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading --registry-ca {}", path.display()))?;
            registry = registry.trusting(RegistryCa::from_pem(&pem)?)?;
        }
        let credentials = match (&self.username, &self.password) {
            (Some(username), Some(password)) => Some(Credentials {
                username: username.clone(),
                password: password.clone(),
            }),
            _ => None,
        };
        Ok((registry, credentials))
    }
}

/// Pushes, then prints or applies the Worker.
pub async fn run(args: PushArgs) -> anyhow::Result<()> {
    let modules = modules(&args.path)?;
    let (registry, credentials) = args.registry.registry(&args.repository)?;
    let pushed = registry
        .push(&args.repository, (&modules, None), credentials.as_ref())
        .await?;
    eprintln!("pushed {pushed} ({} modules)", modules.len());
    let name = args.name.unwrap_or_else(|| default_name(&pushed));
    let worker = worker(
        &name,
        &args.namespace,
        &pushed,
        args.pull_secret.as_deref(),
        &args.routes,
    )?;
    if args.apply {
        let client = isolane_apiclient::infer()
            .await
            .context("reading the kubeconfig")?;
        let api: Api<Worker> = Api::namespaced(client, &args.namespace);
        api.patch(
            &name,
            &PatchParams::apply("isolane-push"),
            &Patch::Apply(&worker),
        )
        .await
        .with_context(|| format!("applying Worker {}/{name}", args.namespace))?;
        eprintln!("applied Worker {}/{name}", args.namespace);
    } else {
        print!("{}", serde_yaml::to_string(&worker)?);
    }
    Ok(())
}

/// The modules at `path`; a single script is one ES module.
fn modules(path: &std::path::Path) -> anyhow::Result<Modules> {
    as_modules(path, bundle::load(path, &crate::rules::Rules::default())?)
}

/// `code` as modules; a single script (read from `path`) is one ES module.
pub fn as_modules(path: &std::path::Path, code: Code) -> anyhow::Result<Modules> {
    Ok(match code {
        Code::Modules(modules) => modules,
        Code::Script(script) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "main.js".to_owned());
            Modules::new(
                name.clone(),
                vec![Module::new(name, ModuleKind::ESModule, script)],
            )?
        }
    })
}

/// The repository's last part, as a Worker name.
fn default_name(pushed: &BundleRef) -> String {
    let last = pushed.repository().rsplit('/').next().unwrap_or("worker");
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name.trim_matches('-').to_owned()
}

/// The Worker that runs `pushed`.
fn worker(
    name: &str,
    namespace: &str,
    pushed: &BundleRef,
    pull_secret: Option<&str>,
    routes: &[String],
) -> anyhow::Result<serde_json::Value> {
    let mut spec = serde_json::json!({ "bundle": pushed.to_string() });
    if let Some(secret) = pull_secret {
        spec["bundlePullSecrets"] = serde_json::json!([{ "name": secret }]);
    }
    if !routes.is_empty() {
        spec["routes"] = routes
            .iter()
            .map(|host| serde_json::json!({ "host": host, "pathPrefix": "/" }))
            .collect();
    }
    Ok(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": { "name": name, "namespace": namespace },
        "spec": spec,
    }))
}
