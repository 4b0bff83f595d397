//! Metrics as a table: each metric is a [`Metric`] constant (its name, help
//! and labels) that registers itself. A component lists its constants once
//! (`ALL`), so its registration is one line a metric and a test can hold
//! docs/metrics.md to the same list.

use prometheus::core::Collector;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

/// One metric: its name, help text and label names (none for a metric
/// with one series).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: &'static [&'static str],
}

impl Metric {
    pub const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
    ) -> Self {
        Self { name, help, labels }
    }

    /// A counter with labels, registered in `registry`.
    pub fn counter_vec(&self, registry: &Registry) -> prometheus::Result<IntCounterVec> {
        register(registry, IntCounterVec::new(self.opts(), self.labels)?)
    }

    /// A counter without labels, registered in `registry`.
    pub fn counter(&self, registry: &Registry) -> prometheus::Result<IntCounter> {
        register(registry, IntCounter::with_opts(self.opts())?)
    }

    /// A gauge with labels, registered in `registry`.
    pub fn gauge_vec(&self, registry: &Registry) -> prometheus::Result<IntGaugeVec> {
        register(registry, IntGaugeVec::new(self.opts(), self.labels)?)
    }

    /// A gauge without labels, registered in `registry`.
    pub fn gauge(&self, registry: &Registry) -> prometheus::Result<IntGauge> {
        register(registry, IntGauge::with_opts(self.opts())?)
    }

    /// A histogram with labels and `buckets`, registered in `registry`.
    pub fn histogram_vec(
        &self,
        registry: &Registry,
        buckets: &[f64],
    ) -> prometheus::Result<HistogramVec> {
        let opts = HistogramOpts::new(self.name, self.help).buckets(buckets.to_vec());
        register(registry, HistogramVec::new(opts, self.labels)?)
    }

    /// A histogram without labels and with `buckets`, registered in `registry`.
    pub fn histogram(&self, registry: &Registry, buckets: &[f64]) -> prometheus::Result<Histogram> {
        let opts = HistogramOpts::new(self.name, self.help).buckets(buckets.to_vec());
        register(registry, Histogram::with_opts(opts)?)
    }

    fn opts(&self) -> Opts {
        Opts::new(self.name, self.help)
    }
}

/// The metrics of `table` that `docs` (docs/metrics.md) does not name in
/// backticks.
pub fn undocumented(table: &[Metric], docs: &str) -> Vec<&'static str> {
    table
        .iter()
        .map(|metric| metric.name)
        .filter(|name| !docs.contains(&format!("`{name}`")))
        .collect()
}

/// The metrics of `table` that `registry` does not hold: a metric of the
/// name could still be registered there. (A definition that cannot be
/// registered anywhere counts as not held.)
pub fn unregistered(table: &[Metric], registry: &Registry) -> Vec<&'static str> {
    table
        .iter()
        .filter(|metric| {
            metric.gauge_vec(&Registry::new()).is_err() || metric.gauge_vec(registry).is_ok()
        })
        .map(|metric| metric.name)
        .collect()
}

fn register<C: Collector + Clone + 'static>(
    registry: &Registry,
    metric: C,
) -> prometheus::Result<C> {
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HITS: Metric = Metric::new("test_hits_total", "Hits.", &["result"]);
    const UP: Metric = Metric::new("test_up", "Up.", &[]);

    #[test]
    fn each_kind_registers_under_its_name_and_twice_is_refused() {
        let registry = Registry::new();
        HITS.counter_vec(&registry)
            .unwrap()
            .with_label_values(&["ok"])
            .inc();
        UP.gauge(&registry).unwrap().set(1);
        let names: Vec<String> = registry
            .gather()
            .iter()
            .map(|f| f.name().to_owned())
            .collect();
        assert_eq!(names, ["test_hits_total", "test_up"]);
        assert!(UP.gauge(&registry).is_err(), "a name registers once");
    }

    #[test]
    fn the_table_checks_find_what_is_missing() {
        let registry = Registry::new();
        HITS.counter_vec(&registry).unwrap();
        assert_eq!(unregistered(&[HITS, UP], &registry), ["test_up"]);
        assert_eq!(
            undocumented(&[HITS, UP], "| `test_up` | gauge |"),
            ["test_hits_total"]
        );
    }
}
