//! W3C trace context (`traceparent`, `tracestate`) in and out of `tracing`
//! spans: from a client's headers or a node's gRPC metadata into a span's
//! parent, and from a span into the fields of an outgoing call.
//!
//! Every function here is a no-op for a disabled span (traces off, or the
//! span filtered out), so callers need not check.

use opentelemetry::propagation::{Extractor, Injector};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The W3C header (and gRPC metadata key) of the parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header (and gRPC metadata key) of vendor trace state.
pub const TRACESTATE: &str = "tracestate";

/// Makes the trace context that `field` looks up (by lower-case name) the
/// parent of `span`. A missing or malformed `traceparent` leaves `span` the
/// root of a new trace, as the W3C specification says.
pub fn set_parent_from<'a>(span: &tracing::Span, field: impl Fn(&str) -> Option<&'a str>) {
    if span.is_disabled() {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Fields(&field, std::marker::PhantomData))
    });
    // Fails only when the span was already started elsewhere; then its
    // parent stays as it was.
    let _ = span.set_parent(parent);
}

/// Makes the trace context in `headers` the parent of `span`.
pub fn set_parent_from_headers(span: &tracing::Span, headers: &http::HeaderMap) {
    set_parent_from(span, |name| headers.get(name)?.to_str().ok());
}

/// The `traceparent` and `tracestate` values that make `span` the parent of
/// an outgoing call: handed to `put` by name, nothing for a disabled span.
pub fn inject(span: &tracing::Span, mut put: impl FnMut(&'static str, String)) {
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Put(&mut put));
    });
}

/// Puts `span`'s trace context into `headers`.
pub fn inject_headers(span: &tracing::Span, headers: &mut http::HeaderMap) {
    inject(span, |name, value| {
        if let Ok(value) = http::HeaderValue::try_from(value) {
            headers.insert(name, value);
        }
    });
}

/// A lookup as an [`Extractor`]; `'a` is the looked-up values' lifetime.
struct Fields<'f, 'a, F>(&'f F, std::marker::PhantomData<&'a str>);

impl<'f, 'a: 'f, F: Fn(&str) -> Option<&'a str>> Extractor for Fields<'f, 'a, F> {
    fn get(&self, key: &str) -> Option<&str> {
        (self.0)(key)
    }

    fn keys(&self) -> Vec<&str> {
        // The trace-context propagator asks for its two fields by name only.
        vec![TRACEPARENT, TRACESTATE]
    }
}

struct Put<'p, P>(&'p mut P);

impl<P: FnMut(&'static str, String)> Injector for Put<'_, P> {
    fn set(&mut self, key: &str, value: String) {
        match key {
            TRACEPARENT => (self.0)(TRACEPARENT, value),
            TRACESTATE => (self.0)(TRACESTATE, value),
            _ => {}
        }
    }
}
