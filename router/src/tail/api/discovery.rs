//! What the tail API tells the apiserver and clients about itself, and how
//! it answers when it refuses: Kubernetes' own shapes (an
//! `APIResourceList`, a `Status`), so that the apiserver's discovery, kubectl
//! and kube-rs read them as they read any API's.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::super::TailBody;

/// The API group of the tail API: a group of its own beside the CRD's
/// `isolane.dev` (an APIService serves a whole group-version, and
/// `isolane.dev/v1alpha1` is the CRD's).
pub const GROUP: &str = "tail.isolane.dev";
/// Its one version.
pub const VERSION: &str = "v1alpha1";
/// The resource and subresource a tail is (`get` on `workers/tail`).
pub const RESOURCE: &str = "workers";
pub const SUBRESOURCE: &str = "tail";

/// `GET /apis/tail.isolane.dev/v1alpha1`: one namespaced subresource,
/// `workers/tail`, with the one verb `get`. The apiserver's discovery
/// lists it (with a parent `workers` it makes up), so `kubectl api-resources`
/// shows it.
pub fn resource_list() -> Response<TailBody> {
    let list = serde_json::json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [{
            "name": format!("{RESOURCE}/{SUBRESOURCE}"),
            "singularName": "",
            "namespaced": true,
            "kind": "WorkerTail",
            "verbs": ["get"],
        }],
    });
    json(StatusCode::OK, &list)
}

/// `GET /openapi/v2`: an empty OpenAPI document (a tail is a stream of
/// JSON lines, not an object with a schema). The apiserver downloads it
/// for its merged `/openapi/v2`, and retries with errors in its log while it
/// is missing.
pub fn openapi() -> Response<TailBody> {
    let document = serde_json::json!({
        "swagger": "2.0",
        "info": { "title": GROUP, "version": VERSION },
        "paths": {},
    });
    json(StatusCode::OK, &document)
}

/// A refusal as a `meta/v1` `Status`, whose `message` kubectl and kube-rs
/// show.
pub fn status(code: StatusCode, message: &str) -> Response<TailBody> {
    let reason = match code {
        StatusCode::UNAUTHORIZED => "Unauthorized",
        StatusCode::FORBIDDEN => "Forbidden",
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        StatusCode::TOO_MANY_REQUESTS => "TooManyRequests",
        _ => "ServiceUnavailable",
    };
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    json(code, &status)
}

fn json(code: StatusCode, value: &serde_json::Value) -> Response<TailBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed_unsync());
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
