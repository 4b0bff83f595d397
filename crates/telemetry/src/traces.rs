//! OpenTelemetry traces: the standard `OTEL_*` variables, read once into a
//! typed [`TraceSettings`], and the OTLP exporter they describe.
//!
//! Off by default: traces are exported only when an OTLP endpoint is given
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`),
//! and never when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
//! The specification's default endpoint (localhost) is deliberately not
//! assumed: a node without a collector pays nothing. When off, no
//! OpenTelemetry layer is installed and the request spans (at `TRACE`
//! level, below every default log filter) are disabled at their call sites.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

use crate::Error;

/// `OTEL_SDK_DISABLED`: `true` turns every signal off.
pub const OTEL_SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
/// `OTEL_TRACES_EXPORTER`: `otlp` (the default) or `none`.
pub const OTEL_TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";
/// `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL.
pub const OTEL_EXPORTER_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the traces URL (wins over the base).
pub const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`: `grpc` or `http/protobuf`.
pub const OTEL_EXPORTER_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`: the same, for traces only.
pub const OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
/// `OTEL_SERVICE_NAME`: the `service.name` resource attribute.
pub const OTEL_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// `OTEL_TRACES_SAMPLER`: the sampler's name, as the specification spells it.
pub const OTEL_TRACES_SAMPLER: &str = "OTEL_TRACES_SAMPLER";
/// `OTEL_TRACES_SAMPLER_ARG`: the ratio of the `traceidratio` samplers.
pub const OTEL_TRACES_SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";

/// How long a process waits at exit for its last spans to leave.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The OTLP transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// OTLP over gRPC (the specification's default).
    Grpc,
    /// OTLP over HTTP with protobuf bodies.
    HttpProtobuf,
}

/// Which spans are kept, as `OTEL_TRACES_SAMPLER` names them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamplerSetting {
    AlwaysOn,
    AlwaysOff,
    TraceIdRatio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedTraceIdRatio(f64),
}

/// Where and how traces go, read from the `OTEL_*` variables.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSettings {
    /// The collector's URL: a traces URL as given, or a base URL (for
    /// HTTP, `/v1/traces` is appended).
    pub endpoint: String,
    /// Whether `endpoint` is the traces URL itself.
    pub endpoint_is_signal: bool,
    pub transport: Transport,
    /// `service.name` (`OTEL_SERVICE_NAME`, else the binary's own name).
    pub service_name: String,
    pub sampler: SamplerSetting,
}

// === impl TraceSettings ===

impl TraceSettings {
    /// The settings of this process's environment; `None` when traces are off.
    pub fn from_env(default_service: &str) -> Result<Option<Self>, Error> {
        Self::from_vars(|name| std::env::var(name).ok(), default_service)
    }

    /// The settings `var` describes (`var` looks a variable up by name).
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
        default_service: &str,
    ) -> Result<Option<Self>, Error> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if set(OTEL_SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        match set(OTEL_TRACES_EXPORTER).as_deref().map(str::trim) {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => return Err(invalid(OTEL_TRACES_EXPORTER, other)),
        }
        let (endpoint, endpoint_is_signal) = match set(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
            Some(url) => (url, true),
            None => match set(OTEL_EXPORTER_OTLP_ENDPOINT) {
                Some(url) => (url, false),
                None => return Ok(None),
            },
        };
        let protocol = set(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
            .map(|v| (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, v))
            .or_else(|| set(OTEL_EXPORTER_OTLP_PROTOCOL).map(|v| (OTEL_EXPORTER_OTLP_PROTOCOL, v)));
        let transport = match protocol {
            None => Transport::Grpc,
            Some((_, v)) if v.trim() == "grpc" => Transport::Grpc,
            Some((_, v)) if v.trim() == "http/protobuf" => Transport::HttpProtobuf,
            Some((name, v)) => return Err(invalid(name, &v)),
        };
        let sampler = sampler(set(OTEL_TRACES_SAMPLER), set(OTEL_TRACES_SAMPLER_ARG))?;
        let service_name = set(OTEL_SERVICE_NAME).unwrap_or_else(|| default_service.to_owned());
        Ok(Some(Self {
            endpoint: endpoint.trim().to_owned(),
            endpoint_is_signal,
            transport,
            service_name,
            sampler,
        }))
    }

    /// The URL the exporter posts to (HTTP appends the signal's path to a base URL).
    fn export_url(&self) -> String {
        match self.transport {
            Transport::HttpProtobuf if !self.endpoint_is_signal => {
                format!("{}/v1/traces", self.endpoint.trim_end_matches('/'))
            }
            _ => self.endpoint.clone(),
        }
    }
}

