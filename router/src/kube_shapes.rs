//! Kubernetes' own answer shapes for the groups the aggregated API server
//! serves ([`crate::aggregated`]): a refusal as a `meta/v1` `Status`, the
//! OpenAPI document the apiserver merges, JSON bodies. kubectl, kube-rs and
//! the apiserver's discovery read them as they read any API's.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

/// The body of every answer of the tail endpoint and the aggregated API.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// `GET /openapi/v2`: an empty OpenAPI document (a tail is a stream of
/// JSON lines; the custom metrics API's shapes are Kubernetes' own). The
/// apiserver downloads it for its merged `/openapi/v2`, and retries with
/// errors in its log while it is missing.
pub fn openapi() -> Response<Body> {
    let document = serde_json::json!({
        "swagger": "2.0",
        "info": { "title": "isolane-router", "version": "v1" },
        "paths": {},
    });
    json(StatusCode::OK, &document)
}

/// A refusal as a `meta/v1` `Status`, whose `message` kubectl and kube-rs
/// show.
pub fn status(code: StatusCode, message: &str) -> Response<Body> {
    let reason = match code {
        StatusCode::UNAUTHORIZED => "Unauthorized",
        StatusCode::FORBIDDEN => "Forbidden",
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        StatusCode::TOO_MANY_REQUESTS => "TooManyRequests",
        StatusCode::BAD_REQUEST => "BadRequest",
        StatusCode::PAYLOAD_TOO_LARGE => "RequestEntityTooLarge",
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

/// `value` as a JSON answer with `code`.
pub fn json(code: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed_unsync());
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
