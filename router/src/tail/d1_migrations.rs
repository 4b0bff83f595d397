//! D1 migrations on a cluster (`isolane d1 migrations apply|list
//! --remote`), two ways in, one way on:
//! - through the Kubernetes API server (the default): the aggregated API
//!   ([`super::api`]) serves the subresource `d1databases/migrations` of
//!   group `tail.isolane.dev`:
//!   `POST /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/d1databases/{database}/migrations`
//!   with a JSON body `{table, files: [{name, sql}]}` applies them,
//!   `GET …/migrations?table=<migrations_table>` answers `{applied: [names]}`;
//!   the apiserver authenticated the caller and checked `create` (or
//!   `get`) on it, [`through_api`];
//! - on the tail endpoint's listener (`--tail-addr`, `--endpoint`):
//!   `POST /v1/d1/{namespace}/{database}/migrations` (`?list` to only name
//!   the files not applied yet) with the caller's own Kubernetes bearer
//!   token and the same body, [`handle`].
//!
//! Expected flow: the caller is checked as a tail's is ([`Access`]: on the
//! tail endpoint a TokenReview first; either way a SubjectAccessReview for
//! `create` — or, to list, `get` — on `d1databases/migrations` named by
//! the database, group `isolane.dev`, in the namespace); then the body (at
//! most [`MAX_BODY`]) is read, and the router sends the files to the
//! database's owner node, the first node of its placement key on the ring
//! (the ring the nodes place objects by), over the same mutually
//! authenticated channel as requests (`D1Migrate`). The owner refuses a
//! database it does not own; the router asks again, a few times, as the
//! ring settles. The answer names the files applied (or not yet applied)
//! and the one that failed, with SQLite's words.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{D1MigrateRequest, D1MigrateResponse, D1MigrationFile};
use k8s_openapi::api::authentication::v1::UserInfo;
use serde::{Deserialize, Serialize};
use tracing::{debug, info};

use super::TailBody;
use super::access::{Access, D1_LIST, D1_MIGRATE, Refused};
use super::limit;
use super::review::Reviewer;
use crate::Proxy;
use crate::channels;
use crate::kube_shapes::{json, status};

/// The path prefix of D1 migrations.
pub const PATH: &str = "/v1/d1/";

/// The largest body taken: a migrations folder's files, as JSON.
pub const MAX_BODY: usize = 8 << 20;

/// How many times a migration is sent to the owner the ring names, and
/// how long between two sends (the ring settles within a Lease renewal).
const ATTEMPTS: u32 = 10;
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// The request's body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrateBody {
    pub table: String,
    pub files: Vec<MigrationFile>,
}

/// One file of the folder.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationFile {
    pub name: String,
    pub sql: String,
}

/// The answer: the files applied (or, listing, not yet applied), and the
/// one that failed with why.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateAnswer {
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One request from `peer` to a path under [`PATH`] (the tail endpoint).
pub async fn handle<B, R>(
    request: Request<B>,
    proxy: &Proxy,
    access: &Access<R>,
    peer: SocketAddr,
) -> Response<TailBody>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
    R: Reviewer,
{
    let Some((namespace, database)) = database_of(request.uri().path()) else {
        return json_error(
            StatusCode::NOT_FOUND,
            "not found: POST /v1/d1/{namespace}/{database}/migrations",
        );
    };
    if request.method() != http::Method::POST {
        return json_error(StatusCode::METHOD_NOT_ALLOWED, "D1 migrations are a POST");
    }
    let (namespace, database) = (namespace.to_owned(), database.to_owned());
    let list_only = request.uri().query() == Some("list");
    let (parts, body) = request.into_parts();
    let client = limit::client_address(peer.ip(), &parts.headers, |ip| proxy.trusts(ip));
    let permission = if list_only { &D1_LIST } else { &D1_MIGRATE };
    let authorization = parts.headers.get(http::header::AUTHORIZATION);
    let user = match access
        .authorize_to(permission, client, authorization, &namespace, &database)
        .await
    {
        Ok(user) => user,
        Err(refused) => return refused_answer(&refused, peer, &namespace, &database),
    };
    // The body is read only once the caller may send one.
    let body = match read_body(body).await {
        Ok(body) => body,
        Err((status, message)) => return json_error(status, &message),
    };
    info!(%peer, %namespace, %database, %user, files = body.files.len(), list = list_only, "D1 migrations");
    let request = migrate_request(namespace, database, body, list_only);
    match send(proxy, request).await {
        Ok(done) => json(StatusCode::OK, &answer_of(done)),
        Err((status, message)) => json_error(status, &message),
    }
}

