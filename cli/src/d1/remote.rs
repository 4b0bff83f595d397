//! `--remote`: the cluster of your kubeconfig. The migrations folder's
//! files go, with your kubeconfig user's bearer token, to the router's
//! tail endpoint (`POST /v1/d1/{namespace}/{database}/migrations`), which
//! checks the token and your rights with Kubernetes (`create` on
//! `d1databases/migrations` in the namespace; `get` to list) and has the
//! database's owner node apply them (`isolane_router::d1_migrations`).

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use isolane_worker::Inert;
use serde::Deserialize;

use super::files::{Failed, Folder};
use crate::deploy::ProjectArgs;

/// Where the router is and whose token to send.
#[derive(Debug)]
pub struct Remote {
    pub endpoint: String,
    pub context: Option<String>,
}

/// The router's answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    files: Vec<String>,
    failed_file: Option<String>,
    error: Option<String>,
}

/// Applies `folder`'s files not applied yet on the cluster; the files
/// applied.
pub async fn apply(
    remote: &Remote,
    project: &ProjectArgs,
    folder: &Folder,
) -> Result<Vec<String>, Failed> {
    let answer = send(remote, project, folder, false).await?;
    match (answer.failed_file, answer.error) {
        (Some(file), error) => Err(Failed {
            applied: answer.files,
            error: anyhow::anyhow!(
                "{} failed; it and the files after it were not applied: {}",
                Inert(&file),
                Inert(error.as_deref().unwrap_or_default())
            ),
        }),
        (None, _) => Ok(answer.files),
    }
}

/// The files of `folder` not applied yet on the cluster.
pub async fn pending(
    remote: &Remote,
    project: &ProjectArgs,
    folder: &Folder,
) -> anyhow::Result<Vec<String>> {
    Ok(send(remote, project, folder, true).await?.files)
}

/// Sends the folder's files (`list`: to be listed only).
async fn send(
    remote: &Remote,
    project: &ProjectArgs,
    folder: &Folder,
    list: bool,
) -> anyhow::Result<Answer> {
    let options = kube::config::KubeConfigOptions {
        context: remote.context.clone(),
        ..Default::default()
    };
    let config = kube::Config::from_kubeconfig(&options)
        .await
        .context("reading your kubeconfig")?;
    let token = crate::tail::bearer_token(&config.auth_info)?;
    let files: Vec<serde_json::Value> = folder
        .files()?
        .into_iter()
        .map(|f| serde_json::json!({ "name": f.name, "sql": f.sql }))
        .collect();
    let body = serde_json::json!({ "table": folder.table, "files": files });
    let query = if list { "?list" } else { "" };
    let uri: http::Uri = format!(
        "{}/v1/d1/{}/{}/migrations{query}",
        remote.endpoint.trim_end_matches('/'),
        project.namespace,
        folder.name
    )
    .parse()
    .context("the endpoint is not a URL")?;
    let response = crate::tail::send(
        http::Method::POST,
        uri,
        &token,
        Bytes::from(body.to_string()),
    )
    .await?;
    let status = response.status();
    if !status.is_success() {
        let message = crate::tail::refusal_message(response.into_body()).await;
        anyhow::bail!("D1 migrations refused ({status}): {}", Inert(&message));
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .context("reading the router's answer")?
        .to_bytes();
    serde_json::from_slice(&bytes).context("the router's answer is not the migrations' JSON")
}
