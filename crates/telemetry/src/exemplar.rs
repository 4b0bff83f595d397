//! Exemplars: the trace id of a sampled request beside the latency bucket it
//! fell in, so a dashboard can go from a slow bucket to one of its traces.
//!
//! The `prometheus` crate's histograms have no exemplars, so the latest one
//! of each bucket is kept here, beside them: [`Exemplars`] is the process's
//! set (made in `main`, handed to the metrics and to the [`crate::AdminServer`]),
//! [`HistogramExemplars`] one histogram's view of it. Only sampled requests
//! record one (a lock and a small map update, never on an untraced request);
//! the admin server writes them in its OpenMetrics exposition
//! (`openmetrics.rs`), the only format with a place for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::Metric;

/// The trace id of a sampled span, as an exemplar's `trace_id` label
/// carries it (32 lower-case hex digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceId(opentelemetry::trace::TraceId);

impl TraceId {
    /// The id's 16 bytes (how the engine, which knows no OpenTelemetry,
    /// carries it).
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_bytes()
    }

    /// The id of 16 bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(opentelemetry::trace::TraceId::from_bytes(bytes))
    }
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The trace id of `span` when its trace is sampled (exported); `None` for a
/// disabled span (traces off) at the cost of one check, and for an
/// unsampled one.
pub fn sampled_trace(span: &tracing::Span) -> Option<TraceId> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    (span_context.is_sampled() && span_context.is_valid()).then(|| TraceId(span_context.trace_id()))
}

/// One exemplar: the observed value, its trace, when.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exemplar {
    pub(crate) trace_id: TraceId,
    pub(crate) value: f64,
    pub(crate) at: SystemTime,
}

/// A series: its label pairs, sorted by name (as the `prometheus` crate
/// sorts a gathered metric's).
pub(crate) type SeriesLabels = Vec<(String, String)>;

/// The latest exemplar of each bucket of each series, per histogram name.
/// Index `i` of a series' buckets is the `i`-th upper bound; one past the
/// last is `+Inf`.
type Store = HashMap<&'static str, HashMap<SeriesLabels, Vec<Option<Exemplar>>>>;

/// The process's exemplars, shared by the histograms that record them and
/// the admin server that writes them.
#[derive(Clone, Debug, Default)]
pub struct Exemplars {
    store: Arc<Mutex<Store>>,
}

impl Exemplars {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A view for recording the exemplars of histogram `metric`, whose
    /// buckets are `buckets` (its upper bounds, ascending).
    pub fn histogram(&self, metric: Metric, buckets: &[f64]) -> HistogramExemplars {
        HistogramExemplars {
            metric,
            buckets: buckets.into(),
            exemplars: self.clone(),
        }
    }

    /// The exemplars of histogram `name`'s series `labels`, by bucket.
    pub(crate) fn of(&self, name: &str, labels: &SeriesLabels) -> Vec<Option<Exemplar>> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        store
            .get(name)
            .and_then(|series| series.get(labels))
            .cloned()
            .unwrap_or_default()
    }

    /// Whether histogram `name` has any exemplar.
    pub(crate) fn has(&self, name: &str) -> bool {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        store.contains_key(name)
    }
}

/// One histogram's exemplars ([`Exemplars::histogram`]).
#[derive(Clone, Debug)]
pub struct HistogramExemplars {
    metric: Metric,
    buckets: Arc<[f64]>,
    exemplars: Exemplars,
}

impl HistogramExemplars {
    /// The set it records in.
    pub fn exemplars(&self) -> &Exemplars {
        &self.exemplars
    }

    /// Keeps `trace_id` as the exemplar of the bucket `value` falls in, in
    /// the series of `label_values` (in the metric's label order).
    pub fn record(&self, label_values: &[&str], value: f64, trace_id: TraceId) {
        let mut labels: SeriesLabels = self
            .metric
            .labels
            .iter()
            .zip(label_values)
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        labels.sort();
        let bucket = self
            .buckets
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(self.buckets.len());
        let exemplar = Exemplar {
            trace_id,
            value,
            at: SystemTime::now(),
        };
        let mut store = self
            .exemplars
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let buckets = store
            .entry(self.metric.name)
            .or_default()
            .entry(labels)
            .or_insert_with(|| vec![None; self.buckets.len() + 1]);
        if let Some(slot) = buckets.get_mut(bucket) {
            *slot = Some(exemplar);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const LATENCY: Metric = Metric::new("test_seconds", "Latency.", &["node", "class"]);

    pub(crate) fn trace(n: u8) -> TraceId {
        TraceId(opentelemetry::trace::TraceId::from_bytes([n; 16]))
    }

    #[test]
    fn the_latest_exemplar_of_each_bucket_is_kept_by_sorted_labels() {
        let exemplars = Exemplars::new();
        let latency = exemplars.histogram(LATENCY, &[0.1, 1.0]);
        assert!(!exemplars.has("test_seconds"));
        latency.record(&["a", "2xx"], 0.05, trace(1));
        latency.record(&["a", "2xx"], 0.07, trace(2));
        latency.record(&["a", "2xx"], 5.0, trace(3));
        let labels = vec![
            ("class".to_owned(), "2xx".to_owned()),
            ("node".to_owned(), "a".to_owned()),
        ];
        let kept: Vec<Option<(TraceId, f64)>> = exemplars
            .of("test_seconds", &labels)
            .into_iter()
            .map(|e| e.map(|e| (e.trace_id, e.value)))
            .collect();
        assert_eq!(kept, [Some((trace(2), 0.07)), None, Some((trace(3), 5.0))]);
        assert!(exemplars.has("test_seconds"));
        assert_eq!(trace(1).to_string(), "01".repeat(16));
    }

    #[test]
    fn a_disabled_span_has_no_trace() {
        assert_eq!(sampled_trace(&tracing::Span::none()), None);
    }
}