/// One request of the aggregated API for `namespace`'s `database`'s
/// `migrations`, from `user`, whom the Kubernetes API server in front
/// authenticated (and allowed the verb on the subresource of group
/// `tail.isolane.dev`): `POST` applies the body's files, `GET` (with
/// `?table=`, default `d1_migrations`) names those applied. Refusals are
/// Kubernetes `Status`es.
pub async fn through_api<B, R>(
    request: Request<B>,
    user: UserInfo,
    (namespace, database): (String, String),
    proxy: &Proxy,
    access: &Access<R>,
) -> Response<TailBody>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
    R: Reviewer,
{
    let list_only = match *request.method() {
        http::Method::GET => true,
        http::Method::POST => false,
        _ => {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "D1 migrations: POST applies them, GET names those applied",
            );
        }
    };
    let permission = if list_only { &D1_LIST } else { &D1_MIGRATE };
    let user = match access
        .authorize_user(permission, user, &namespace, &database)
        .await
    {
        Ok(user) => user,
        Err(refused) => {
            log_refused(&refused, None, &namespace, &database);
            return status(refused.status(), &refused.to_string());
        }
    };
    let body = if list_only {
        MigrateBody {
            table: table_of(request.uri().query()),
            files: Vec::new(),
        }
    } else {
        match read_body(request.into_body()).await {
            Ok(body) => body,
            Err((code, message)) => return status(code, &message),
        }
    };
    info!(%namespace, %database, %user, files = body.files.len(), list = list_only, "D1 migrations through the Kubernetes API");
    let request = migrate_request(namespace, database, body, list_only);
    match send(proxy, request).await {
        Ok(done) if list_only => json(
            StatusCode::OK,
            &serde_json::json!({ "applied": done.applied }),
        ),
        Ok(done) => json(StatusCode::OK, &answer_of(done)),
        Err((code, message)) => status(code, &message),
    }
}

/// The migrations table a listing names (`?table=<name>`), else wrangler's
/// default; the owner node checks that it is a table name.
fn table_of(query: Option<&str>) -> String {
    query
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("table="))
        .unwrap_or(DEFAULT_TABLE)
        .to_owned()
}

/// wrangler's `migrations_table` when none is named.
pub const DEFAULT_TABLE: &str = "d1_migrations";

/// The call to the owner node.
fn migrate_request(
    namespace: String,
    database: String,
    body: MigrateBody,
    list_only: bool,
) -> D1MigrateRequest {
    D1MigrateRequest {
        namespace,
        database,
        table: body.table,
        files: body
            .files
            .into_iter()
            .map(|f| D1MigrationFile {
                name: f.name,
                sql: f.sql,
            })
            .collect(),
        list_only,
    }
}

/// The node's answer as the client's.
fn answer_of(done: D1MigrateResponse) -> serde_json::Value {
    serde_json::to_value(MigrateAnswer {
        files: done.files,
        failed_file: Some(done.failed_file).filter(|f| !f.is_empty()),
        error: Some(done.error).filter(|e| !e.is_empty()),
    })
    .unwrap_or_default()
}

/// The request's body, at most [`MAX_BODY`] bytes of [`MigrateBody`].
async fn read_body<B>(body: B) -> Result<MigrateBody, (StatusCode, String)>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let Ok(body) = Limited::new(body, MAX_BODY).collect().await else {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the migrations are more than {MAX_BODY} bytes"),
        ));
    };
    serde_json::from_slice(&body.to_bytes()).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
}

