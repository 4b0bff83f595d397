//! `isolane deploy`: a wrangler project's environment as a Worker in a
//! cluster, with the user's kubeconfig (server-side apply, field manager
//! `isolane`), or printed as YAML with `--dry-run`.
//!
//! The spec is [`crate::wrangler::spec`]'s, the one `isolane dev` serves.
//! The code goes where the Worker API takes it: a single script into a
//! ConfigMap `<name>-code` (`spec.scriptFrom`); modules, or any code with
//! `--repository`, to an OCI registry as `isolane push` pushes them,
//! named by digest (`spec.bundle`; `--dry-run` computes the digest and
//! pushes nothing). A project's static assets (`assets`) travel in the same
//! artifact, in its assets layer, so they need `--repository`. Secrets (`isolane secret put`) live in the Secret
//! `<name>-secrets`: at apply, each of its keys becomes an `env` binding
//! that references it. A key the platform cannot honour is one line on
//! stderr each, and nothing is deployed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use isolane_crds::{
    ConfigMapKeyRef, EnvValueFrom, EnvVar, PullSecretRef, ScriptFrom, SecretKeyRef, Worker,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use crate::bundle::Code;
use crate::wrangler::{Project, spec};

/// The field manager of everything `isolane deploy` applies.
pub const FIELD_MANAGER: &str = "isolane";

/// The wrangler project to read, and which environment.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The wrangler config (default: wrangler.json, wrangler.jsonc or
    /// wrangler.toml in this folder).
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The environment (`[env.NAME]`), with wrangler's inheritance rules.
    #[arg(short = 'e', long = "env", value_name = "NAME")]
    pub env: Option<String>,
    /// The Kubernetes namespace of the Worker.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
}

impl ProjectArgs {
    /// The project's selected environment.
    pub fn read(&self) -> anyhow::Result<Project> {
        let file = match &self.config {
            Some(file) => file.clone(),
            None => crate::wrangler::find(std::path::Path::new(".")).ok_or_else(|| {
                anyhow::anyhow!(
                    "no {} in this folder (or give --config)",
                    crate::wrangler::CONFIG_FILES.join(", ")
                )
            })?,
        };
        Ok(Project::read(&file, self.env.as_deref())?)
    }
}

#[derive(Debug, Args)]
pub struct DeployArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// Print the Worker (and the ConfigMap of its code) as YAML; apply
    /// nothing, push nothing, read nothing from the cluster.
    #[arg(long)]
    dry_run: bool,
    /// Push the code to this OCI repository (`registry.example/ns/app`)
    /// and name it by digest in `spec.bundle` (needed for more than one
    /// module).
    #[arg(long)]
    repository: Option<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret the cluster pulls the
    /// bundle with (`spec.bundlePullSecrets`).
    #[arg(long)]
    pull_secret: Option<String>,
    #[command(flatten)]
    registry: crate::push::RegistryArgs,
}

/// The name of the Secret holding a Worker's secrets.
pub fn secret_name(worker: &str) -> String {
    format!("{worker}-secrets")
}

/// What `isolane deploy` applies, in order.
#[derive(Debug)]
pub struct Deployment {
    pub config_map: Option<ConfigMap>,
    pub worker: Worker,
}

impl Deployment {
    /// The objects as YAML documents.
    pub fn to_yaml(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        if let Some(config_map) = &self.config_map {
            out.push_str(&serde_yaml::to_string(config_map)?);
            out.push_str("---\n");
        }
        out.push_str(&serde_yaml::to_string(&self.worker)?);
        Ok(out)
    }
}

