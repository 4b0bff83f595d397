//! The registry in the OpenMetrics text format, with the [`Exemplars`] of
//! its histograms: what `/metrics` answers a scraper that asks for
//! `application/openmetrics-text` (Prometheus does; it stores exemplars
//! with `--enable-feature=exemplar-storage`).
//!
//! The `prometheus-client` crate encodes the format; it is fed the
//! families the `prometheus` crate gathers. Its exemplars come only from
//! its own histogram type, so the few histograms that hold exemplars here
//! are written by [`histogram`] below: the bucket lines with an exemplar
//! after them (`… 3 # {trace_id="…"} 0.0042 1700000000.123`), as the
//! OpenMetrics specification gives them. e2e/tests/exemplars.rs checks
//! them with Prometheus's own parser.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::UNIX_EPOCH;

use prometheus::proto::{Metric, MetricFamily, MetricType};
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType as OmType;

use crate::exemplar::{Exemplar, Exemplars, SeriesLabels};

/// The Content-Type of the exposition.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `families` in the OpenMetrics text format, ending `# EOF`.
pub(crate) fn encode(
    families: Vec<MetricFamily>,
    exemplars: &Exemplars,
) -> Result<String, std::fmt::Error> {
    let (with, without): (Vec<_>, Vec<_>) = families.into_iter().partition(|family| {
        family.get_field_type() == MetricType::HISTOGRAM && exemplars.has(family.name())
    });
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(Gathered(without)));
    let mut out = String::new();
    prometheus_client::encoding::text::encode_registry(&mut out, &registry)?;
    for family in &with {
        histogram(&mut out, family, exemplars)?;
    }
    prometheus_client::encoding::text::encode_eof(&mut out)?;
    Ok(out)
}

/// Families gathered from the `prometheus` registry, as a collector of the
/// `prometheus-client` one.
#[derive(Debug)]
struct Gathered(Vec<MetricFamily>);

impl prometheus_client::collector::Collector for Gathered {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in &self.0 {
            let help = escape_help(family.help());
            let name = family.name();
            // OpenMetrics names a counter's family without its `_total`.
            let (name, kind) = match family.get_field_type() {
                MetricType::COUNTER => match name.strip_suffix("_total") {
                    Some(stem) => (stem, OmType::Counter),
                    None => (name, OmType::Unknown),
                },
                MetricType::GAUGE => (name, OmType::Gauge),
                MetricType::HISTOGRAM => (name, OmType::Histogram),
                // No component exports a summary or an untyped metric.
                _ => continue,
            };
            let mut metrics = encoder.encode_descriptor(name, &help, None, kind)?;
            for metric in family.get_metric() {
                let labels: Vec<(Cow<'_, str>, Cow<'_, str>)> = metric
                    .get_label()
                    .iter()
                    .map(|pair| (Cow::from(pair.name()), Cow::from(pair.value())))
                    .collect();
                encode_sample(metrics.encode_family(&labels)?, kind, family, metric)?;
            }
        }
        Ok(())
    }
}

/// One sample of `family` as OpenMetrics `kind`.
fn encode_sample(
    mut sample: MetricEncoder<'_>,
    kind: OmType,
    family: &MetricFamily,
    metric: &Metric,
) -> Result<(), std::fmt::Error> {
    match kind {
        OmType::Counter => {
            let value = metric.get_counter().get_value();
            // Integer counters (all of Isolane's) print as integers.
            if value.fract() == 0.0 && (0.0..9.0e15).contains(&value) {
                sample.encode_counter::<NoLabelSet, _, f64>(&(value as u64), None)?;
            } else {
                sample.encode_counter::<NoLabelSet, _, f64>(&value, None)?;
            }
        }
        OmType::Histogram => {
            let h = metric.get_histogram();
            let buckets: Vec<(f64, u64)> = h
                .get_bucket()
                .iter()
                .map(|b| (b.upper_bound(), b.cumulative_count()))
                .chain(std::iter::once((f64::INFINITY, h.get_sample_count())))
                .collect();
            // The crate takes counts per bucket, not cumulative.
            let per_bucket = per_bucket(&buckets);
            sample.encode_histogram::<NoLabelSet>(
                h.get_sample_sum(),
                h.get_sample_count(),
                &per_bucket,
                None,
            )?;
        }
        _ => {
            let value = match family.get_field_type() {
                MetricType::COUNTER => metric.get_counter().get_value(),
                _ => metric.get_gauge().get_value(),
            };
            sample.encode_gauge(&value)?;
        }
    }
    Ok(())
}

