//! The router's spans of one request (docs/tracing.md): `router.request`
//! (the server span, parented by the client's `traceparent`) and one
//! `router.attempt` per node tried (the client span whose context goes to
//! the node in the call's gRPC metadata).
//!
//! They are `TRACE` spans: with traces off (no OpenTelemetry layer) and the
//! default log filters they are disabled where they are made, and the
//! request path pays one interest check per span.

use http::Request;
use isolane_telemetry::propagation;
use tracing::Span;
use tracing::field::Empty;

/// The server span of a client's request, before it is routed.
pub(super) fn request<B>(request: &Request<B>, host: &str) -> Span {
    let span = tracing::trace_span!(
        "router.request",
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %request.method(),
        url.path = request.uri().path(),
        server.address = host,
        http.response.status_code = Empty,
        worker.id = Empty,
        worker.namespace = Empty,
        worker.name = Empty,
        worker.revision = Empty,
        request.id = Empty,
    );
    propagation::set_parent_from_headers(&span, request.headers());
    span
}

/// Records the Worker and revision the request was routed to.
pub(super) fn routed(
    span: &Span,
    worker_id: &str,
    revision: &str,
    request_id: &impl std::fmt::Display,
) {
    if span.is_disabled() {
        return;
    }
    let (namespace, name) = worker_id.split_once('/').unwrap_or(("", worker_id));
    span.record("worker.id", worker_id);
    span.record("worker.namespace", namespace);
    span.record("worker.name", name);
    span.record("worker.revision", revision);
    span.record("request.id", tracing::field::display(request_id));
}

/// Records the status the client gets.
pub(super) fn answered(span: &Span, status: http::StatusCode) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// The client span of one call to a node.
pub(super) fn attempt(node: &str, thread: u32, attempt: u32) -> Span {
    tracing::trace_span!(
        "router.attempt",
        otel.kind = "client",
        node.name = node,
        node.thread = thread,
        attempt,
    )
}

/// Puts the current span's trace context into a node call's metadata.
pub(super) fn inject_metadata<T>(request: &mut tonic::Request<T>) {
    propagation::inject(&Span::current(), |name, value| {
        if let Ok(value) = value.parse() {
            request.metadata_mut().insert(name, value);
        }
    });
}

/// The current span's trace context as the fields of a `Calls` head
/// (empty with traces off).
pub(super) fn trace_fields() -> Vec<isolane_proto::runtime::v1::Header> {
    let mut fields = Vec::new();
    propagation::inject(&Span::current(), |name, value| {
        fields.push(isolane_proto::runtime::v1::Header::new(
            name,
            bytes::Bytes::from(value),
        ));
    });
    fields
}