pub async fn run(args: DeployArgs) -> anyhow::Result<()> {
    let project = args.project.read()?;
    let mut deployment = plan(&project, &args).await?;
    if args.dry_run {
        print!("{}", deployment.to_yaml()?);
        return Ok(());
    }
    let namespace = &args.project.namespace;
    let client = isolane_apiclient::infer()
        .await
        .context("reading the kubeconfig")?;
    let name = deployment.worker.metadata.name.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    if let Some(secret) = secrets.get_opt(&secret_name(&name)).await? {
        // A secret wins over a var of the same name, as in `isolane dev`.
        let refs = secret_refs(&secret);
        let env = &mut deployment.worker.spec.env;
        env.retain(|var| !refs.iter().any(|r| r.name == var.name));
        env.extend(refs);
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if let Some(config_map) = &deployment.config_map {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let map_name = config_map.metadata.name.clone().unwrap_or_default();
        api.patch(&map_name, &params, &Patch::Apply(config_map))
            .await
            .with_context(|| format!("applying ConfigMap {namespace}/{map_name}"))?;
    }
    let api: Api<Worker> = Api::namespaced(client, namespace);
    api.patch(&name, &params, &Patch::Apply(&deployment.worker))
        .await
        .with_context(|| format!("applying Worker {namespace}/{name}"))?;
    eprintln!("applied Worker {namespace}/{name}");
    Ok(())
}

/// The artifact of `modules` and `assets` pushed to `repository`, or
/// only named by its digest in a dry run.
async fn push(
    args: &DeployArgs,
    repository: &str,
    modules: &isolane_worker::Modules,
    assets: Option<&isolane_assets::AssetFiles>,
) -> anyhow::Result<isolane_artifact::BundleRef> {
    let (registry, credentials) = args.registry.registry(repository)?;
    if args.dry_run {
        return Ok(registry.reference(repository, modules, assets)?);
    }
    let pushed = registry
        .push(repository, (modules, assets), credentials.as_ref())
        .await?;
    match assets {
        Some(assets) => eprintln!(
            "pushed {pushed} ({} modules, {} asset files, {} bytes)",
            modules.len(),
            assets.files.len(),
            assets.total_bytes()
        ),
        None => eprintln!("pushed {pushed} ({} modules)", modules.len()),
    }
    Ok(pushed)
}

/// The objects of `project`, the code placed (pushed, unless a dry run).
/// Every key not honoured is printed, one line each, and refused.
pub async fn plan(project: &Project, args: &DeployArgs) -> anyhow::Result<Deployment> {
    let worker = spec::worker(project)?;
    if !worker.problems.is_empty() {
        for problem in &worker.problems {
            eprintln!("{}: {problem}", project.path());
        }
        anyhow::bail!(
            "{}: {} key(s) cannot be deployed (above)",
            project.path(),
            worker.problems.len()
        );
    }
    let namespace = &args.project.namespace;
    let code = worker.code(&project.config)?;
    let main = worker.main_path();
    let has_worker = worker.main.is_some();
    let mut spec = worker.spec;
    let assets = match &project.config.assets {
        Some(config) => Some(crate::assets::read(&project.dir, config, has_worker)?),
        None => None,
    };
    let config_map = match (&args.repository, code) {
        (None, _) if assets.is_some() => anyhow::bail!(
            "{}: assets travel in the bundle artifact: give --repository REGISTRY/REPO (docs/assets.md)",
            project.path()
        ),
        (None, Code::Script(script)) => {
            let map = code_config_map(&worker.name, namespace, &main, script);
            spec.script_from = map.1;
            Some(map.0)
        }
        (None, Code::Modules(modules)) => anyhow::bail!(
            "the code is {} modules: give --repository REGISTRY/REPO to push it as a bundle (docs/bundles.md)",
            modules.len()
        ),
        (Some(repository), code) => {
            let modules = crate::push::as_modules(&main, code)?;
            let pushed = push(args, repository, &modules, assets.as_ref()).await?;
            spec.bundle = Some(pushed.to_string());
            spec.bundle_pull_secrets = args
                .pull_secret
                .iter()
                .map(|name| PullSecretRef { name: name.clone() })
                .collect();
            None
        }
    };
    let mut object = Worker::new(&worker.name, spec);
    object.metadata.namespace = Some(namespace.clone());
    Ok(Deployment {
        config_map,
        worker: object,
    })
}

/// The ConfigMap `<name>-code` holding `script` under the main module's
/// file name, and the `scriptFrom` that names it.
fn code_config_map(
    name: &str,
    namespace: &str,
    main: &std::path::Path,
    script: String,
) -> (ConfigMap, Option<ScriptFrom>) {
    let key = main
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| {
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        })
        .unwrap_or_else(|| "worker.js".to_owned());
    let map_name = format!("{name}-code");
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(map_name.clone()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(key.clone(), script)])),
        ..ConfigMap::default()
    };
    let from = ScriptFrom {
        config_map_key_ref: ConfigMapKeyRef {
            name: map_name,
            key,
        },
    };
    (map, Some(from))
}

/// An `env` binding for each key of the Worker's secrets Secret.
pub fn secret_refs(secret: &Secret) -> Vec<EnvVar> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    secret
        .data
        .iter()
        .flat_map(|data| data.keys())
        .map(|key| EnvVar {
            name: key.clone(),
            value: None,
            value_from: Some(EnvValueFrom {
                secret_key_ref: Some(SecretKeyRef {
                    name: name.clone(),
                    key: key.clone(),
                }),
                config_map_key_ref: None,
            }),
            json: None,
        })
        .collect()
}