/// Cumulative bucket counts to counts per bucket.
fn per_bucket(cumulative: &[(f64, u64)]) -> Vec<(f64, u64)> {
    let mut below = 0;
    cumulative
        .iter()
        .map(|&(bound, count)| {
            let own = count.saturating_sub(below);
            below = count;
            (bound, own)
        })
        .collect()
}

/// A histogram family with its exemplars, written out (see the module doc).
fn histogram(
    out: &mut String,
    family: &MetricFamily,
    exemplars: &Exemplars,
) -> Result<(), std::fmt::Error> {
    let name = family.name();
    writeln!(out, "# HELP {name} {}", escape_help(family.help()))?;
    writeln!(out, "# TYPE {name} histogram")?;
    for metric in family.get_metric() {
        let mut labels: SeriesLabels = metric
            .get_label()
            .iter()
            .map(|p| (p.name().to_owned(), p.value().to_owned()))
            .collect();
        labels.sort();
        let kept = exemplars.of(name, &labels);
        let series: String = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\",", escape_label(v)))
            .collect();
        let h = metric.get_histogram();
        let bounds = h
            .get_bucket()
            .iter()
            .map(|b| (b.upper_bound(), b.cumulative_count()))
            .chain(std::iter::once((f64::INFINITY, h.get_sample_count())));
        for (i, (bound, count)) in bounds.enumerate() {
            write!(out, "{name}_bucket{{{series}le=\"{}\"}} {count}", le(bound))?;
            if let Some(Some(exemplar)) = kept.get(i) {
                write_exemplar(out, exemplar)?;
            }
            out.push('\n');
        }
        let series = series.trim_end_matches(',');
        let sum = h.get_sample_sum();
        let count = h.get_sample_count();
        writeln!(out, "{name}_sum{{{series}}} {}", float(sum))?;
        writeln!(out, "{name}_count{{{series}}} {count}")?;
    }
    Ok(())
}

fn write_exemplar(out: &mut String, exemplar: &Exemplar) -> std::fmt::Result {
    let at = exemplar
        .at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    write!(
        out,
        " # {{trace_id=\"{}\"}} {} {at:.3}",
        exemplar.trace_id,
        float(exemplar.value)
    )
}

/// A bucket bound as OpenMetrics writes it (`+Inf`, and always a float).
fn le(bound: f64) -> String {
    if bound.is_infinite() {
        "+Inf".to_owned()
    } else {
        float(bound)
    }
}

fn float(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.1}")
    } else {
        format!("{value}")
    }
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

    const LATENCY: Metric = Metric::new("test_seconds", "Latency.", &["node"]);
    const HITS: Metric = Metric::new("test_hits_total", "Hits \\ \"all\".", &["result"]);

    #[test]
    fn counters_gauges_and_histograms_with_an_exemplar() {
        let registry = prometheus::Registry::new();
        let exemplars = Exemplars::new();
        HITS.counter_vec(&registry)
            .unwrap()
            .with_label_values(&["o\"k"])
            .inc_by(3);
        let latency = LATENCY.histogram_vec(&registry, &[0.1, 1.0]).unwrap();
        latency.with_label_values(&["a"]).observe(0.05);
        latency.with_label_values(&["a"]).observe(2.0);
        let trace = crate::exemplar::tests::trace(7);
        exemplars
            .histogram(LATENCY, &[0.1, 1.0])
            .record(&["a"], 0.05, trace);
        let text = encode(registry.gather(), &exemplars).unwrap();
        assert!(text.contains("# TYPE test_hits counter\n"), "{text}");
        assert!(
            text.contains("test_hits_total{result=\"o\\\"k\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE test_seconds histogram\n"), "{text}");
        let bucket = format!(
            "test_seconds_bucket{{node=\"a\",le=\"0.1\"}} 1 # {{trace_id=\"{}\"}} 0.05 ",
            "07".repeat(16)
        );
        assert!(text.contains(&bucket), "{text}");
        assert!(
            text.contains("test_seconds_bucket{node=\"a\",le=\"1.0\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("test_seconds_bucket{node=\"a\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("test_seconds_count{node=\"a\"} 2\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn without_exemplars_the_crate_writes_the_histogram() {
        let registry = prometheus::Registry::new();
        let latency = LATENCY.histogram_vec(&registry, &[0.1, 1.0]).unwrap();
        latency.with_label_values(&["a"]).observe(0.05);
        latency.with_label_values(&["a"]).observe(2.0);
        let text = encode(registry.gather(), &Exemplars::new()).unwrap();
        assert!(
            text.contains("test_seconds_bucket{le=\"1.0\",node=\"a\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("test_seconds_bucket{le=\"+Inf\",node=\"a\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("test_seconds_count{node=\"a\"} 2\n"),
            "{text}"
        );
    }
}