fn invalid(variable: &'static str, value: &str) -> Error {
    Error::InvalidTraceSetting {
        variable,
        value: value.to_owned(),
    }
}

/// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name.
fn sampler(name: Option<String>, arg: Option<String>) -> Result<SamplerSetting, Error> {
    let ratio = || -> Result<f64, Error> {
        let Some(arg) = arg.as_deref() else {
            return Ok(1.0);
        };
        arg.trim()
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| invalid(OTEL_TRACES_SAMPLER_ARG, arg))
    };
    Ok(match name.as_deref().map(str::trim) {
        None | Some("parentbased_always_on") => SamplerSetting::ParentBasedAlwaysOn,
        Some("always_on") => SamplerSetting::AlwaysOn,
        Some("always_off") => SamplerSetting::AlwaysOff,
        Some("traceidratio") => SamplerSetting::TraceIdRatio(ratio()?),
        Some("parentbased_always_off") => SamplerSetting::ParentBasedAlwaysOff,
        Some("parentbased_traceidratio") => SamplerSetting::ParentBasedTraceIdRatio(ratio()?),
        Some(other) => return Err(invalid(OTEL_TRACES_SAMPLER, other)),
    })
}

// === impl SamplerSetting ===

impl SamplerSetting {
    fn sdk(self) -> Sampler {
        let parent = |root: Sampler| Sampler::ParentBased(Box::new(root));
        match self {
            Self::AlwaysOn => Sampler::AlwaysOn,
            Self::AlwaysOff => Sampler::AlwaysOff,
            Self::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
            Self::ParentBasedAlwaysOn => parent(Sampler::AlwaysOn),
            Self::ParentBasedAlwaysOff => parent(Sampler::AlwaysOff),
            Self::ParentBasedTraceIdRatio(r) => parent(Sampler::TraceIdRatioBased(r)),
        }
    }
}

