//! `isolane secret put NAME`: a secret of a wrangler project's Worker, read
//! from stdin (one trailing newline dropped), kept under key NAME in the
//! Secret `<worker>-secrets` of the Worker's namespace (server-side apply,
//! field manager `isolane`). If the Worker exists, it gets an `env` binding
//! that references the key (field manager `isolane-secret`, so `isolane
//! deploy` leaves it); otherwise `isolane deploy` adds one for each key.

use std::collections::BTreeMap;
use std::io::Read as _;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use isolane_crds::Worker;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use crate::deploy::{FIELD_MANAGER, ProjectArgs, secret_name, secret_refs};

/// The field manager of the `env` bindings `isolane secret put` adds.
const SECRET_FIELD_MANAGER: &str = "isolane-secret";

#[derive(Debug, Args)]
pub struct SecretArgs {
    #[command(subcommand)]
    command: SecretCommand,
}

#[derive(Debug, Subcommand)]
enum SecretCommand {
    /// Create or update a secret; its value is read from stdin.
    Put {
        /// The secret's name, as the Worker sees it (`env.NAME`).
        name: String,
        #[command(flatten)]
        project: ProjectArgs,
        /// The Worker (default: the wrangler project's `name`).
        #[arg(long = "name", value_name = "WORKER")]
        worker: Option<String>,
    },
}

pub async fn run(args: SecretArgs) -> anyhow::Result<()> {
    let SecretCommand::Put {
        name,
        project,
        worker,
    } = args.command;
    if !isolane_worker::is_identifier(&name) {
        anyhow::bail!(
            "{name:?} is not a binding name (letters, digits and _, not starting with a digit)"
        );
    }
    let worker = match worker {
        Some(worker) => worker,
        None => crate::wrangler::spec::worker(&project.read()?)?.name,
    };
    let mut value = String::new();
    std::io::stdin()
        .read_to_string(&mut value)
        .context("reading the secret from stdin")?;
    let value = value.strip_suffix('\n').unwrap_or(&value);
    let value = value.strip_suffix('\r').unwrap_or(value);
    let namespace = &project.namespace;
    let client = isolane_apiclient::infer()
        .await
        .context("reading the kubeconfig")?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret_name = secret_name(&worker);
    let mut data = secrets
        .get_opt(&secret_name)
        .await?
        .and_then(|secret| secret.data)
        .unwrap_or_default();
    data.insert(name.clone(), ByteString(value.as_bytes().to_vec()));
    let secret = secret_object(&secret_name, namespace, data);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    secrets
        .patch(&secret_name, &params, &Patch::Apply(&secret))
        .await
        .with_context(|| format!("applying Secret {namespace}/{secret_name}"))?;
    eprintln!("secret {name} put in Secret {namespace}/{secret_name}");
    bind(client, namespace, &worker, &secret_name, &name).await
}

/// Binds secret `name` of Secret `secret_name` in Worker `worker`, when the
/// Worker exists (under a field manager of its own, so later deploys keep
/// it); a Worker not yet deployed gets it at its deploy.
async fn bind(
    client: kube::Client,
    namespace: &str,
    worker: &str,
    secret_name: &str,
    name: &str,
) -> anyhow::Result<()> {
    let workers: Api<Worker> = Api::namespaced(client, namespace);
    if workers.get_opt(worker).await?.is_none() {
        return Ok(());
    }
    let only = secret_object(
        secret_name,
        namespace,
        BTreeMap::from([(name.to_owned(), ByteString(Vec::new()))]),
    );
    let patch = serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": { "name": worker, "namespace": namespace },
        "spec": { "env": secret_refs(&only) },
    });
    workers
        .patch(
            worker,
            &PatchParams::apply(SECRET_FIELD_MANAGER),
            &Patch::Apply(&patch),
        )
        .await
        .with_context(|| format!("binding the secret in Worker {namespace}/{worker}"))?;
    eprintln!("Worker {namespace}/{worker} reads it as env.{name}");
    Ok(())
}

fn secret_object(name: &str, namespace: &str, data: BTreeMap<String, ByteString>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}
