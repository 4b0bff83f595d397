//! A request's trace, as the engine sees it: the handler's `tracing` span,
//! under which the engine opens its own (isolate acquisition, cold start,
//! each subrequest), and how a span becomes the `traceparent` of an
//! outgoing fetch. The engine knows nothing of OpenTelemetry: the node
//! hands both in (docs/tracing.md).

use http::HeaderMap;
use tracing::Span;
use tracing::field::Empty;

/// A traced request: put in the engine request's extensions by the node,
/// only when its span is enabled (traces on and sampled in), so an
/// untraced request carries and costs nothing.
#[derive(Clone)]
pub struct RequestTrace {
    /// The handler's span: the parent of the engine's spans.
    pub span: Span,
    /// Writes the `traceparent` (and `tracestate`) that make a span the
    /// parent of an outgoing request.
    pub inject: fn(&Span, &mut HeaderMap),
    /// The trace's id when it is sampled (exported): the engine reports it
    /// with the request's wall time ([`crate::EngineObserver::request_exemplar`]),
    /// an exemplar of the latency histogram.
    pub sampled_trace_id: Option<[u8; 16]>,
}

impl std::fmt::Debug for RequestTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestTrace")
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

// === impl RequestTrace ===

impl RequestTrace {
    /// The span of finding (or making) the Worker's isolate on this thread;
    /// a miss opens `engine.cold_start` inside it.
    pub(crate) fn acquire(&self) -> Span {
        tracing::trace_span!(parent: &self.span, "engine.isolate")
    }

    /// The client span of one outbound fetch (each hop of a redirect chain
    /// is one), its context written into `headers` unless the Worker set a
    /// `traceparent` of its own, which is kept.
    pub(crate) fn subrequest(
        &self,
        method: &http::Method,
        url: &url::Url,
        headers: &mut HeaderMap,
    ) -> Span {
        let span = tracing::trace_span!(
            parent: &self.span,
            "worker.fetch",
            otel.kind = "client",
            http.request.method = %method,
            url.full = url.as_str(),
            server.address = url.host_str().unwrap_or(""),
            http.response.status_code = Empty,
        );
        if !headers.contains_key("traceparent") {
            (self.inject)(&span, headers);
        }
        span
    }
}
