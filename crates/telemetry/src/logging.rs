//! The global `tracing` subscriber.

use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::Error;
use crate::traces::{Exporter, TraceSettings};

/// The log filter variable Isolane reads first (`ISOLANE_LOG=isolane=debug`).
pub const LOG_ENV: &str = "ISOLANE_LOG";
/// The conventional variable, read when [`LOG_ENV`] is unset.
pub const RUST_LOG_ENV: &str = "RUST_LOG";

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, for terminals.
    #[default]
    Plain,
    /// One JSON object per line, fields at the top level, for log pipelines.
    Json,
}

/// What [`init_tracing`] started: keep it until the process exits, when
/// dropping it sends the spans still buffered.
#[derive(Debug)]
#[must_use = "dropping it stops the trace export"]
pub struct Telemetry {
    exporter: Option<Exporter>,
}

impl Telemetry {
    /// Whether spans are exported (an OTLP endpoint is configured).
    pub fn traces_exported(&self) -> bool {
        self.exporter.is_some()
    }
}

/// Installs the global subscriber, writing to stderr in `format`, and the
/// OpenTelemetry trace export when the `OTEL_*` variables ask for it
/// (`service` is the default `service.name`; see [`TraceSettings`]).
///
/// The filter is the first of `ISOLANE_LOG`, `RUST_LOG` and `default_filter`
/// that is set and non-empty, in `EnvFilter` syntax (`info,isolane_router=debug`).
/// It filters log lines only: exported spans are Isolane's own, at every
/// level (the request path's are at `TRACE`, so with traces off they are
/// disabled where they are made). Fails, rather than guessing, on a filter
/// or an `OTEL_*` value that does not parse, and if a subscriber is already
/// installed.
pub fn init_tracing(
    format: LogFormat,
    default_filter: &str,
    service: &str,
) -> Result<Telemetry, Error> {
    let isolane_log = std::env::var(LOG_ENV).ok();
    let rust_log = std::env::var(RUST_LOG_ENV).ok();
    let filter = filter(isolane_log.as_deref(), rust_log.as_deref(), default_filter)?;
    let exporter = TraceSettings::from_env(service)?
        .map(|settings| Exporter::start(&settings))
        .transpose()?;
    subscriber(format, filter, exporter.as_ref().map(Exporter::tracer))
        .try_init()
        .map_err(|_| Error::TracingAlreadyInstalled)?;
    Ok(Telemetry { exporter })
}

/// Log lines in `format` through `filter`, and the spans to `tracer`.
fn subscriber(
    format: LogFormat,
    filter: EnvFilter,
    tracer: Option<opentelemetry_sdk::trace::SdkTracer>,
) -> impl tracing::Subscriber + Send + Sync {
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        LogFormat::Plain => lines.boxed(),
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .boxed(),
    };
    let spans = tracer.map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_filter(filter_fn(exported))
    });
    tracing_subscriber::registry()
        .with(lines.with_filter(filter))
        .with(spans)
}

/// What the trace export sees: Isolane's spans, and its events at `INFO`
/// or above (as span events).
fn exported(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.target().starts_with("isolane")
        && (metadata.is_span() || *metadata.level() <= tracing::Level::INFO)
}

/// The filter from the first of the given sources that is set and non-empty.
fn filter(
    isolane_log: Option<&str>,
    rust_log: Option<&str>,
    default_filter: &str,
) -> Result<EnvFilter, Error> {
    let (variable, directives) = [(LOG_ENV, isolane_log), (RUST_LOG_ENV, rust_log)]
        .into_iter()
        .find_map(|(var, value)| value.filter(|v| !v.trim().is_empty()).map(|v| (var, v)))
        .unwrap_or(("default", default_filter));
    EnvFilter::builder()
        .parse(directives)
        .map_err(|source| Error::InvalidLogFilter {
            variable,
            filter: directives.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolane_log_wins_then_rust_log_then_the_default() {
        let f = filter(Some("debug"), Some("warn"), "info").unwrap();
        assert_eq!(f.to_string(), "debug");
        let f = filter(None, Some("warn"), "info").unwrap();
        assert_eq!(f.to_string(), "warn");
        let f = filter(Some(" "), None, "info,isolane=trace").unwrap();
        assert_eq!(f.to_string(), "isolane=trace,info");
    }

    #[test]
    fn request_spans_are_enabled_only_with_the_export() {
        let probe = || tracing::trace_span!("isolane_probe").is_disabled();
        let off = subscriber(LogFormat::Plain, filter(None, None, "info").unwrap(), None);
        let disabled = tracing::subscriber::with_default(off, probe);
        assert!(disabled, "no export: TRACE spans are off");
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "t");
        let on = subscriber(
            LogFormat::Json,
            filter(None, None, "info").unwrap(),
            Some(tracer),
        );
        let disabled = tracing::subscriber::with_default(on, probe);
        assert!(!disabled, "with the export: TRACE spans are on");
    }

    #[test]
    fn a_bad_filter_names_its_source() {
        let error = filter(None, Some("=[bad"), "info").unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidLogFilter {
                variable: "RUST_LOG",
                ..
            }
        ));
        assert_eq!(error.kind(), "invalid_log_filter");
    }
}