/// `namespace` and `database` from `/v1/d1/{namespace}/{database}/migrations`.
fn database_of(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix(PATH)?.strip_suffix("/migrations")?;
    let (namespace, database) = rest.split_once('/')?;
    let valid = isolane_telemetry::is_dns_label(namespace)
        && isolane_worker::d1::is_database_name(database);
    valid.then_some((namespace, database))
}

/// Sends `request` to the database's owner node, again while the ring
/// settles (a node that does not own it, one that cannot be reached, a
/// write fenced by a newer owner).
async fn send(
    proxy: &Proxy,
    request: D1MigrateRequest,
) -> Result<D1MigrateResponse, (StatusCode, String)> {
    let key = isolane_worker::d1::placement_key(&request.namespace, &request.database);
    let mut last = String::from("no live node");
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY_AFTER).await;
        }
        let fleet = proxy.fleet();
        let Some(node) = fleet.first_choice(&key).and_then(|i| fleet.node(i)) else {
            continue;
        };
        let Some(endpoint) = node.member.endpoint_for(0) else {
            last = format!("node {} has no endpoint", node.member.name);
            continue;
        };
        let (channel, origin) =
            match channels::channel(&fleet, node, endpoint, &proxy.config().channel) {
                Ok(channel) => channel,
                Err(e) => {
                    last = format!("node {}: {e}", node.member.name);
                    continue;
                }
            };
        let mut client = RuntimeClient::with_origin(channel, origin);
        match client.d1_migrate(request.clone()).await {
            Ok(response) => return Ok(response.into_inner()),
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                return Err((StatusCode::BAD_REQUEST, status.message().to_owned()));
            }
            Err(status) => {
                debug!(node = %node.member.name, error = %status.message(), "D1 migrations: sent again");
                last = format!("node {}: {}", node.member.name, status.message());
            }
        }
    }
    Err((
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the database's owner node did not take the migrations: {last}"),
    ))
}

/// The answer to a refused caller of the tail endpoint (with
/// `Retry-After` when throttled).
fn refused_answer(
    refused: &Refused,
    peer: SocketAddr,
    namespace: &str,
    database: &str,
) -> Response<TailBody> {
    log_refused(refused, Some(peer), namespace, database);
    let mut response = json_error(refused.status(), &refused.to_string());
    if let Some(seconds) = refused.retry_after() {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    }
    response
}

/// A refusal in the router's log: at `info` when notable.
fn log_refused(refused: &Refused, peer: Option<SocketAddr>, namespace: &str, database: &str) {
    let peer = peer.map(tracing::field::display);
    if refused.is_notable() {
        info!(peer, namespace, database, error = %refused, "D1 migrations refused");
    } else {
        debug!(peer, namespace, database, error = %refused, "D1 migrations refused");
    }
}

/// The tail endpoint's error answer: `{"error": message}`.
fn json_error(code: StatusCode, message: &str) -> Response<TailBody> {
    json(code, &serde_json::json!({ "error": message }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_a_namespace_and_a_database() {
        assert_eq!(
            database_of("/v1/d1/team-a/orders/migrations"),
            Some(("team-a", "orders"))
        );
        for bad in [
            "/v1/d1/team-a/orders",
            "/v1/d1/Team/orders/migrations",
            "/v1/d1/team-a/a/b/migrations",
            "/v1/d1/team-a/-x/migrations",
            "/v1/tail/team-a/orders/migrations",
        ] {
            assert_eq!(database_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_listing_names_its_table_or_gets_wrangler_s() {
        assert_eq!(table_of(None), "d1_migrations");
        assert_eq!(table_of(Some("")), "d1_migrations");
        assert_eq!(table_of(Some("table=mine")), "mine");
        assert_eq!(table_of(Some("x=1&table=other")), "other");
    }
}
