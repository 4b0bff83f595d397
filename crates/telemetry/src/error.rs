//! The crate's one error type.

use std::net::SocketAddr;

/// What went wrong setting up telemetry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A log filter (from `variable`, or the default) did not parse.
    #[error("invalid log filter {filter:?} from {variable}")]
    InvalidLogFilter {
        /// Where the filter came from: an environment variable name, or
        /// "default".
        variable: &'static str,
        filter: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global `tracing` subscriber was already installed.
    #[error("a tracing subscriber is already installed")]
    TracingAlreadyInstalled,
    /// An `OTEL_*` variable holds a value this process does not support.
    #[error("unsupported {variable}={value:?}")]
    InvalidTraceSetting {
        variable: &'static str,
        value: String,
    },
    /// The OTLP trace exporter could not be built.
    #[error("cannot export traces to {endpoint}")]
    TraceExporter {
        endpoint: String,
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The trace exporter's runtime could not start.
    #[error("cannot start the trace exporter's runtime")]
    TraceRuntime {
        #[source]
        source: std::io::Error,
    },
    /// The admin server could not listen on its address.
    #[error("cannot listen on admin address {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A short, bounded name for this error, for metric labels.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidLogFilter { .. } => "invalid_log_filter",
            Self::TracingAlreadyInstalled => "tracing_already_installed",
            Self::InvalidTraceSetting { .. } => "invalid_trace_setting",
            Self::TraceExporter { .. } => "trace_exporter",
            Self::TraceRuntime { .. } => "trace_runtime",
            Self::Bind { .. } => "bind",
        }
    }
}
