//! The global `tracing` subscriber.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::util::SubscriberInitExt;

use crate::Error;

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

/// Installs the global subscriber, writing to stderr in `format`.
///
/// The filter is the first of `ISOLANE_LOG`, `RUST_LOG` and `default_filter`
/// that is set and non-empty, in `EnvFilter` syntax (`info,isolane_router=debug`).
/// Fails, rather than guessing, on a filter that does not parse, and if a
/// subscriber is already installed.
pub fn init_tracing(format: LogFormat, default_filter: &str) -> Result<(), Error> {
    let isolane_log = std::env::var(LOG_ENV).ok();
    let rust_log = std::env::var(RUST_LOG_ENV).ok();
    let filter = filter(isolane_log.as_deref(), rust_log.as_deref(), default_filter)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Plain => builder.finish().try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .finish()
            .try_init(),
    };
    installed.map_err(|_| Error::TracingAlreadyInstalled)
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
