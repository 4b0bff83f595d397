//! What every Isolane binary needs to be observable and operable.
//!
//! [`init_tracing`] installs the `tracing` subscriber (plain or JSON, filtered
//! by `ISOLANE_LOG` or `RUST_LOG`) and, when the `OTEL_*` variables name a
//! collector, the OpenTelemetry trace export ([`traces`]); [`propagation`]
//! carries W3C trace context in and out of spans; [`AdminServer`] serves `/live`, `/ready`
//! and `/metrics` on the admin port from a [`Readiness`] — which turns ready
//! only once every registered component has said so — and the binary's one
//! `prometheus::Registry`; [`AdminArgs`] is the clap group each binary
//! flattens into its own parser; [`parse_args`], [`usage_error`] and
//! [`shutdown_signal`] are the process edges (exit 64 on a wrong command
//! line, SIGTERM and SIGINT) every binary shares. The operator, runtime node, router and
//! `isolane dev` compose them in `main`.
#![forbid(unsafe_code)]

mod admin;
mod args;
mod error;
pub mod exemplar;
mod flags;
mod logging;
mod metric;
mod openmetrics;
mod process;
pub mod propagation;
mod readiness;
pub mod traces;

pub use admin::{AdminServer, BoundAdminServer};
pub use args::{ADMIN_ADDR_ENV, AdminArgs, DEFAULT_ADMIN_ADDR, LOG_FORMAT_ENV};
pub use error::Error;
pub use exemplar::{Exemplars, HistogramExemplars, TraceId, sampled_trace};
pub use flags::{is_dns_label, is_dns_subdomain, parse_duration};
pub use logging::{LOG_ENV, LogFormat, RUST_LOG_ENV, Telemetry, init_tracing};
pub use metric::{Metric, undocumented, unregistered};
pub use process::{EXIT_USAGE, parse_args, shutdown_signal, usage_error};
pub use readiness::{Readiness, ReadyHandle};