/// The running exporter. Dropping it sends the spans still buffered
/// (bounded by a timeout) and stops the export thread.
pub struct Exporter {
    provider: SdkTracerProvider,
    /// The runtime tonic's channel lives on (gRPC only): the SDK exports
    /// from a thread of its own, outside the binary's runtimes.
    _runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

// === impl Exporter ===

impl Exporter {
    /// Starts exporting as `settings` say, with the W3C trace-context
    /// propagator installed for [`crate::propagation`].
    pub fn start(settings: &TraceSettings) -> Result<Self, Error> {
        // The HTTP exporter's reqwest is built without a TLS provider of its
        // own (the workspace's reqwest has `rustls-no-provider`, for the OCI
        // client): the project's is ring. Another part of the process may
        // have installed it already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let failed = |source: opentelemetry_otlp::ExporterBuildError| Error::TraceExporter {
            endpoint: settings.endpoint.clone(),
            source,
        };
        let (exporter, runtime) = match settings.transport {
            Transport::Grpc => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("isolane-otlp")
                    .enable_all()
                    .build()
                    .map_err(|source| Error::TraceRuntime { source })?;
                let _entered = runtime.enter();
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(settings.export_url())
                    .build()
                    .map_err(failed)?;
                (exporter, Some(runtime))
            }
            Transport::HttpProtobuf => {
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(settings.export_url())
                    .build()
                    .map_err(failed)?;
                (exporter, None)
            }
        };
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(settings.sampler.sdk())
            .with_resource(resource)
            .build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        Ok(Self {
            provider,
            _runtime: runtime,
        })
    }

    /// The tracer the `tracing` layer writes spans to.
    pub fn tracer(&self) -> opentelemetry_sdk::trace::SdkTracer {
        self.provider.tracer("isolane")
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            eprintln!("isolane: flushing traces at exit failed: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<TraceSettings>, Error> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TraceSettings::from_vars(|name| vars.get(name).cloned(), "isolane-test")
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(settings(&[]).unwrap(), None);
        let on = [(OTEL_EXPORTER_OTLP_ENDPOINT, "http://127.0.0.1:4317")];
        assert!(settings(&on).unwrap().is_some());
        let disabled = [on[0], (OTEL_SDK_DISABLED, "TRUE")];
        assert_eq!(settings(&disabled).unwrap(), None);
        let none = [on[0], (OTEL_TRACES_EXPORTER, "none")];
        assert_eq!(settings(&none).unwrap(), None);
    }

    #[test]
    fn defaults_are_the_specifications() {
        let s = settings(&[(OTEL_EXPORTER_OTLP_ENDPOINT, "http://c:4317")])
            .unwrap()
            .unwrap();
        assert_eq!(s.transport, Transport::Grpc);
        assert_eq!(s.sampler, SamplerSetting::ParentBasedAlwaysOn);
        assert_eq!(s.service_name, "isolane-test");
        assert_eq!(s.export_url(), "http://c:4317");
    }

    #[test]
    fn http_appends_the_traces_path_to_a_base_url_only() {
        let base = [
            (OTEL_EXPORTER_OTLP_ENDPOINT, "http://c:4318/"),
            (OTEL_EXPORTER_OTLP_PROTOCOL, "http/protobuf"),
            (OTEL_SERVICE_NAME, "edge"),
        ];
        let s = settings(&base).unwrap().unwrap();
        assert_eq!(s.export_url(), "http://c:4318/v1/traces");
        assert_eq!(s.service_name, "edge");
        let signal = [
            (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "http://c:4318/custom"),
            (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, "http/protobuf"),
            (OTEL_EXPORTER_OTLP_PROTOCOL, "grpc"),
        ];
        assert_eq!(
            settings(&signal).unwrap().unwrap().export_url(),
            "http://c:4318/custom"
        );
    }

    #[test]
    fn samplers_and_their_ratio() {
        let with = |name: &str, arg: &str| {
            settings(&[
                (OTEL_EXPORTER_OTLP_ENDPOINT, "http://c:4317"),
                (OTEL_TRACES_SAMPLER, name),
                (OTEL_TRACES_SAMPLER_ARG, arg),
            ])
        };
        assert_eq!(
            with("parentbased_traceidratio", "0.25")
                .unwrap()
                .unwrap()
                .sampler,
            SamplerSetting::ParentBasedTraceIdRatio(0.25)
        );
        assert_eq!(
            with("always_off", "").unwrap().unwrap().sampler,
            SamplerSetting::AlwaysOff
        );
        assert!(with("traceidratio", "1.5").is_err());
        assert!(with("jaeger_remote", "").is_err());
    }

    #[test]
    fn a_bad_protocol_names_its_variable() {
        let error = settings(&[
            (OTEL_EXPORTER_OTLP_ENDPOINT, "http://c:4318"),
            (OTEL_EXPORTER_OTLP_PROTOCOL, "http/json"),
        ])
        .unwrap_err();
        assert_eq!(error.kind(), "invalid_trace_setting");
        assert!(
            error.to_string().contains(OTEL_EXPORTER_OTLP_PROTOCOL),
            "{error}"
        );
    }
}
