//! `--remote`: the cluster of your kubeconfig. By default through the
//! Kubernetes API server, with whatever credential the kubeconfig holds
//! (kube-rs's client: exec plugins, client certificates, tokens): `POST
//! /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/d1databases/{database}/migrations`
//! with the folder's files applies them, a `GET` of the same path names
//! those applied (the list is the folder's other files). The apiserver
//! proxies to the router's aggregated API. With `--endpoint`, the files go
//! with your kubeconfig user's bearer token to the router's tail endpoint
//! (`POST /v1/d1/{namespace}/{database}/migrations`, `?list`). Either way
//! the router checks your rights with Kubernetes (`create` on
//! `d1databases/migrations` in the namespace; `get` to list) and has the
//! database's owner node apply them (`isolane_router::tail::d1_migrations`).

use anyhow::Context as _;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt as _;
use isolane_worker::Inert;
use serde::Deserialize;

use super::files::{Failed, Folder};
use crate::cluster::{self, Body, GROUP, Need, VERSION};
use crate::deploy::ProjectArgs;

/// Which cluster, and how to reach its router.
#[derive(Debug)]
pub struct Remote {
    /// The router's own tail endpoint; `None`: through the API server.
    pub endpoint: Option<String>,
    pub context: Option<String>,
}

/// The router's answer.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Answer {
    /// The files applied (or, listed on the tail endpoint, pending).
    files: Vec<String>,
    /// Listed through the API server: the names in the table.
    applied: Vec<String>,
    failed_file: Option<String>,
    error: Option<String>,
}

/// What `list` and `apply` need, as a refusal says it.
const NEED: Need = Need {
    what: "D1 migrations",
    permission: "create (to apply) and get (to list) on d1databases/migrations",
    role: "isolane-d1-migrate",
};

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
    let answer = send(remote, project, folder, true).await?;
    if remote.endpoint.is_some() {
        return Ok(answer.files);
    }
    let names = folder.names()?;
    Ok(names
        .into_iter()
        .filter(|name| !answer.applied.contains(name))
        .collect())
}

/// Sends the folder's files (`list`: asks what is applied).
async fn send(
    remote: &Remote,
    project: &ProjectArgs,
    folder: &Folder,
    list: bool,
) -> anyhow::Result<Answer> {
    let config = cluster::kubeconfig(remote.context.as_deref()).await?;
    let body = || -> anyhow::Result<Bytes> {
        let files: Vec<serde_json::Value> = folder
            .files()?
            .into_iter()
            .map(|f| serde_json::json!({ "name": f.name, "sql": f.sql }))
            .collect();
        let body = serde_json::json!({ "table": folder.table, "files": files });
        Ok(Bytes::from(body.to_string()))
    };
    let (status, bytes) = match &remote.endpoint {
        None => through_api(config, project, folder, list, body).await?,
        Some(endpoint) => to_endpoint(endpoint, &config, project, folder, list, body()?).await?,
    };
    serde_json::from_slice(&bytes)
        .with_context(|| format!("the router's answer ({status}) is not the migrations' JSON"))
}

/// `send` through the Kubernetes API server: the status and body of a
/// success.
async fn through_api(
    config: kube::Config,
    project: &ProjectArgs,
    folder: &Folder,
    list: bool,
    body: impl FnOnce() -> anyhow::Result<Bytes>,
) -> anyhow::Result<(StatusCode, Bytes)> {
    let namespace = &project.namespace;
    let client = kube::Client::try_from(config)
        .context("configuring the Kubernetes client from your kubeconfig")?;
    let path = format!(
        "/apis/{GROUP}/{VERSION}/namespaces/{namespace}/d1databases/{}/migrations",
        folder.name
    );
    let request = if list {
        http::Request::get(format!("{path}?table={}", folder.table))
            .body(kube::client::Body::empty())
    } else {
        http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(kube::client::Body::from(body()?.to_vec()))
    };
    let response = client
        .send(request.context("building the request")?)
        .await
        .context("the Kubernetes API server did not answer")?;
    let (status, body) = (response.status(), response.into_body());
    let refused = |message: &str| cluster::api_refusal(NEED, status, namespace, message);
    Ok((status, success(status, body, refused).await?))
}

/// `send` to the router's own tail endpoint with the kubeconfig user's
/// token: the status and body of a success.
async fn to_endpoint(
    endpoint: &str,
    config: &kube::Config,
    project: &ProjectArgs,
    folder: &Folder,
    list: bool,
    body: Bytes,
) -> anyhow::Result<(StatusCode, Bytes)> {
    let command = if list {
        "isolane d1 migrations list --remote"
    } else {
        "isolane d1 migrations apply --remote"
    };
    let token = cluster::bearer_token(&config.auth_info, command)?;
    let query = if list { "?list" } else { "" };
    let uri: http::Uri = format!(
        "{}/v1/d1/{}/{}/migrations{query}",
        endpoint.trim_end_matches('/'),
        project.namespace,
        folder.name
    )
    .parse()
    .context("the endpoint is not a URL")?;
    let response = cluster::send(http::Method::POST, uri, &token, body).await?;
    let (status, body) = (response.status(), response.into_body());
    let refused = |message: &str| format!("D1 migrations refused ({status}): {}", Inert(message));
    Ok((status, success(status, body, refused).await?))
}

/// The body of a successful answer; else why it was refused, as
/// `refused` says it from the answer's message.
async fn success<B: Body>(
    status: StatusCode,
    body: B,
    refused: impl FnOnce(&str) -> String,
) -> anyhow::Result<Bytes> {
    if !status.is_success() {
        anyhow::bail!(refused(&cluster::refusal_message(body).await));
    }
    let body = body
        .collect()
        .await
        .context("reading the router's answer")?;
    Ok(body.to_bytes())
}
