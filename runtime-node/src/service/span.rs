//! The node's spans of one call (docs/tracing.md): `node.execute` (the
//! server span, parented by the router's context from the call's gRPC
//! metadata, or by the router's span in process), `node.admission`,
//! `node.bundle` (finding the revision, waiting for it if new) and
//! `node.handler` (the engine's run up to the response head, under which
//! the engine opens `engine.isolate`, `engine.cold_start` and one
//! `worker.fetch` per subrequest).
//!
//! All are `TRACE` spans: with traces off they are disabled where they are
//! made and nothing else here runs.

use isolane_engine::RequestTrace;
use isolane_proto::call::Call;
use isolane_telemetry::propagation;
use tracing::Span;
use tracing::field::Empty;

/// The server span of one call, before its head is read.
pub(super) fn execute() -> Span {
    tracing::trace_span!(
        "node.execute",
        otel.kind = "server",
        otel.status_code = Empty,
        worker.id = Empty,
        worker.namespace = Empty,
        worker.name = Empty,
        worker.revision = Empty,
        node.thread = Empty,
        request.id = Empty,
        http.response.status_code = Empty,
        isolane.outcome = Empty,
    )
}

/// The server span of a call that came over gRPC with `metadata`.
pub(super) fn execute_from(metadata: &tonic::metadata::MetadataMap) -> Span {
    let span = execute();
    propagation::set_parent_from(&span, |name| metadata.get(name)?.to_str().ok());
    span
}

/// Records what the call asks to run.
pub(super) fn called(span: &Span, call: &Call) {
    if span.is_disabled() {
        return;
    }
    let worker_id = call.worker_id.as_str();
    let (namespace, name) = worker_id.split_once('/').unwrap_or(("", worker_id));
    span.record("worker.id", worker_id);
    span.record("worker.namespace", namespace);
    span.record("worker.name", name);
    span.record("worker.revision", call.revision.as_str());
    span.record("node.thread", call.thread);
    span.record("request.id", call.request_id.as_str());
}

/// Records the answer's status and outcome.
pub(super) fn answered(span: &Span, status: http::StatusCode, outcome: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status.as_u16());
    span.record("isolane.outcome", outcome);
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// Records a refusal (a gRPC status; the router answers for it).
pub(super) fn refused(span: &Span, kind: &'static str) {
    if span.is_disabled() {
        return;
    }
    span.record("isolane.outcome", kind);
    span.record("otel.status_code", "ERROR");
}

/// The span of admitting a call on its thread, under `call` (`node.execute`).
pub(super) fn admission(call: &Span, thread: u32) -> Span {
    tracing::trace_span!(parent: call, "node.admission", node.thread = thread)
}

/// The span of finding the call's revision, under `call`.
pub(super) fn bundle(call: &Span) -> Span {
    tracing::trace_span!(parent: call, "node.bundle")
}

/// The span of the Worker's handler, up to its response head, under `call`.
pub(super) fn handler(call: &Span) -> Span {
    tracing::trace_span!(parent: call, "node.handler")
}

/// The engine's view of `span`'s trace, when it is traced.
pub(super) fn request_trace(span: &Span) -> Option<RequestTrace> {
    (!span.is_disabled()).then(|| RequestTrace {
        span: span.clone(),
        inject: propagation::inject_headers,
        sampled_trace_id: isolane_telemetry::sampled_trace(span).map(|id| id.to_bytes()),
    })
}
